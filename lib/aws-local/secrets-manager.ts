/**
 * The local Secrets Manager: GetSecretValue over AWS JSON 1.1 for a fixed set of secrets, each with
 * the ARN AWS would give it (`…:secret:<name>-<6 characters>`), found by name, full ARN or the ARN
 * without its suffix as AWS finds them. Nothing is checked here; the IAM simulator's front
 * (iam/enforcing-front.ts) decides who may read what.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from './listen.ts';

export interface LocalSecret {
  readonly name: string;
  /** @default `arn:aws:secretsmanager:<region>:<account>:secret:<name>-<suffix>` */
  readonly arn?: string;
  readonly value: string;
}

export interface LocalSecretsManagerProps {
  readonly secrets: readonly LocalSecret[];
  readonly region: string;
  readonly account: string;
}

export interface LocalSecretsManager {
  readonly endpoint: string;
  /** The ARN of the secret a SecretId names (name, ARN or partial ARN), if there is one. */
  arnOf(secretId: string): string | undefined;
  close(): Promise<void>;
}

const TARGET_PREFIX = 'secretsmanager.';

export async function startLocalSecretsManager(
  props: LocalSecretsManagerProps,
): Promise<LocalSecretsManager> {
  const secrets = props.secrets.map((s) => ({
    ...s,
    arn:
      s.arn ??
      `arn:aws:secretsmanager:${props.region}:${props.account}:secret:${s.name}-${randomUUID().slice(0, 6)}`,
  }));
  const find = (id: string) =>
    secrets.find((s) => s.name === id || s.arn === id || s.arn.slice(0, -'-AbCdEf'.length) === id);
  const server = createServer((req, res) => {
    readBody(req).then(
      (body) => {
        const { status, answer } = getSecretValue(find, body, String(req.headers['x-amz-target'] ?? ''));
        reply(res, status, answer);
      },
      () => reply(res, 400, { __type: 'InvalidRequestException', Message: 'the request could not be read' }),
    );
  });
  const endpoint = await listenOnLoopback(server, 0, {
    refuse: (res, message) => reply(res, 403, { __type: 'AccessDeniedException', Message: message }),
  });
  return {
    endpoint,
    arnOf: (id) => find(id)?.arn,
    close: () => closeServer(server),
  };
}

/** The answer to one request: the secret, or the error Secrets Manager would give. */
function getSecretValue(
  find: (id: string) => (LocalSecret & { arn: string }) | undefined,
  body: Buffer,
  target: string,
): { status: number; answer: unknown } {
  if (target !== `${TARGET_PREFIX}GetSecretValue`)
    return {
      status: 400,
      answer: {
        __type: 'InvalidRequestException',
        Message: `the local Secrets Manager implements only GetSecretValue, not ${target || '(no X-Amz-Target)'}`,
      },
    };
  let secretId: unknown;
  try {
    secretId = (JSON.parse(body.toString('utf8')) as { SecretId?: unknown }).SecretId;
  } catch {
    return { status: 400, answer: { __type: 'SerializationException', Message: 'the body is not JSON' } };
  }
  const secret = typeof secretId === 'string' ? find(secretId) : undefined;
  if (!secret)
    return {
      status: 400,
      answer: {
        __type: 'ResourceNotFoundException',
        Message: "Secrets Manager can't find the specified secret.",
      },
    };
  return {
    status: 200,
    answer: {
      ARN: secret.arn,
      Name: secret.name,
      SecretString: secret.value,
      VersionId: '00000000-0000-0000-0000-000000000001',
      VersionStages: ['AWSCURRENT'],
      CreatedDate: 0,
    },
  };
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

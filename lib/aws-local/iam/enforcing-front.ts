/**
 * The IAM simulator's front: one loopback endpoint before the local AWS JSON services (DynamoDB,
 * EventBridge, Secrets Manager; point `AWS_ENDPOINT_URL` at it). Each request must be signed
 * (Signature Version 4, checked with the SDK's signer) with credentials this front issued, which
 * name the role they were issued for; its action and resources are named (service-requests.ts)
 * and each is put to `authorize`. A refusal is answered as the service answers one
 * (AccessDeniedException, UnrecognizedClientException, …, in its JSON protocol's shape); an
 * allowed request is forwarded unchanged to the service's upstream. Every decision is kept.
 */
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { SigV4Verifier } from '../api-gateway/sigv4.ts';
import { closeServer, listenOnLoopback } from '../listen.ts';
import type { AuthorizationRequest, Decision } from './evaluate.ts';
import {
  type AccountScope,
  FRONTED_SERVICES,
  type FrontedService,
  isFrontedService,
  nameRequest,
} from './service-requests.ts';

/** Temporary credentials of a role, as Lambda hands its function (AWS_ACCESS_KEY_ID, …). */
export interface IssuedCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  /** The role they were issued for. */
  readonly roleArn: string;
}

export interface EnforcingFrontProps extends AccountScope {
  readonly credentials: readonly IssuedCredentials[];
  /** Where each service's allowed requests go. */
  readonly upstreams: Readonly<Partial<Record<FrontedService, string>>>;
  readonly authorize: (request: AuthorizationRequest) => Decision;
}

/** One request's outcome, as the front decided it. */
export interface FrontDecision {
  readonly service: string;
  /** The signer's role; absent when the request was not (validly) signed. */
  readonly roleArn?: string;
  readonly action?: string;
  readonly resource?: string;
  readonly allowed: boolean;
  /** The error type answered, or the statement that allowed it. */
  readonly why: string;
}

export interface EnforcingFront {
  readonly endpoint: string;
  readonly decisions: readonly FrontDecision[];
  close(): Promise<void>;
}

const SCOPE = /Credential=([^/\s,]+)\/\d{8}\/[^/\s]+\/([^/\s]+)\/aws4_request/;

export async function startEnforcingFront(props: EnforcingFrontProps): Promise<EnforcingFront> {
  const decisions: FrontDecision[] = [];
  const issued = new Map(props.credentials.map((c) => [c.accessKeyId, c]));
  const verifiers = new Map<FrontedService, SigV4Verifier>();
  const verifierOf = (service: FrontedService): SigV4Verifier => {
    let verifier = verifiers.get(service);
    if (!verifier) {
      verifier = new SigV4Verifier(
        props.credentials.map((c) => ({
          accessKeyId: c.accessKeyId,
          secretAccessKey: c.secretAccessKey,
          sessionToken: c.sessionToken,
          arn: c.roleArn,
        })),
        { region: props.region, service },
      );
      verifiers.set(service, verifier);
    }
    return verifier;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> => {
    const headers = lowerCaseHeaders(req);
    const target = headers['x-amz-target'] ?? '';
    const scope = SCOPE.exec(headers.authorization ?? '');
    const service = scope?.[2] ?? serviceOfTarget(target);
    const refuse = (
      type: RefusalType,
      message: string,
      decided: Omit<FrontDecision, 'service' | 'allowed' | 'why'> = {},
    ) => {
      decisions.push({ service: service ?? '(unknown)', ...decided, allowed: false, why: type });
      answerRefusal(res, service, type, message);
    };
    if (!service || !isFrontedService(service))
      return refuse(
        'UnknownOperationException',
        `the IAM simulator fronts ${Object.keys(FRONTED_SERVICES).join(', ')}, not ${service ?? 'this request'}`,
      );
    if (!scope)
      return refuse('MissingAuthenticationTokenException', 'Request is missing Authentication Token');
    const credentials = issued.get(scope[1] ?? '');
    // Lambda's credentials are temporary: the key and its session token go together.
    if (!credentials || headers['x-amz-security-token'] !== credentials.sessionToken)
      return refuse('UnrecognizedClientException', 'The security token included in the request is invalid.');
    const verified = await verifierOf(service).verify({
      method: req.method ?? 'POST',
      rawPath: (req.url ?? '/').split('?')[0] ?? '/',
      rawQuery: (req.url ?? '').split('?')[1] ?? '',
      headers,
      body,
    });
    if (!verified.ok) return refuse('InvalidSignatureException', verified.message);
    const roleArn = verified.principal.arn;
    let parsed: Record<string, unknown>;
    try {
      parsed = body.length === 0 ? {} : (JSON.parse(body.toString('utf8')) as Record<string, unknown>);
    } catch {
      return refuse('SerializationException', 'the body is not JSON', { roleArn });
    }
    const named = nameRequest(service, target, parsed, props);
    if (!named.ok) return refuse('AccessDeniedException', named.message, { roleArn });
    for (const { action, resource } of named.requests) {
      const decision = props.authorize({ principalArn: roleArn, action, resource });
      if (decision.effect === 'deny') {
        if (decision.reason === 'unevaluable') console.error(`IAM simulator: ${decision.error}`);
        return refuse('AccessDeniedException', denialMessage(roleArn, action, resource, decision), {
          roleArn,
          action,
          resource,
        });
      }
      decisions.push({ service, roleArn, action, resource, allowed: true, why: decision.by });
    }
    const upstream = props.upstreams[service];
    if (!upstream)
      return refuse('UnknownOperationException', `no local ${service} behind the IAM simulator`, { roleArn });
    forward(req, res, body, upstream);
  };

  const server = createServer((req, res) => {
    readBody(req)
      .then((body) => handle(req, res, body))
      .catch((error: unknown) => {
        if (!res.headersSent) answerRefusal(res, undefined, 'InternalFailure', String(error));
      });
  });
  const endpoint = await listenOnLoopback(server, 0, {
    refuse: (res, message) => answerRefusal(res, undefined, 'AccessDeniedException', message),
  });
  return { endpoint, decisions, close: () => closeServer(server) };
}

type RefusalType =
  | 'AccessDeniedException'
  | 'MissingAuthenticationTokenException'
  | 'UnrecognizedClientException'
  | 'InvalidSignatureException'
  | 'SerializationException'
  | 'UnknownOperationException'
  | 'InternalFailure';

/** IAM's wording of a refusal, as AWS services return it. */
function denialMessage(
  roleArn: string,
  action: string,
  resource: string,
  decision: Extract<Decision, { effect: 'deny' }>,
): string {
  const because =
    decision.reason === 'explicit'
      ? `with an explicit deny in ${decision.by}`
      : decision.reason === 'implicit'
        ? `because no identity-based policy allows the ${action} action`
        : `because ${decision.error}`;
  return `User: ${roleArn} is not authorized to perform: ${action} on resource: ${resource} ${because}`;
}

/** The service's error shape: DynamoDB's JSON 1.0 names types with coral's namespace; JSON 1.1 services do not. */
function answerRefusal(
  res: ServerResponse,
  service: string | undefined,
  type: RefusalType,
  message: string,
): void {
  const dynamo = service === 'dynamodb';
  const body = JSON.stringify(
    dynamo
      ? { __type: `com.amazon.coral.service#${type}`, Message: message }
      : { __type: type, Message: message },
  );
  res.writeHead(type === 'InternalFailure' ? 500 : 400, {
    'content-type': `application/x-amz-json-${dynamo ? '1.0' : '1.1'}`,
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': randomUUID(),
    'x-amzn-errortype': type,
  });
  res.end(body);
}

function serviceOfTarget(target: string): FrontedService | undefined {
  return (Object.keys(FRONTED_SERVICES) as FrontedService[]).find((s) =>
    target.startsWith(FRONTED_SERVICES[s].targetPrefix),
  );
}

/** Sends the request on as it came (the upstream's own Host), and its answer back. */
function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, upstream: string): void {
  const url = new URL(req.url ?? '/', upstream);
  const out = httpRequest(
    url,
    {
      method: req.method,
      headers: { ...req.headers, host: url.host, 'content-length': String(body.length) },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on('error', (error) => {
    if (!res.headersSent)
      answerRefusal(res, undefined, 'InternalFailure', `upstream ${upstream}: ${error.message}`);
  });
  out.end(body);
}

function lowerCaseHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  return headers;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

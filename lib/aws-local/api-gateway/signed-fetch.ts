/**
 * fetch with a Signature Version 4 signature for API Gateway (`execute-api`), signed with the AWS
 * SDK's own signer: what any SigV4 client sends to the IAM-authorized routes, on AWS or to
 * `plangate serve`.
 */
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from './sigv4.ts';

export interface SigningCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface SignedFetchInit {
  readonly method?: string;
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** @default now */
  readonly signingDate?: Date;
}

export async function signedFetch(
  url: string | URL,
  credentials: SigningCredentials,
  init: SignedFetchInit = {},
): Promise<Response> {
  const target = new URL(url);
  const method = init.method ?? 'GET';
  const signer = new SignatureV4({
    credentials,
    region: init.region ?? 'us-east-1',
    service: 'execute-api',
    sha256: NodeSha256,
  });
  const signed = await signer.sign(
    {
      method,
      protocol: target.protocol,
      hostname: target.hostname,
      ...(target.port ? { port: Number(target.port) } : {}),
      path: target.pathname,
      query: Object.fromEntries(target.searchParams),
      headers: { host: target.host, ...(init.headers ?? {}) },
      ...(init.body !== undefined ? { body: init.body } : {}),
    },
    init.signingDate ? { signingDate: init.signingDate } : {},
  );
  return fetch(target, {
    method,
    headers: signed.headers as Record<string, string>,
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
}

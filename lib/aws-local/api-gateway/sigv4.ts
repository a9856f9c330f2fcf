/**
 * API Gateway's AWS_IAM authorizer, locally: checks a request's Signature Version 4 with the
 * AWS SDK's own signer (@smithy/signature-v4) against the secret of the access key it names, and
 * names the signer as API Gateway does (`requestContext.authorizer.iam`). The IAM simulator's
 * front (../iam/enforcing-front.ts) checks the signatures of other services' requests with it.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

/** A local IAM principal: the keys it signs with and the ARN the handlers see. */
export interface LocalPrincipal {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** e.g. `arn:aws:iam::123456789012:user/alice` */
  readonly arn: string;
  /** Temporary credentials' token (a role's session): the request must carry it, signed. */
  readonly sessionToken?: string;
}

export interface SignedRequest {
  readonly method: string;
  /** The path exactly as sent (still percent-encoded). */
  readonly rawPath: string;
  readonly rawQuery: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export type SigV4Result =
  | { readonly ok: true; readonly principal: LocalPrincipal }
  | { readonly ok: false; readonly message: string };

/** How far a request's x-amz-date may be from now, as API Gateway allows. */
const MAX_SKEW_MS = 5 * 60 * 1000;
const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/\s,]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/;

/** Node's SHA-256 and HMAC-SHA256 in the shape the signer takes. */
export class NodeSha256 {
  private hash;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    throw new Error('not used by the signer');
  }
}

type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytes = (data: SourceData): string | Uint8Array =>
  typeof data === 'string'
    ? data
    : ArrayBuffer.isView(data)
      ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : new Uint8Array(data);

export class SigV4Verifier {
  private readonly principals: ReadonlyMap<string, LocalPrincipal>;

  constructor(
    principals: readonly LocalPrincipal[],
    private readonly options: {
      readonly region: string;
      /** The service the signature must be scoped to. @default 'execute-api' */
      readonly service?: string;
      readonly clock?: () => Date;
    },
  ) {
    this.principals = new Map(principals.map((p) => [p.accessKeyId, p]));
  }

  async verify(request: SignedRequest): Promise<SigV4Result> {
    const header = request.headers.authorization;
    if (!header) return { ok: false, message: 'Missing Authentication Token' };
    const parts = AUTHORIZATION.exec(header);
    if (!parts) return { ok: false, message: 'Authorization header is not a Signature Version 4 signature' };
    const [, accessKeyId, scopeDate, region, service, signedHeaderList, signature] =
      parts as unknown as string[];
    const principal = this.principals.get(accessKeyId as string);
    if (!principal) return { ok: false, message: 'The security token included in the request is invalid' };
    const expectedService = this.options.service ?? 'execute-api';
    if (region !== this.options.region || service !== expectedService)
      return {
        ok: false,
        message: `Credential should be scoped to ${this.options.region}/${expectedService}`,
      };
    const amzDate = request.headers['x-amz-date'] ?? '';
    const signingDate = parseAmzDate(amzDate);
    if (!signingDate || amzDate.slice(0, 8) !== scopeDate)
      return { ok: false, message: 'x-amz-date is missing or does not match the credential scope' };
    const now = (this.options.clock ?? (() => new Date()))();
    if (Math.abs(now.getTime() - signingDate.getTime()) > MAX_SKEW_MS)
      return { ok: false, message: 'Signature expired: the request time is more than 5 minutes from now' };
    const signedHeaders = (signedHeaderList as string).split(';');
    if (!signedHeaders.includes('host'))
      return { ok: false, message: 'the signature must cover the host header' };
    if (
      principal.sessionToken !== undefined &&
      (request.headers['x-amz-security-token'] !== principal.sessionToken ||
        !signedHeaders.includes('x-amz-security-token'))
    )
      return { ok: false, message: 'The security token included in the request is invalid' };
    const headers: Record<string, string> = {};
    for (const name of signedHeaders) {
      const value = request.headers[name];
      if (value === undefined) return { ok: false, message: `signed header ${name} is missing` };
      headers[name] = value;
    }
    // The signer trusts a stated payload hash; the body that arrived must be the one it states.
    const statedHash = request.headers['x-amz-content-sha256'];
    if (statedHash !== undefined && statedHash !== createHash('sha256').update(request.body).digest('hex'))
      return {
        ok: false,
        message: 'The provided x-amz-content-sha256 header does not match what was computed.',
      };
    const [hostname, port] = (headers.host as string).split(':');
    const signer = new SignatureV4({
      credentials: { accessKeyId: principal.accessKeyId, secretAccessKey: principal.secretAccessKey },
      region: region as string,
      service: service as string,
      sha256: NodeSha256,
      // x-amz-content-sha256 is optional for execute-api (curl's --aws-sigv4 and botocore's
      // SigV4Auth leave it out): the signer must not add, and so sign, a header the client never
      // sent. The payload hash is still the body's, so a changed body fails the signature.
      applyChecksum: false,
    });
    const expected = await signer.sign(
      {
        method: request.method,
        protocol: 'http:',
        hostname: hostname as string,
        ...(port ? { port: Number(port) } : {}),
        path: request.rawPath,
        query: parseQuery(request.rawQuery),
        headers,
        body: request.body,
      },
      { signingDate, signableHeaders: new Set(signedHeaders) },
    );
    const computed = /Signature=([0-9a-f]{64})/.exec(String(expected.headers.authorization))?.[1] ?? '';
    const matches =
      computed.length === (signature as string).length &&
      timingSafeEqual(Buffer.from(computed), Buffer.from(signature as string));
    if (!matches)
      return {
        ok: false,
        message:
          'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
      };
    return { ok: true, principal };
  }
}

/** `20261125T021500Z` → the Date, or undefined. */
function parseAmzDate(text: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  return new Date(Date.UTC(y as number, (mo as number) - 1, d, h, mi, s));
}

/** The raw query as the signer takes it: decoded names and values, repeated names as arrays. */
function parseQuery(raw: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const existing = query[name];
    query[name] =
      existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return query;
}

/**
 * The HTTP edge of the API Lambdas: API Gateway HTTP API (payload v2) events in, structured
 * results out, and who is asking (JWT claims on AWS; a header in local mode).
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/** An HTTP API v2 event, with the JWT authorizer's claims when one is configured. */
export type HttpEvent = APIGatewayProxyEventV2 & {
  readonly requestContext: APIGatewayProxyEventV2['requestContext'] & {
    readonly authorizer?: {
      readonly jwt?: { readonly claims?: Record<string, string | number | boolean> };
      /** IAM (SigV4) authorization: who signed the request. */
      readonly iam?: { readonly userArn?: string; readonly callerId?: string };
    };
  };
};
export type HttpResult = APIGatewayProxyStructuredResultV2;

/**
 * Where the caller's identity comes from. `jwt`: the API's JWT authorizer verified the token and
 * its claims name the caller: the email when the issuer says it is verified (`email_verified`),
 * else only the subject (`sub:<sub>`, which no approvers list names by accident); a username or an
 * unverified email is a claim anyone's account may make, never a name. `iam`: the route is IAM-authorized
 * (SigV4) and API Gateway names the signer (`userArn`, else `callerId`). `header`: local mode only,
 * and only from loopback (the one machine's own user is trusted to say who they are); the local
 * servers refuse a web page's requests first, by Host and Origin (lib/loopback).
 */
export type IdentitySource =
  | { readonly mode: 'jwt' }
  | { readonly mode: 'iam' }
  | { readonly mode: 'header'; readonly header: string };

/** The default header of local mode. */
export const LOCAL_IDENTITY_HEADER = 'x-plangate-user';

/**
 * Largest request body a handler takes (a plan document; the approval form is far less). API
 * Gateway hands the request to Lambda as one event, which Lambda caps at 6 MB (6,291,456 bytes)
 * and in which the body may be base64-encoded (4/3 its size) next to the headers: a body of 4 MiB
 * always fits, so every body a handler refuses is refused with this limit named.
 */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** API Gateway HTTP API's own payload quota (10 MB): a larger request never reaches a handler. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

export function identityOf(event: HttpEvent, source: IdentitySource): string | undefined {
  if (source.mode === 'header') {
    // A header is only a claim: trusted from the one machine's own user, never from the network.
    if (!isLoopback(event.requestContext.http.sourceIp)) return undefined;
    const value = headerOf(event, source.header)?.trim();
    return value ? value : undefined;
  }
  if (source.mode === 'iam') {
    const iam = event.requestContext.authorizer?.iam;
    return iam?.userArn || iam?.callerId || undefined;
  }
  const claims = event.requestContext.authorizer?.jwt?.claims ?? {};
  const { email, sub } = claims;
  // API Gateway passes a boolean claim on as text.
  const verified = claims.email_verified === true || claims.email_verified === 'true';
  if (typeof email === 'string' && email !== '' && verified) return email;
  return typeof sub === 'string' && sub !== '' ? `sub:${sub}` : undefined;
}

/**
 * The person behind a verified token, whatever email it names: its issuer and subject
 * (`<iss>#<sub>`). Two answers with one subject are one person (one vote toward a quorum), however
 * the account's email changed in between. Undefined where the caller is not a token's subject.
 */
export function subjectOf(event: HttpEvent, source: IdentitySource): string | undefined {
  if (source.mode !== 'jwt') return undefined;
  const { iss, sub } = event.requestContext.authorizer?.jwt?.claims ?? {};
  return typeof iss === 'string' && typeof sub === 'string' && sub !== '' ? `${iss}#${sub}` : undefined;
}

/** The JWT claim that lists the caller's groups (Cognito user pool groups). */
export const GROUPS_CLAIM = 'cognito:groups';

/**
 * The groups the request itself proves its caller is in: the verified token's `cognito:groups`
 * claim, read as a list. Nothing from a header, an IAM signature or a link: those callers' groups
 * come from the policy's groups file.
 *
 * API Gateway hands an array claim on flattened, `["former sre", "ops,sre"]` as
 * `"[former sre ops,sre]"`, which no split can read back. So the list is read from the token
 * itself, in the Authorization header that the JWT authorizer verified, once its claims are found
 * to be exactly the authorizer's (flattened the same way). A string claim is one group. When the
 * token cannot be read, a claim API Gateway flattened proves no group.
 */
export function groupsOf(event: HttpEvent, source: IdentitySource): string[] {
  if (source.mode !== 'jwt') return [];
  const claims = event.requestContext.authorizer?.jwt?.claims ?? {};
  if (!Object.hasOwn(claims, GROUPS_CLAIM)) return [];
  const token = verifiedTokenClaims(event, claims);
  const value = token ? token[GROUPS_CLAIM] : claims[GROUPS_CLAIM];
  if (typeof value === 'string')
    return value === '' || (!token && FLATTENED_ARRAY.test(value)) ? [] : [value];
  if (Array.isArray(value) && value.every((group): group is string => typeof group === 'string'))
    return [...new Set(value.filter((group) => group !== ''))];
  return [];
}

/** How API Gateway passes an array claim: `[a b]`. */
const FLATTENED_ARRAY = /^\[[\s\S]*\]$/;

/** A claim as API Gateway passes it on: an array of strings flattened to `[a b]`, others as text. */
function passedOn(value: unknown): string | undefined {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return `[${value.join(' ')}]`;
  return undefined;
}

/**
 * The claims of the bearer token in the Authorization header, when they are the ones the JWT
 * authorizer verified (every claim it passed on is the token's, flattened as it flattens them, and
 * the token names its issuer and subject); else undefined. The signature was checked by the
 * authorizer, which reads this very header (its identity source).
 */
function verifiedTokenClaims(
  event: HttpEvent,
  verified: Readonly<Record<string, string | number | boolean>>,
): Record<string, unknown> | undefined {
  const token = /^Bearer [A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/.exec(
    headerOf(event, 'authorization') ?? '',
  )?.[1];
  if (!token) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) return undefined;
  const read = claims as Record<string, unknown>;
  const names = Object.keys(verified);
  const matches =
    ['iss', 'sub'].every((name) => names.includes(name)) &&
    names.every((name) => Object.hasOwn(read, name) && passedOn(read[name]) === String(verified[name]));
  return matches ? read : undefined;
}

/** Whether the caller is this machine (127.0.0.0/8, ::1, or IPv4-mapped loopback). */
export function isLoopback(ip: string | undefined): boolean {
  if (!ip) return false;
  const v4 = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

export function headerOf(event: HttpEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {}))
    if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/** The request body as text (API Gateway base64-encodes binary and form bodies). */
export function bodyText(event: HttpEvent): string {
  if (!event.body) return '';
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

export function json(statusCode: number, body: unknown): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
    body: JSON.stringify(body),
  };
}

export function html(statusCode: number, page: string): HttpResult {
  return {
    statusCode,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // Nothing runs on the page and forms post only back to it.
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
      'x-content-type-options': 'nosniff',
      // The page's address (a link) goes to no other site, and its own form posts carry its
      // origin: under `no-referrer` a browser sends `Origin: null`, which local endpoints refuse.
      'referrer-policy': 'same-origin',
    },
    body: page,
  };
}

/** The path's segments after decoding, e.g. `/approvals/a%2Fb` → `['approvals', 'a/b']`; undefined if malformed. */
export function pathSegments(event: HttpEvent): string[] | undefined {
  try {
    return (event.rawPath ?? '/')
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

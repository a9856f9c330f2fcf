/**
 * API Gateway's JWT authorizer, locally: verifies a bearer token's signature against the issuer's
 * JSON Web Key Set (RS256 or ES256, as Cognito and most OpenID Connect issuers sign), its issuer,
 * its audience (`aud`, or `client_id` for Cognito access tokens), `exp` and `nbf`, and hands the
 * claims on as `requestContext.authorizer.jwt.claims`.
 */
import { createPublicKey, type JsonWebKey, verify } from 'node:crypto';

export interface JwtAuthorizerConfig {
  readonly issuer: string;
  /** Accepted audiences (app client ids). */
  readonly audience: readonly string[];
  readonly jwks: { readonly keys: readonly (JsonWebKey & { kid?: string })[] };
  readonly clock?: () => Date;
}

export type JwtResult =
  | { readonly ok: true; readonly claims: Record<string, string | number | boolean> }
  | { readonly ok: false; readonly message: string };

const ALGORITHMS: Record<string, { readonly hash: string; readonly dsaEncoding?: 'ieee-p1363' }> = {
  RS256: { hash: 'sha256' },
  ES256: { hash: 'sha256', dsaEncoding: 'ieee-p1363' },
};
const MAX_TOKEN_BYTES = 16 * 1024;

export class JwtVerifier {
  constructor(private readonly config: JwtAuthorizerConfig) {}

  verify(authorization: string | undefined): JwtResult {
    const token = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(authorization ?? '')?.[1];
    if (!token || token.length > MAX_TOKEN_BYTES)
      return { ok: false, message: 'Unauthorized: no bearer JWT' };
    const [headerPart, payloadPart, signaturePart] = token.split('.') as [string, string, string];
    const header = decodeJson(headerPart);
    const claims = decodeJson(payloadPart);
    if (!header || !claims) return { ok: false, message: 'Unauthorized: the token is not a JWT' };
    const algorithm = typeof header.alg === 'string' ? ALGORITHMS[header.alg] : undefined;
    if (!algorithm) return { ok: false, message: 'Unauthorized: unsupported signing algorithm' };
    const jwk = this.config.jwks.keys.find((key) => key.kid === header.kid);
    if (!jwk) return { ok: false, message: 'Unauthorized: the token names no key of the issuer' };
    let valid: boolean;
    try {
      valid = verify(
        algorithm.hash,
        Buffer.from(`${headerPart}.${payloadPart}`),
        {
          key: createPublicKey({ key: jwk, format: 'jwk' }),
          ...(algorithm.dsaEncoding ? { dsaEncoding: algorithm.dsaEncoding } : {}),
        },
        Buffer.from(signaturePart, 'base64url'),
      );
    } catch {
      valid = false;
    }
    if (!valid) return { ok: false, message: 'Unauthorized: bad signature' };
    if (claims.iss !== this.config.issuer) return { ok: false, message: 'Unauthorized: wrong issuer' };
    const audiences = [claims.aud, claims.client_id].flat().filter((a): a is string => typeof a === 'string');
    if (!audiences.some((a) => this.config.audience.includes(a)))
      return { ok: false, message: 'Unauthorized: wrong audience' };
    const now = Math.floor((this.config.clock ?? (() => new Date()))().getTime() / 1000);
    if (typeof claims.exp !== 'number' || claims.exp <= now)
      return { ok: false, message: 'Unauthorized: expired' };
    if (typeof claims.nbf === 'number' && claims.nbf > now)
      return { ok: false, message: 'Unauthorized: not yet valid' };
    // fromEntries defines own properties, so a `__proto__` claim stays a plain claim. An array of
    // strings (e.g. `cognito:groups`) is passed on as API Gateway passes it: "[a b]".
    const passed = Object.entries(claims).flatMap((entry): [string, string | number | boolean][] => {
      const [name, value] = entry;
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
        return [[name, value]];
      if (Array.isArray(value) && value.every((v) => typeof v === 'string'))
        return [[name, `[${value.join(' ')}]`]];
      return [];
    });
    return { ok: true, claims: Object.fromEntries(passed) };
  }
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

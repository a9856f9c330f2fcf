/**
 * A local token issuer for `plangate serve`'s JWT authorizer: an RS256 key pair, its JSON Web Key
 * Set, and tokens with the claims an OpenID Connect issuer would put in them. For trying the
 * approver path on one machine and for tests; on AWS the issuer is Cognito (or any OIDC provider).
 */
import { generateKeyPairSync, type JsonWebKey, type KeyObject, randomUUID, sign } from 'node:crypto';

export interface LocalIssuerOptions {
  /** @default 'https://plangate.local/issuer' */
  readonly issuer?: string;
  /** @default 'plangate-approvers' */
  readonly audience?: string;
}

export class LocalIssuer {
  readonly issuer: string;
  readonly audience: string;
  private readonly privateKey: KeyObject;
  private readonly kid = randomUUID();
  /** One subject per account: the first token for an email fixes it. */
  private readonly subjects = new Map<string, string>();
  readonly jwks: { readonly keys: (JsonWebKey & { kid: string; alg: string; use: string })[] };

  constructor(options: LocalIssuerOptions = {}) {
    this.issuer = options.issuer ?? 'https://plangate.local/issuer';
    this.audience = options.audience ?? 'plangate-approvers';
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.privateKey = privateKey;
    this.jwks = {
      keys: [{ ...publicKey.export({ format: 'jwk' }), kid: this.kid, alg: 'RS256', use: 'sig' }],
    };
  }

  /**
   * A signed token for `email` (verified, as an issuer that checked the mailbox says), valid for
   * `ttlSeconds`, whose subject is one per email, as an account's is; `claims` override or add any
   * claim (`sub` for an account whose email changed, `email_verified: false` for one it did not check).
   */
  token(email: string, claims: Record<string, unknown> = {}, ttlSeconds = 600): string {
    const now = Math.floor(Date.now() / 1000);
    return signJwt(this.privateKey, this.kid, {
      iss: this.issuer,
      aud: this.audience,
      sub: this.subjectOf(email),
      email,
      email_verified: true,
      iat: now,
      exp: now + ttlSeconds,
      ...claims,
    });
  }

  private subjectOf(email: string): string {
    let subject = this.subjects.get(email);
    if (!subject) {
      subject = randomUUID();
      this.subjects.set(email, subject);
    }
    return subject;
  }
}

/** An RS256 JWT over `claims`, signed with `key` and naming `kid`. */
export function signJwt(key: KeyObject, kid: string, claims: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${part({ alg: 'RS256', typ: 'JWT', kid })}.${part(claims)}`;
  return `${body}.${sign('sha256', Buffer.from(body), key).toString('base64url')}`;
}

/**
 * Redaction: every string the runtime stores, publishes or returns passes through here,
 * so resolved secret values and well-known credential shapes never leave the process.
 */

/** What a redacted value is replaced with. */
export const REDACTED = '***';

/** Credential shapes that are redacted even when nobody declared them as secrets. */
const CREDENTIAL_PATTERNS: readonly { readonly pattern: RegExp; readonly replace: string }[] = [
  // AWS access key ids (long-term AKIA, temporary ASIA, and the other documented prefixes).
  { pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g, replace: REDACTED },
  // key=value / "key": "value" pairs whose key names a credential; the key is kept.
  {
    pattern:
      /((?:aws_secret_access_key|aws_session_token|secret_?key|secret|password|passwd|pwd|api_?key|access_?token|refresh_?token|client_secret|task_?token)["']?\s*[:=]\s*["']?)([^\s"',;&}]+)/gi,
    replace: `$1${REDACTED}`,
  },
  // HTTP Authorization schemes.
  { pattern: /(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/g, replace: `$1 ${REDACTED}` },
  // Passwords in URLs: scheme://user:password@host
  { pattern: /([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, replace: `$1${REDACTED}@` },
  // Step Functions task tokens: long opaque base64 runs starting with "AQ" (glued to other text too).
  { pattern: /AQ[A-Za-z0-9+/=_-]{100,}/g, replace: REDACTED },
  // GitHub, Slack and private-key material.
  { pattern: /\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, replace: REDACTED },
  { pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, replace: REDACTED },
  {
    pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
    replace: REDACTED,
  },
];

/** Object keys whose values are always redacted, whatever they look like. */
const SENSITIVE_KEY =
  /^(?:authorization|password|passwd|secret|secret_?value|api_?key|task_?token|token|x-api-key|cookie|set-cookie)$/i;

/** Values shorter than this are not treated as secrets: redacting "a" or "1" would shred every string. */
const MIN_SECRET_LENGTH = 4;

/** Replaces declared secret values and credential shapes in strings and in nested JSON values. */
export class Redactor {
  private readonly secrets: string[];

  constructor(secretValues: Iterable<string> = []) {
    this.secrets = [];
    for (const value of secretValues) this.add(value);
  }

  /** Adds a resolved secret value; longer values are replaced first so a secret containing another is not half-replaced. */
  add(value: string): void {
    if (value.length < MIN_SECRET_LENGTH) return;
    // A secret filled into a URL is there percent-encoded (url-binding.ts): hide that spelling too.
    for (const spelling of new Set([value, encodeURIComponent(value)]))
      if (!this.secrets.includes(spelling)) this.secrets.push(spelling);
    this.secrets.sort((a, b) => b.length - a.length);
  }

  /** A redactor that knows this one's secrets plus `more`. */
  with(more: Iterable<string>): Redactor {
    const next = new Redactor(this.secrets);
    for (const value of more) next.add(value);
    return next;
  }

  text(input: string): string {
    let out = input;
    for (const secret of this.secrets) out = out.split(secret).join(REDACTED);
    for (const { pattern, replace } of CREDENTIAL_PATTERNS) out = out.replace(pattern, replace);
    return out;
  }

  /**
   * Replaces only the declared secret values in every string of a JSON-like value, no credential
   * shapes: for a value that stays in the process (the platform's policy judging a call), where
   * the shapes' patterns would cost more than they protect (they scan long strings slowly).
   */
  secretValues<T>(input: T): T {
    const walk = (value: unknown): unknown => {
      if (typeof value === 'string')
        return this.secrets.reduce((out, secret) => out.split(secret).join(REDACTED), value);
      if (Array.isArray(value)) return value.map(walk);
      if (value !== null && typeof value === 'object')
        return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item)]));
      return value;
    };
    return walk(input) as T;
  }

  /** Redacts every string in a JSON-like value (keys naming credentials lose their value entirely). */
  value<T>(input: T): T {
    return this.walk(input) as T;
  }

  private walk(input: unknown): unknown {
    if (typeof input === 'string') return this.text(input);
    if (Array.isArray(input)) return input.map((item) => this.walk(item));
    if (input !== null && typeof input === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(input)) {
        out[this.text(key)] =
          SENSITIVE_KEY.test(key) && item !== null && item !== undefined && item !== ''
            ? REDACTED
            : this.walk(item);
      }
      return out;
    }
    return input;
  }
}

/**
 * Approval page sessions: opening a signed link (`GET /approvals/<link id>`) redeems it into a
 * session and redirects to `/approvals/<handle>`, so the link's signature never stays in the
 * address bar, the browser's history or a Referer. The handle is random and worth nothing alone;
 * the session is a cookie only this API can read (AES-256-GCM under a key derived from the
 * approval signing key, bound to its handle), HttpOnly, SameSite=Strict, scoped to the handle's
 * path and short-lived. It holds the link id and the page's form token: a post to the handle
 * must carry both the cookie and the token (the form's hidden field), so a cross-site form can
 * neither read nor forge either. Each opening makes its own handle, so two tabs (two recipients)
 * in one browser keep two sessions.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { HttpEvent } from './http.ts';

/** The cookie's name (one per handle: its Path is the handle's page). */
export const SESSION_COOKIE = 'plangate_page';
/** How long a page stays answerable after its link was opened (never past the link's own expiry). */
export const SESSION_SECONDS = 30 * 60;
/** `/approvals/<handle>`: 22 base64url characters, never a link id (those hold dots). */
export const HANDLE = /^[A-Za-z0-9_-]{22}$/;

const SessionSchema = z.object({
  /** The signed link id the session was opened with (recipient-bound or shared). */
  link: z.string().min(1),
  /** The page's form token. */
  form: z.string().min(1),
  /** Expiry, epoch seconds. */
  exp: z.number().int(),
});
export type PageSession = z.infer<typeof SessionSchema>;

/** What a request's cookies come in: API Gateway's event, or a plain server's headers. */
export type CookieCarrier = Pick<HttpEvent, 'headers' | 'cookies'>;

/** Why a handle's page cannot be shown or answered; the message says what to do. */
export type SessionRefusal = { readonly refused: 'none' | 'expired' | 'forged'; readonly message: string };

export class PageSessions {
  private readonly key: Buffer;

  constructor(
    signingKey: string | Buffer,
    private readonly clock: () => Date = () => new Date(),
  ) {
    // Its own key: a cookie can never be passed off as a link MAC, nor the reverse.
    this.key = Buffer.from(
      hkdfSync('sha256', Buffer.from(signingKey), Buffer.alloc(0), 'plangate approval page session v1', 32),
    );
  }

  /**
   * A new session for a verified link, valid at most until `untilEpoch` (the link's own expiry
   * while its gate waits): its handle, and the `Set-Cookie` value that carries it to the handle's page.
   */
  open(
    linkId: string,
    untilEpoch: number,
    { secure }: { secure: boolean },
  ): { handle: string; cookie: string } {
    const handle = randomBytes(16).toString('base64url');
    const session = { link: linkId, form: randomBytes(24).toString('base64url') };
    return { handle, cookie: this.cookie(handle, session, untilEpoch, secure) };
  }

  /**
   * The `Set-Cookie` value that keeps `session` open for another {@link SESSION_SECONDS} (at most
   * until `untilEpoch`): after an answer, so its page can follow the run's progress.
   */
  renew(handle: string, session: PageSession, untilEpoch: number, { secure }: { secure: boolean }): string {
    return this.cookie(handle, { link: session.link, form: session.form }, untilEpoch, secure);
  }

  private cookie(
    handle: string,
    fields: Omit<PageSession, 'exp'>,
    untilEpoch: number,
    secure: boolean,
  ): string {
    const now = Math.floor(this.clock().getTime() / 1000);
    const exp = Math.min(now + SESSION_SECONDS, untilEpoch);
    const session: PageSession = { ...fields, exp };
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(handle));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(session), 'utf8'), cipher.final()]);
    const value = Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
    return [
      `${SESSION_COOKIE}=${value}`,
      `Path=/approvals/${handle}`,
      `Max-Age=${Math.max(0, exp - now)}`,
      'HttpOnly',
      'SameSite=Strict',
      ...(secure ? ['Secure'] : []),
    ].join('; ');
  }

  /** The session of `handle` in the request's cookies, or why there is none to use. */
  read(event: CookieCarrier, handle: string): PageSession | SessionRefusal {
    const values = cookiesOf(event)
      .filter(([name]) => name === SESSION_COOKIE)
      .map(([, value]) => value);
    if (values.length === 0)
      return {
        refused: 'none',
        message:
          'this page opens only from its approval link, in the same browser: open the link from your email or Slack again',
      };
    // Only the cookie of this handle's path opens it (AAD): any other is skipped.
    for (const value of values) {
      const session = this.unseal(value, handle);
      if (!session) continue;
      if (Math.floor(this.clock().getTime() / 1000) >= session.exp)
        return {
          refused: 'expired',
          message: 'this page has expired: open the approval link from your email or Slack again',
        };
      return session;
    }
    return { refused: 'forged', message: 'this page session is not valid: open the approval link again' };
  }

  private unseal(value: string, handle: string): PageSession | undefined {
    const raw = Buffer.from(value, 'base64url');
    if (raw.length < 12 + 16 + 2 || raw.length > 4096) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(handle));
      decipher.setAuthTag(raw.subarray(12, 28));
      const plain = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      const parsed = SessionSchema.safeParse(JSON.parse(plain));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Whether the form token a post carries is the session's own (constant time). */
export function formTokenMatches(session: PageSession, given: string | undefined): boolean {
  if (!given) return false;
  const a = Buffer.from(session.form);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The request's cookies as name/value pairs: API Gateway (payload v2) hands them over in
 * `cookies`; a `Cookie` header is read too (other fronts keep it).
 */
function cookiesOf(event: CookieCarrier): [string, string][] {
  const header = Object.entries(event.headers ?? {}).find(([name]) => name.toLowerCase() === 'cookie')?.[1];
  const parts = [...(event.cookies ?? []), ...(header ? header.split(';') : [])];
  return parts.flatMap((part) => {
    const eq = part.indexOf('=');
    return eq > 0 ? [[part.slice(0, eq).trim(), part.slice(eq + 1).trim()] as [string, string]] : [];
  });
}

/**
 * The API's base URL as this request reached it: https (http over loopback, a local stack), its
 * host, and its stage unless that is `$default` (links to the API's other routes, e.g. a gate's page).
 */
export function requestBaseUrl(event: HttpEvent): string {
  const stage = event.requestContext.stage;
  const path = stage && stage !== '$default' ? `/${encodeURIComponent(stage)}` : '';
  return `${isLocalHttp(event) ? 'http' : 'https'}://${event.requestContext.domainName}${path}`;
}

/** Whether the API is reached over loopback HTTP (a local stack), where a Secure cookie would not be kept. */
export function isLocalHttp(event: HttpEvent): boolean {
  const host = (event.requestContext.domainName ?? '').replace(/:\d+$/, '');
  const proto = Object.entries(event.headers ?? {}).find(
    ([name]) => name.toLowerCase() === 'x-forwarded-proto',
  )?.[1];
  return proto !== 'https' && /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(host);
}

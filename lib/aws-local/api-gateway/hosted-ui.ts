/**
 * A local stand-in for the approvers' Cognito hosted UI, so the approval page's sign-in runs on
 * one machine exactly as on AWS: the same endpoints (`GET /oauth2/authorize`, the sign-in form
 * posted to `/login`, `POST /oauth2/token`), the authorization-code flow with PKCE (S256 only), an
 * exact callback URL, single-use codes that expire, and ID tokens signed by a {@link LocalIssuer}
 * whose JWKS the local API Gateway's JWT authorizer trusts. Users sign in with a name and password
 * from a fixed list; there is no single sign-on session, so every sign-in asks again.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { escapeHtml } from '../../runtime/shared/html.ts';
import { closeServer, listenOnLoopback } from '../listen.ts';
import { readForm } from '../read-form.ts';
import type { LocalIssuer } from './local-issuer.ts';

export interface LocalHostedUiProps {
  /** Signs the ID tokens (its issuer and JWKS configure the JWT authorizer). */
  readonly issuer: LocalIssuer;
  /** The public app client's id: the ID tokens' audience. */
  readonly clientId: string;
  /** Who may sign in: user name (an email, as Cognito's e-mail sign-in) → password. */
  readonly users: Readonly<Record<string, string>>;
  /**
   * The user pool groups of each user, put in their ID token's `cognito:groups` claim as Cognito
   * does (the platform's policy reads them). @default - nobody is in a group
   */
  readonly groups?: Readonly<Record<string, readonly string[]>>;
  /** @default 0 (any free port) */
  readonly port?: number;
}

/** How long a code may wait to be exchanged (Cognito: 5 minutes). */
const CODE_SECONDS = 300;
const ID_TOKEN_SECONDS = 3600;

interface PendingCode {
  readonly redirectUri: string;
  readonly challenge: string;
  readonly user: string;
  readonly expiresAt: number;
}

export class LocalHostedUi {
  private readonly codes = new Map<string, PendingCode>();
  /** The exact callback URLs of the app client (Cognito matches them exactly, no patterns). */
  private readonly callbacks = new Set<string>();

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    /** The hosted UI's base URL, e.g. `http://127.0.0.1:43210`: the page's sign-in domain. */
    readonly url: string,
    private readonly props: LocalHostedUiProps,
  ) {}

  get clientId(): string {
    return this.props.clientId;
  }

  static async start(props: LocalHostedUiProps): Promise<LocalHostedUi> {
    let ui: LocalHostedUi | undefined;
    const server = createServer((req, res) => {
      ui?.handle(req, res).catch(() => send(res, 500, 'text/plain', 'hosted UI error'));
    });
    const url = await listenOnLoopback(server, props.port, {
      // The approval page, on the API's origin, exchanges its code here.
      allowOrigin: (origin) => ui?.allowedOrigin(origin) !== undefined,
    });
    ui = new LocalHostedUi(server, url, props);
    return ui;
  }

  /** Registers an exact callback URL (the approvals API's `/approvals/signed-in`, once it listens). */
  allowCallback(url: string): void {
    this.callbacks.add(url);
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const route = `${req.method} ${url.pathname}`;
    if (route === 'GET /oauth2/authorize') return this.authorize(url.searchParams, res);
    if (route === 'POST /login') {
      const form = await readForm(req);
      if (!form) return send(res, 413, 'text/plain', 'too large');
      return this.login(form, res);
    }
    if (route === 'POST /oauth2/token') {
      const form = await readForm(req);
      return this.token(form, req.headers.origin, res);
    }
    if (route === 'OPTIONS /oauth2/token') return this.preflight(req.headers.origin, res);
    return send(res, 404, 'text/plain', 'not found');
  }

  /** The authorization request, checked as Cognito does; a bad client or callback is never redirected to. */
  private authorize(params: URLSearchParams, res: ServerResponse) {
    const problem = this.authorizeProblem(params);
    if (problem) return this.html(res, 400, page('Sign-in error', `<p>${escapeHtml(problem)}</p>`));
    return this.html(res, 200, loginPage(params));
  }

  private authorizeProblem(params: URLSearchParams): string | undefined {
    if (params.get('client_id') !== this.props.clientId) return 'unknown client_id';
    if (!this.callbacks.has(params.get('redirect_uri') ?? ''))
      return 'redirect_uri is not a callback URL of this client';
    if (params.get('response_type') !== 'code') return 'response_type must be code';
    if (
      params.get('code_challenge_method') !== 'S256' ||
      !/^[A-Za-z0-9_-]{43}$/.test(params.get('code_challenge') ?? '')
    )
      return 'a PKCE code_challenge (S256) is required';
    if (!(params.get('scope') ?? '').split(' ').includes('openid')) return 'scope must include openid';
    return undefined;
  }

  /** The sign-in form posted: a known user with the right password gets a code at the callback. */
  private login(form: URLSearchParams, res: ServerResponse) {
    const problem = this.authorizeProblem(form);
    if (problem) return this.html(res, 400, page('Sign-in error', `<p>${escapeHtml(problem)}</p>`));
    const user = (form.get('username') ?? '').trim();
    const expected = Object.hasOwn(this.props.users, user) ? this.props.users[user] : undefined;
    if (expected === undefined || !sameText(expected, form.get('password') ?? ''))
      return this.html(res, 200, loginPage(form, 'Incorrect username or password.'));
    const code = randomBytes(24).toString('base64url');
    const redirectUri = form.get('redirect_uri') as string;
    this.codes.set(code, {
      redirectUri,
      challenge: form.get('code_challenge') as string,
      user,
      expiresAt: Date.now() + CODE_SECONDS * 1000,
    });
    const back = new URL(redirectUri);
    back.searchParams.set('code', code);
    const state = form.get('state');
    if (state) back.searchParams.set('state', state);
    res.writeHead(302, {
      location: back.toString(),
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
    });
    res.end();
  }

  /** The code exchanged for tokens: once, before it expires, by the client and callback it was issued to, with the PKCE verifier. */
  private token(form: URLSearchParams | undefined, origin: string | undefined, res: ServerResponse) {
    const fail = (error: string, description: string) =>
      send(
        res,
        400,
        'application/json',
        JSON.stringify({ error, error_description: description }),
        cors(this.allowedOrigin(origin)),
      );
    if (!form) return fail('invalid_request', 'the body is too large');
    if (form.get('grant_type') !== 'authorization_code')
      return fail('unsupported_grant_type', 'only authorization_code');
    const code = form.get('code') ?? '';
    const pending = this.codes.get(code);
    // A code works once, whatever happens next.
    this.codes.delete(code);
    if (!pending || pending.expiresAt < Date.now())
      return fail('invalid_grant', 'unknown, used or expired code');
    if (form.get('client_id') !== this.props.clientId) return fail('invalid_client', 'wrong client_id');
    if (form.get('redirect_uri') !== pending.redirectUri)
      return fail('invalid_grant', 'redirect_uri mismatch');
    const verifier = form.get('code_verifier') ?? '';
    if (!sameText(createHash('sha256').update(verifier).digest('base64url'), pending.challenge))
      return fail('invalid_grant', 'the code_verifier does not match the code_challenge');
    const groups =
      (this.props.groups && Object.hasOwn(this.props.groups, pending.user)
        ? this.props.groups[pending.user]
        : undefined) ?? [];
    const claims = {
      aud: this.props.clientId,
      token_use: 'id',
      email_verified: true,
      'cognito:username': pending.user,
      'cognito:groups': groups.length > 0 ? [...groups] : undefined,
    };
    const body = {
      id_token: this.props.issuer.token(pending.user, claims, ID_TOKEN_SECONDS),
      access_token: this.props.issuer.token(
        pending.user,
        { aud: undefined, client_id: this.props.clientId, token_use: 'access', scope: 'openid email' },
        ID_TOKEN_SECONDS,
      ),
      token_type: 'Bearer',
      expires_in: ID_TOKEN_SECONDS,
    };
    send(res, 200, 'application/json', JSON.stringify(body), cors(this.allowedOrigin(origin)));
  }

  private preflight(origin: string | undefined, res: ServerResponse) {
    res.writeHead(204, {
      ...cors(this.allowedOrigin(origin)),
      'access-control-allow-methods': 'POST',
      'access-control-allow-headers': 'content-type',
    });
    res.end();
  }

  /** A page of the hosted UI: no script; its form posts here and is redirected to a callback only. */
  private html(res: ServerResponse, status: number, body: string): void {
    const callbacks = [...new Set([...this.callbacks].map((url) => new URL(url).origin))].join(' ');
    send(res, status, 'text/html; charset=utf-8', body, {
      'content-security-policy': `default-src 'none'; form-action 'self' ${callbacks}; base-uri 'none'; frame-ancestors 'none'`,
    });
  }

  /** The page's origin may read the token response when it is a registered callback's origin. */
  private allowedOrigin(origin: string | undefined): string | undefined {
    if (!origin) return undefined;
    return [...this.callbacks].some((url) => new URL(url).origin === origin) ? origin : undefined;
  }
}

function cors(origin: string | undefined): Record<string, string> {
  return origin ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {};
}

/** The sign-in form: the authorization request travels in hidden fields to `/login`. */
function loginPage(params: URLSearchParams, error?: string): string {
  const carried = [
    'client_id',
    'redirect_uri',
    'response_type',
    'scope',
    'state',
    'code_challenge',
    'code_challenge_method',
  ]
    .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(params.get(name) ?? '')}">`)
    .join('');
  return page(
    'Sign in',
    [
      '<h1>Sign in to answer the gate</h1>',
      ...(error ? [`<p role="alert">${escapeHtml(error)}</p>`] : []),
      `<form method="post" action="/login">${carried}`,
      '<p><label>Email <input type="text" name="username" autocomplete="username"></label></p>',
      '<p><label>Password <input type="password" name="password" autocomplete="current-password"></label></p>',
      '<p><button>Sign in</button></p></form>',
    ].join('\n'),
  );
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head><body>${body}</body></html>`;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(body);
}

/**
 * The local hosted UI speaks the authorization-code flow with PKCE as Cognito's does: only its
 * client and exact callback, a code once, only with the verifier of its challenge, and ID tokens
 * the local JWT authorizer accepts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalHostedUi } from '../../lib/aws-local/api-gateway/hosted-ui.ts';
import { JwtVerifier } from '../../lib/aws-local/api-gateway/jwt.ts';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { groupsOf, type HttpEvent } from '../../lib/runtime/api/http.ts';

const CALLBACK = 'http://127.0.0.1:9/approvals/signed-in';
const issuer = new LocalIssuer();
let ui: LocalHostedUi;

beforeAll(async () => {
  ui = await LocalHostedUi.start({
    issuer,
    clientId: 'page',
    users: { 'ana@example.test': 'pw-ana' },
    groups: { 'ana@example.test': ['sre', 'auditors'] },
  });
  ui.allowCallback(CALLBACK);
});
afterAll(() => ui.close());

const verifier = randomBytes(32).toString('base64url');
const authorizeParams = (overrides: Record<string, string> = {}) =>
  new URLSearchParams({
    response_type: 'code',
    client_id: 'page',
    redirect_uri: CALLBACK,
    scope: 'openid email',
    state: 's1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...overrides,
  });

async function signIn(password = 'pw-ana'): Promise<Response> {
  return fetch(`${ui.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      ...Object.fromEntries(authorizeParams()),
      username: 'ana@example.test',
      password,
    }),
  });
}

const exchange = (code: string, overrides: Record<string, string> = {}) =>
  fetch(`${ui.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://127.0.0.1:9' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: 'page',
      code,
      redirect_uri: CALLBACK,
      code_verifier: verifier,
      ...overrides,
    }),
  });

describe('local hosted UI', () => {
  it('refuses an unknown client, a callback not registered, and no PKCE, without redirecting', async () => {
    const bads: Record<string, string>[] = [
      { client_id: 'other' },
      { redirect_uri: 'https://evil.example/cb' },
      { code_challenge_method: 'plain' },
    ];
    for (const bad of bads) {
      const res = await fetch(`${ui.url}/oauth2/authorize?${authorizeParams(bad)}`, { redirect: 'manual' });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    const ok = await fetch(`${ui.url}/oauth2/authorize?${authorizeParams()}`);
    expect(await ok.text()).toContain('Sign in to answer the gate');
  });

  it('exchanges a code once, only with its verifier, for an ID token the JWT authorizer accepts', async () => {
    expect(await (await signIn('wrong')).text()).toContain('Incorrect username or password.');
    const signedIn = await signIn();
    expect(signedIn.status).toBe(302);
    const back = new URL(signedIn.headers.get('location') as string);
    expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
    expect(back.searchParams.get('state')).toBe('s1');
    const code = back.searchParams.get('code') as string;

    const wrongVerifier = await exchange(code, { code_verifier: randomBytes(32).toString('base64url') });
    expect(wrongVerifier.status).toBe(400);
    // The failed try used the code up.
    expect((await exchange(code)).status).toBe(400);

    const fresh = new URL((await signIn()).headers.get('location') as string).searchParams.get(
      'code',
    ) as string;
    expect((await exchange(fresh, { redirect_uri: `${CALLBACK}x` })).status).toBe(400);
    const again = new URL((await signIn()).headers.get('location') as string).searchParams.get(
      'code',
    ) as string;
    const tokens = await exchange(again);
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:9');
    const { id_token } = (await tokens.json()) as { id_token: string };
    const verified = new JwtVerifier({ issuer: issuer.issuer, audience: ['page'], jwks: issuer.jwks }).verify(
      `Bearer ${id_token}`,
    );
    expect(verified).toMatchObject({ ok: true, claims: { email: 'ana@example.test', token_use: 'id' } });
    expect((await exchange(again)).status).toBe(400);
    // Her user pool groups ride in the token, passed on as API Gateway passes an array claim, and
    // are what the approvals API tells the platform's policy she is in.
    if (!verified.ok) throw new Error('not verified');
    expect(verified.claims['cognito:groups']).toBe('[sre auditors]');
    // The list is read from the token the authorizer verified (its header), never by splitting that.
    const event = {
      headers: { authorization: `Bearer ${id_token}` },
      requestContext: { http: { sourceIp: '127.0.0.1' }, authorizer: { jwt: { claims: verified.claims } } },
    } as unknown as HttpEvent;
    expect(groupsOf(event, { mode: 'jwt' })).toEqual(['sre', 'auditors']);
    // Never from a header or an IAM signature: those callers' groups come from the policy's groups file.
    expect(groupsOf(event, { mode: 'iam' })).toEqual([]);
  });
});

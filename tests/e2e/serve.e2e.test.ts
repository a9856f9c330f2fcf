/**
 * `plangate serve` as a user starts it: the URL first, the trusted-header identity only when asked
 * for (and only believed from loopback), a gate's link printed, SIGTERM ends it cleanly.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCAL_SIGN_IN_CLIENT_ID } from '../../lib/cli/serve.ts';
import { identityOf } from '../../lib/runtime/api/http.ts';
import { ApiClient } from '../support/api-client.ts';
import { CliRun, workDir } from './cli.ts';
import { startServe } from './serve-process.ts';

const PLAN = {
  id: 'header-demo',
  version: 1,
  objective: 'Echo one value, proven by a contract',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'only',
      description: 'Echo the value one',
      tool: 'echo',
      args: { value: 'one' },
      contract: { kind: 'assert', expression: 'output.value = "one"' },
    },
  ],
};

describe('plangate serve', () => {
  it('believes x-plangate-user only with --identity header and only from loopback', () => {
    const event = (sourceIp: string) =>
      ({
        headers: { 'x-plangate-user': 'carol' },
        requestContext: { http: { method: 'POST', path: '/plans', sourceIp } },
      }) as unknown as Parameters<typeof identityOf>[0];
    const header = { mode: 'header', header: 'x-plangate-user' } as const;
    expect(identityOf(event('127.0.0.1'), header)).toBe('carol');
    expect(identityOf(event('::ffff:127.0.0.1'), header)).toBe('carol');
    expect(identityOf(event('203.0.113.7'), header)).toBeUndefined();
    expect(identityOf(event('127.0.0.1'), { mode: 'iam' })).toBeUndefined();
  });

  it('prints its URL first, launches a plan named by the header, prints the gate link, stops on SIGTERM', async () => {
    const store = await mkdtemp(join(tmpdir(), 'plangate-serve-cli-'));
    const serve = startServe(['--identity', 'header', '--store', store], await workDir());
    const line = serve.line;
    try {
      const url = await line(() => true);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      // Every response is checked against the served OpenAPI document as it arrives.
      const api = new ApiClient(url);
      const refused = await api.request('POST', '/plans', { body: JSON.stringify(PLAN) });
      expect(refused.status).toBe(401);
      const submitted = await api.request('POST', '/plans', {
        headers: { 'content-type': 'application/json', 'x-plangate-user': 'carol' },
        body: JSON.stringify(PLAN),
      });
      expect(submitted.status, submitted.text).toBe(201);
      const gate = await line((l) => l.startsWith('gate plan of header-demo v1 waits: '));
      expect(gate).toMatch(new RegExp(`waits: ${url}/approvals/[A-Za-z0-9._-]+$`));
      const executionArn = submitted.json().executionArn as string;
      const events = (
        await api.request('GET', `/executions/${encodeURIComponent(executionArn)}/events`, {
          headers: { 'x-plangate-user': 'carol' },
        })
      ).json() as { events: { event: string; details: Record<string, unknown> }[] };
      expect(events.events[0]).toMatchObject({ event: 'PLAN_CREATED', details: { submitted_by: 'carol' } });
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  }, 60_000);
});

describe('plangate serve --sign-in-users', () => {
  it("runs a local hosted UI whose ID tokens the API's approvers' authorizer trusts, at the API's own callback", async () => {
    const store = await mkdtemp(join(tmpdir(), 'plangate-serve-sign-in-'));
    const users = join(store, 'users.json');
    await writeFile(users, JSON.stringify({ 'ana@example.test': 'correct-horse-1' }));
    const serve = startServe(['--store', store, '--sign-in-users', users], await workDir());
    try {
      const url = await serve.line(() => true);
      const note = await serve.line((l) => l.startsWith('answers: signed in at '));
      const ui = /signed in at (http:\/\/127\.0\.0\.1:\d+) \(1 users of /.exec(note)?.[1] as string;
      expect(ui).toBeTruthy();
      const verifier = randomBytes(32).toString('base64url');
      const callback = `${url}/approvals/signed-in`;
      const login = (password: string) =>
        fetch(`${ui}/login`, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            response_type: 'code',
            client_id: LOCAL_SIGN_IN_CLIENT_ID,
            redirect_uri: callback,
            scope: 'openid email',
            state: 'st',
            code_challenge: createHash('sha256').update(verifier).digest('base64url'),
            code_challenge_method: 'S256',
            username: 'ana@example.test',
            password,
          }),
        });
      expect(await (await login('wrong-password')).text()).toContain('Incorrect username or password.');
      const signedIn = await login('correct-horse-1');
      expect(signedIn.status).toBe(302);
      const back = new URL(signedIn.headers.get('location') as string);
      expect(`${back.origin}${back.pathname}`).toBe(callback);
      const tokens = await fetch(`${ui}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: LOCAL_SIGN_IN_CLIENT_ID,
          code: back.searchParams.get('code') as string,
          redirect_uri: callback,
          code_verifier: verifier,
        }),
      });
      expect(tokens.status).toBe(200);
      const { id_token } = (await tokens.json()) as { id_token: string };
      const claims = JSON.parse(Buffer.from(id_token.split('.')[1] as string, 'base64url').toString()) as {
        aud: string;
        email: string;
      };
      expect(claims).toMatchObject({ aud: LOCAL_SIGN_IN_CLIENT_ID, email: 'ana@example.test' });
      // The answer route's authorizer takes it: past the authorizer, a made-up approval id is refused
      // as malformed; with no token the authorizer refuses first.
      const answer = (headers: Record<string, string>) =>
        fetch(`${url}/approvals/no-such-approval`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ decision: 'APPROVE' }),
        });
      expect((await answer({})).status).toBe(401);
      const withToken = await answer({ authorization: `Bearer ${id_token}` });
      expect(withToken.status).toBe(400);
      expect(await withToken.json()).toMatchObject({ message: 'this approval link is malformed' });
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  });

  it('refuses a users file that is not {email: password} with where it is wrong, and --jwt-issuer beside it', async () => {
    const store = await mkdtemp(join(tmpdir(), 'plangate-serve-sign-in-bad-'));
    const users = join(store, 'users.json');
    await writeFile(users, JSON.stringify({ 'not-an-email': 'correct-horse-1' }));
    const bad = new CliRun(['serve', '--store', store, '--sign-in-users', users], store);
    expect(await bad.exited).toBe(1);
    expect(bad.stderr).toContain(`${users}: not-an-email:`);
    const both = new CliRun(
      [
        'serve',
        '--store',
        store,
        '--sign-in-users',
        users,
        '--jwt-issuer',
        'https://x',
        '--jwks',
        users,
        '--jwt-audience',
        'a',
      ],
      store,
    );
    expect(await both.exited).toBe(2);
    expect(both.stderr).toContain('--sign-in-users issues its own JWTs');
  });
});

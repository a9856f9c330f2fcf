/**
 * Recipient-bound approval links and the approval page's two modes, through the approvals API
 * handler (lambdas/approvals-api.ts) and the gate Lambda against dynalite and a tiny local Step
 * Functions endpoint, with the real SDK clients. A recipient-bound id answers as its recipient
 * and nobody else; forged, altered, expired, reused or policy-refused ids change nothing.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SFNClient } from '@aws-sdk/client-sfn';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as makeApprovalsApi, signInFromEnv } from '../../lambdas/approvals-api.ts';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import type { HttpEvent, HttpResult } from '../../lib/runtime/api/http.ts';
import { journalFor } from '../../lib/runtime/deps.ts';
import { approvalPage, signInCallbackPage, signInPageCsp } from '../../lib/runtime/gate/approval-page.ts';
import { Approvals } from '../../lib/runtime/gate/approvals.ts';
import type { GateDeps } from '../../lib/runtime/gate/gate.ts';
import { LinkSigner, parseLinkId } from '../../lib/runtime/gate/links.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';
import { type RecordingSfn, startRecordingSfn } from './recording-sfn.ts';

const KEY = 'r'.repeat(40);
const TOKEN = `AQ${'x'.repeat(300)}`;
const plan = { id: 'demo', version: 1, digest: 'sha256:beef' };
const SIGN_IN = {
  domainUrl: 'https://plangate-approvers-1.auth.eu-west-1.amazoncognito.com',
  clientId: 'abc123client',
  redirectUri: 'https://api.example.com/approvals/signed-in',
};

let dir: string;
let plane: LocalDataPlane;
let recorder: RecordingSfn;
let sfn: SFNClient;
/** Task tokens SendTaskSuccess was called with, in order. */
const successes = () => recorder.successes.map((s) => s.taskToken);
const notices: ApprovalNotice[] = [];
let gateDeps: GateDeps;
let api: (event: HttpEvent) => Promise<HttpResult>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-recipient-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  recorder = await startRecordingSfn();
  sfn = recorder.client;
  gateDeps = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    tools: builtinRegistry(),
    cwd: dir,
    sfn,
    signingKey: KEY,
    notify: async (n) => {
      notices.push(n);
    },
  };
  api = makeApprovalsApi({ ...gateDeps, identity: { mode: 'jwt' }, signIn: SIGN_IN });
});
afterAll(async () => {
  await recorder.close();
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

const signer = new LinkSigner(KEY);

async function openGate(
  executionId: string,
  policy = {
    approvers: ['ana@example.com', 'ben@example.com'],
    forbiddenApprovers: ['author@example.com'],
    quorum: 1,
  },
): Promise<ApprovalNotice> {
  await makeGate(gateDeps)({
    kind: 'plan',
    taskToken: `${TOKEN}-${executionId}`,
    plan,
    executionId,
    approval: policy,
    round: 1,
    timeoutSeconds: 3600,
  });
  return notices.at(-1) as ApprovalNotice;
}

const bound = (n: ApprovalNotice, recipient: string) =>
  signer.forRecipient(n.approvalId, n.plan.digest, recipient);

function request(
  method: 'GET' | 'POST',
  path: string,
  options: { body?: string; headers?: Record<string, string>; claims?: Record<string, string> } = {},
): HttpEvent {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: options.headers ?? {},
    ...(options.body !== undefined ? { body: options.body } : {}),
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: 'r',
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: 0,
      ...(options.claims ? { authorizer: { jwt: { claims: options.claims } } } : {}),
    },
  } as HttpEvent;
}

/** Opens a link as a browser does: the redirect to the page's handle, its session cookie, the page. */
async function openLink(link: string) {
  const opened = await api(request('GET', `/approvals/${encodeURIComponent(link)}`));
  expect(opened.statusCode, opened.body).toBe(303);
  const location = opened.headers?.location as string;
  const handle = /^\/approvals\/([A-Za-z0-9_-]{22})$/.exec(location)?.[1] as string;
  expect(handle).toBeDefined();
  const cookie = (opened.cookies?.[0] ?? '').split(';')[0] as string;
  const page = await api(request('GET', location, { headers: { cookie } }));
  const formToken = /name="form_token" value="([^"]+)"/.exec(page.body as string)?.[1] as string;
  return { handle, cookie, page, formToken };
}

const answerAsRecipient = (linkId: string, decision = 'APPROVE', digest = plan.digest) =>
  api(
    request('POST', `/approvals/${encodeURIComponent(linkId)}/as-recipient`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ digest, decision }).toString(),
    }),
  );

const eventsOf = async (executionId: string) =>
  (await readEvents(plane.clients.doc, plane.tableNames.events, executionId)).map((e) => ({
    event: e.event,
    approver: (e.details as { approver?: string }).approver,
  }));

describe('recipient-bound links', () => {
  it('answer as the recipient the signature binds, shown on the page, and only once', async () => {
    const n = await openGate('exec-bound');
    const link = bound(n, 'ana@example.com');
    expect(parseLinkId(link).recipient).toBe('ana@example.com');
    expect(link).not.toContain(TOKEN.slice(0, 20));

    const { page, handle } = await openLink(link);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('You are answering as ana@example.com');
    expect(page.body).toContain(`action="/approvals/${handle}/as-recipient"`);
    expect(page.body).not.toContain(link.split('.')[3]);
    expect(page.body).not.toContain('<script');
    expect(page.headers?.['content-security-policy']).toMatch(/default-src 'none'.*form-action 'self'/);

    // A JWT-less POST to the JWT route says nothing about who answers: refused.
    const anonymous = await api(
      request('POST', `/approvals/${encodeURIComponent(n.approvalId)}`, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ digest: plan.digest, decision: 'APPROVE' }),
      }),
    );
    expect(anonymous.statusCode).toBe(401);

    const ok = await answerAsRecipient(link);
    expect(ok.statusCode).toBe(200);
    expect(JSON.parse(ok.body as string)).toMatchObject({
      status: 'decided',
      decision: { by: 'ana@example.com' },
    });
    expect(successes()).toContain(`${TOKEN}-exec-bound`);
    const again = await answerAsRecipient(link);
    expect(again.statusCode).toBe(409);
    // The second answer is refused and journaled, naming the recipient the link binds.
    expect(
      (await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-bound')).map((e) => [
        e.event,
        e.details.voter ?? e.details.approver ?? e.details.by,
      ]),
    ).toEqual([
      ['GATE_APPROVAL_REQUESTED', undefined],
      ['GATE_VOTE', 'ana@example.com'],
      ['GATE_APPROVED', 'ana@example.com'],
      ['GATE_ANSWER_REFUSED', 'ana@example.com'],
    ]);
  });

  it('refuses forged, altered-recipient, shared and policy-refused ids, changing nothing', async () => {
    const n = await openGate('exec-refused', {
      approvers: ['ana@example.com', 'author@example.com'],
      forbiddenApprovers: ['author@example.com'],
      quorum: 1,
    });
    const link = bound(n, 'ana@example.com');
    const [id, exp, , mac] = link.split('.') as [string, string, string, string];
    const otherRecipient = `${id}.${exp}.${Buffer.from('mallory@example.com').toString('base64url')}.${mac}`;
    const forgedMac = `${link.slice(0, -3)}${link.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    const laterExpiry = `${id}.${Number(exp) + 3600}.${link.split('.')[2]}.${mac}`;
    const otherKey = new LinkSigner('z'.repeat(40)).bound(id, Number(exp), plan.digest, 'ana@example.com');
    for (const bad of [otherRecipient, forgedMac, laterExpiry, otherKey]) {
      const res = await answerAsRecipient(bad);
      expect(res.statusCode, bad).toBe(404);
      expect(JSON.parse(res.body as string).message).toBe('this approval link is not valid');
    }
    const malformed = await answerAsRecipient(`${id}.${exp}.%%%.${mac}`);
    expect(malformed.statusCode).toBe(400);
    // The shared link names nobody: its holder must sign in.
    const shared = await answerAsRecipient(n.approvalId);
    expect(shared.statusCode).toBe(403);
    // Properly signed for someone the policy refuses.
    for (const who of ['author@example.com', 'mallory@example.com']) {
      const res = await answerAsRecipient(bound(n, who));
      expect(res.statusCode).toBe(403);
    }
    const wrongDigest = await answerAsRecipient(link, 'APPROVE', 'sha256:other');
    expect(wrongDigest.statusCode).toBe(409);
    // Every refused answer is audited in the gate it tried: a forged or malformed id as unverified
    // (it names nobody, only where it came from), a genuine one naming who answered.
    const stored = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-refused');
    expect(stored.map((e) => [e.event, e.details.reason, e.details.by])).toEqual([
      ['GATE_APPROVAL_REQUESTED', undefined, undefined],
      ...Array.from({ length: 5 }, () => ['GATE_ANSWER_REFUSED', 'unverified', undefined]),
      ['GATE_ANSWER_REFUSED', 'forbidden', undefined],
      ['GATE_ANSWER_REFUSED', 'forbidden', 'author@example.com'],
      ['GATE_ANSWER_REFUSED', 'forbidden', 'mallory@example.com'],
      ['GATE_ANSWER_REFUSED', 'digest-mismatch', expect.any(String)],
    ]);
    expect(successes()).not.toContain(`${TOKEN}-exec-refused`);
  });

  it('never derives a recipient link from a shared id that does not verify', () => {
    const n = { approvalId: 'abc.1900000000.bad', plan };
    expect(() => signer.forRecipient(n.approvalId, plan.digest, 'ana@example.com')).toThrow(/not valid/);
    const real = signer.shared('abc', 1900000000, plan.digest);
    expect(() => signer.forRecipient(real, 'sha256:other', 'ana@example.com')).toThrow(/not valid/);
    expect(() =>
      signer.forRecipient(signer.bound('abc', 1900000000, plan.digest, 'a@x.io'), plan.digest, 'b@x.io'),
    ).toThrow(/not valid/);
  });

  it('binds any recipient: altering one character of the name or the MAC never verifies', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 60 }),
        fc.string({ minLength: 1, maxLength: 60 }),
        (a, b) => {
          fc.pre(a !== b);
          const link = signer.bound('gate1', 1900000000, plan.digest, a);
          const parsed = parseLinkId(link);
          expect(parsed.recipient).toBe(a);
          expect(signer.verifies(parsed, plan.digest)).toBe(true);
          const swapped = link.split('.');
          swapped[2] = Buffer.from(b).toString('base64url');
          expect(signer.verifies({ ...parsed, recipient: b, text: swapped.join('.') }, plan.digest)).toBe(
            false,
          );
        },
      ),
    );
  });

  it('expires with the gate', async () => {
    const n = await openGate('exec-expired-bound');
    const link = bound(n, 'ana@example.com');
    const later = new Approvals({
      dynamo: plane.clients.doc,
      gatesTable: plane.tableNames.gates,
      sfn,
      journal: journalFor(gateDeps),
      signingKey: KEY,
      clock: () => new Date(Date.now() + 2 * 3600_000),
    });
    await expect(
      later.answerAsRecipient(link, { digest: plan.digest, decision: { decision: 'APPROVE' } }),
    ).rejects.toMatchObject({ reason: 'expired' });
    expect((await eventsOf('exec-expired-bound')).map((e) => e.event)).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_ANSWER_REFUSED',
    ]);
  });

  it('lets exactly one of concurrent clicks decide, and a recipient votes once toward a quorum', async () => {
    const n = await openGate('exec-race', {
      approvers: ['ana@example.com', 'ben@example.com', 'cy@example.com'],
      forbiddenApprovers: [],
      quorum: 2,
    });
    const ana = bound(n, 'ana@example.com');
    const twice = await Promise.all([answerAsRecipient(ana), answerAsRecipient(ana)]);
    expect(twice.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const before = successes().length;
    const race = await Promise.all([
      answerAsRecipient(bound(n, 'ben@example.com')),
      answerAsRecipient(bound(n, 'cy@example.com')),
    ]);
    expect(race.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(successes().length - before).toBe(1);
    expect((await eventsOf('exec-race')).filter((e) => e.event === 'GATE_APPROVED')).toHaveLength(1);
  });

  it('on the JWT route, the token names the approver whatever link was used', async () => {
    const n = await openGate('exec-jwt');
    const res = await api(
      request('POST', `/approvals/${encodeURIComponent(bound(n, 'ana@example.com'))}`, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ digest: plan.digest, decision: 'APPROVE' }),
        claims: { email: 'ben@example.com', email_verified: 'true', sub: 'ben-sub' },
      }),
    );
    expect(res.statusCode).toBe(200);
    expect((await eventsOf('exec-jwt')).at(-1)).toEqual({
      event: 'GATE_APPROVED',
      approver: 'ben@example.com',
    });
  });
});

describe('page sessions: a link redeemed into a cookie and a clean URL', () => {
  const post = (
    path: string,
    headers: Record<string, string>,
    form: Record<string, string>,
    claims?: Record<string, string>,
  ) =>
    api(
      request('POST', path, {
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          ...headers,
        },
        body: new URLSearchParams(form).toString(),
        ...(claims ? { claims } : {}),
      }),
    );

  it('answers through the session with its form token, and refuses every post missing a part of it', async () => {
    const n = await openGate('exec-session');
    const { handle, cookie, formToken } = await openLink(bound(n, 'ana@example.com'));
    expect(formToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const approve = { digest: plan.digest, decision: 'APPROVE' };
    const path = `/approvals/${handle}/as-recipient`;
    const refusals: [string, HttpResult][] = [
      ['no cookie', await post(path, {}, { ...approve, form_token: formToken })],
      ['no form token', await post(path, { cookie }, approve)],
      [
        'another form token',
        await post(path, { cookie }, { ...approve, form_token: `${formToken.slice(1)}A` }),
      ],
      [
        'the cookie moved to another handle',
        await post(
          `/approvals/${'A'.repeat(22)}/as-recipient`,
          { cookie },
          { ...approve, form_token: formToken },
        ),
      ],
      [
        'a forged cookie',
        await post(
          path,
          { cookie: `plangate_page=${'A'.repeat(120)}` },
          { ...approve, form_token: formToken },
        ),
      ],
    ];
    for (const [what, res] of refusals) {
      expect(res.statusCode, what).toBe(403);
      expect(JSON.parse(res.body as string).message, what).toMatch(/open the|form token/);
    }
    // The session knows its gate, so a post without the form token is audited; nothing is decided.
    expect(await eventsOf('exec-session')).toEqual([
      { event: 'GATE_APPROVAL_REQUESTED', approver: undefined },
      { event: 'GATE_ANSWER_REFUSED', approver: undefined },
      { event: 'GATE_ANSWER_REFUSED', approver: undefined },
    ]);
    expect(successes()).not.toContain(`${TOKEN}-exec-session`);
    const ok = await post(path, { cookie }, { ...approve, form_token: formToken });
    expect(ok.statusCode).toBe(200);
    expect(JSON.parse(ok.body as string)).toMatchObject({ decision: { by: 'ana@example.com' } });
    // The page reloaded after deciding says who decided.
    const again = await api(request('GET', `/approvals/${handle}`, { headers: { cookie } }));
    expect(again.statusCode).toBe(409);
    // Titled in plain words (not "Not recorded"), with what to do and where the run goes on.
    expect(again.body).toMatch(
      /<h1>Already answered by ana@example\.com at \d{4}-\d\d-\d\d \d\d:\d\d UTC<\/h1><p>The answer was APPROVE\. There is nothing left to answer here\.<\/p>/,
    );
    expect(again.body).toContain(`<a href="/approvals/${handle}/progress">`);
  });

  it('gives two openings of links two sessions (two tabs, two recipients), each answering as its own', async () => {
    const n = await openGate('exec-two-tabs', {
      approvers: ['ana@example.com', 'ben@example.com'],
      forbiddenApprovers: [],
      quorum: 2,
    });
    const ana = await openLink(bound(n, 'ana@example.com'));
    const ben = await openLink(bound(n, 'ben@example.com'));
    expect(ana.handle).not.toBe(ben.handle);
    // Both cookies in one jar: each handle's page opens with its own.
    const jar = `${ana.cookie}; ${ben.cookie}`;
    const approve = { digest: plan.digest, decision: 'APPROVE' };
    const first = await post(
      `/approvals/${ben.handle}/as-recipient`,
      { cookie: jar },
      { ...approve, form_token: ben.formToken },
    );
    expect(JSON.parse(first.body as string)).toEqual({ status: 'pending', votes: 1 });
    const second = await post(
      `/approvals/${ana.handle}/as-recipient`,
      { cookie: jar },
      { ...approve, form_token: ana.formToken },
    );
    expect(JSON.parse(second.body as string)).toMatchObject({
      status: 'decided',
      decision: { by: 'ben@example.com, ana@example.com' },
    });
  });

  it('does not redeem a forged or expired link: the refusal is shown where the page would be', async () => {
    const n = await openGate('exec-forged-open');
    const forged = `${n.approvalId.slice(0, -3)}${n.approvalId.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    const res = await api(request('GET', `/approvals/${encodeURIComponent(forged)}`));
    expect(res.statusCode).toBe(404);
    expect(res.cookies).toBeUndefined();
    expect(res.body).toContain('<h1>Not valid</h1><p>This approval link is not valid. Open it again');
    const nobody = await api(request('GET', `/approvals/${'B'.repeat(22)}`));
    expect(nobody.statusCode).toBe(403);
    expect(nobody.body).toContain('open the link from your email or Slack again');
  });

  it('signs in on the session page of a shared link and answers with the JWT and the form token', async () => {
    const n = await openGate('exec-shared-session');
    const { handle, cookie, formToken } = await openLink(n.approvalId);
    const approve = { digest: plan.digest, decision: 'APPROVE' };
    const without = await post(`/approvals/${handle}`, { cookie }, approve, {
      email: 'ana@example.com',
      email_verified: 'true',
      sub: 'ana-sub',
    });
    expect(without.statusCode).toBe(403);
    const ok = await post(
      `/approvals/${handle}`,
      { cookie },
      { ...approve, form_token: formToken },
      { email: 'ana@example.com', email_verified: 'true', sub: 'ana-sub' },
    );
    expect(JSON.parse(ok.body as string)).toMatchObject({ decision: { by: 'ana@example.com' } });
  });
});

describe('approval page with sign-in', () => {
  it('serves a shared link the sign-in page: one hash-allowed script, only public values, no token', async () => {
    const n = await openGate('exec-page');
    const { page: res, handle } = await openLink(n.approvalId);
    expect(res.statusCode).toBe(200);
    const csp = res.headers?.['content-security-policy'] as string;
    expect(csp).toBe(signInPageCsp(SIGN_IN));
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+';/);
    expect(/script-src ([^;]*)/.exec(csp)?.[1]).not.toMatch(/unsafe/);
    expect(csp).toContain(`connect-src 'self' ${SIGN_IN.domainUrl};`);
    const body = res.body as string;
    // The one script on the page is exactly the one the policy's hash allows.
    const script = /<script>([\s\S]*?)<\/script>/.exec(body)?.[1] as string;
    expect(csp).toContain(`'sha256-${createHash('sha256').update(script).digest('base64')}'`);
    expect(body.match(/<script>/g)).toHaveLength(1);
    expect(body).toContain(`data-client-id="${SIGN_IN.clientId}"`);
    expect(body).toContain('You will be asked to sign in');
    expect(body).toContain(`action="/approvals/${handle}"`);
    expect(body).not.toContain(n.approvalId.split('.')[2]);
    expect(body).not.toContain(TOKEN.slice(0, 20));
    expect(body).not.toContain(KEY);
    expect(body).not.toMatch(/client_secret/);

    const callback = await api(request('GET', '/approvals/signed-in'));
    expect(callback.statusCode).toBe(200);
    expect(callback.body).toContain('data-mode="callback"');
    expect(callback.headers?.['content-security-policy']).toBe(csp);
  });

  it('escapes every gate field and sign-in value in both modes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.string(), async (text, recipient) => {
        fc.pre(text.length > 0 && recipient.length > 0);
        const gate = {
          approvalId: 'g',
          kind: 'plan' as const,
          executionId: 'e',
          planId: text,
          planVersion: 1,
          planDigest: text,
          round: 1,
          summary: { objective: `<img src=x onerror=alert(1)>${text}`, steps: 1 },
          createdAt: '',
          expiresAt: text,
          expiresAtEpoch: 1,
          status: 'pending' as const,
          policy: { approvers: [], forbiddenApprovers: [], quorum: 1 },
          votes: [],
        };
        const hostile = { ...SIGN_IN, clientId: `"><script>${text}` };
        for (const html of [
          await approvalPage(gate, '/approvals/x/as-recipient', { answeringAs: `<b>${recipient}</b>` }),
          await approvalPage(gate, '/approvals/x', { signIn: hostile }),
          signInCallbackPage(hostile),
        ]) {
          expect(html).not.toContain('<img');
          expect(html).not.toContain('<b>');
          expect(html.match(/<script>/g)?.length ?? 0).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('reads its sign-in configuration from the environment, all or nothing', () => {
    expect(signInFromEnv({})).toEqual({});
    expect(
      signInFromEnv({
        PLANGATE_COGNITO_DOMAIN: 'plangate-approvers-1.auth.eu-west-1.amazoncognito.com',
        PLANGATE_COGNITO_CLIENT_ID: 'abc123client',
        PLANGATE_API_URL: 'https://api.example.com/',
      }),
    ).toEqual({ signIn: SIGN_IN });
    expect(() => signInFromEnv({ PLANGATE_COGNITO_CLIENT_ID: 'abc' })).toThrow(/together/);
  });

  it('has no callback page without sign-in', async () => {
    const plain = makeApprovalsApi({ ...gateDeps, identity: { mode: 'jwt' } });
    expect((await plain(request('GET', '/approvals/signed-in'))).statusCode).toBe(404);
  });
});

/**
 * `plangate serve`'s platform end to end: the Plans API behind the local API Gateway with the
 * AWS deployment's authorizers. Requests are signed with the AWS SDK's own SigV4 signer, approvers
 * carry RS256 JWTs of a local issuer, a plan runs through its gate to the end, its progress comes
 * as Server-Sent Events, and every response, errors included, is checked against the served OpenAPI
 * document as it arrives (tests/support/api-client.ts).
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer, signJwt } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { NodeSha256 } from '../../lib/aws-local/api-gateway/sigv4.ts';
import { OpenAiProvider } from '../../lib/planner/openai-provider.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { FIXED_PLAN, startOpenAiServer, type WireServer } from '../planner/wire-servers.ts';
import { ApiClient, type ApiResponse } from '../support/api-client.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const ALICE = {
  accessKeyId: 'AKIDALICE',
  secretAccessKey: 'alice-secret-key-0123',
  arn: 'arn:aws:iam::123456789012:user/alice',
};
const issuer = new LocalIssuer();
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });

const PLAN = echoChainPlan('api-demo', ['first', 'second'], {
  approval: { approvers: ['dana@example.test'], allowAutoApprove: false },
});

const now = () => Math.floor(Date.now() / 1000);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let platform: LocalPlatform;
let api: ApiClient;
const gates: { notice: ApprovalNotice; link: string }[] = [];

function call(
  method: string,
  path: string,
  init: { body?: string; headers?: Record<string, string>; signWith?: typeof ALICE; signedAt?: Date } = {},
): Promise<ApiResponse> {
  return api.request(method, path, init);
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

let model: WireServer;

beforeAll(async () => {
  const store = await mkdtemp(join(tmpdir(), 'plangate-serve-'));
  model = await startOpenAiServer([{ plan: FIXED_PLAN }]);
  platform = await LocalPlatform.start({
    planner: {
      provider: new OpenAiProvider({ model: 'scripted', baseUrl: `${model.url}/v1` }, {}),
      maxRounds: 2,
    },
    paths: storePaths(store),
    identity: {
      mode: 'aws',
      principals: [ALICE],
      jwt: { issuer: issuer.issuer, audience: [issuer.audience], jwks: issuer.jwks },
    },
    onGate: (notice, link) => gates.push({ notice, link }),
  });
  api = new ApiClient(platform.url);
}, 60_000);

afterAll(async () => {
  await platform?.close();
  await model?.close();
});

describe('plangate serve: the Plans API with the authorizers of the AWS deployment', () => {
  let executionArn = '';

  it('refuses plan routes without a valid SigV4 signature, and changes nothing', async () => {
    const body = JSON.stringify(PLAN);
    const unsigned = await call('POST', '/plans', { body, headers: { 'content-type': 'application/json' } });
    expect(unsigned.status).toBe(403);
    expect(unsigned.json().message).toBe('Missing Authentication Token');
    const wrongSecret = await call('POST', '/plans', {
      body,
      headers: { 'content-type': 'application/json' },
      signWith: { ...ALICE, secretAccessKey: 'not-alices-secret-key' },
    });
    expect(wrongSecret.status).toBe(403);
    expect(wrongSecret.json().message).toMatch(/signature we calculated does not match/);
    const unknownKey = await call('POST', '/plans', {
      body,
      signWith: { ...ALICE, accessKeyId: 'AKIDMALLORY' },
    });
    expect(unknownKey.json().message).toMatch(/security token included in the request is invalid/);
    const stale = await call('POST', '/plans', {
      body,
      signWith: ALICE,
      signedAt: new Date(Date.now() - 10 * 60 * 1000),
    });
    expect(stale.status).toBe(403);
    expect(stale.json().message).toMatch(/Signature expired/);
    const headerOnly = await call('POST', '/plans', { body, headers: { 'x-plangate-user': 'alice' } });
    expect(headerOnly.status).toBe(403);
    expect(gates).toEqual([]);
  });

  it('refuses a request whose body changed after it was signed', async () => {
    const url = new URL('/plans', platform.url);
    const signer = new SignatureV4({
      credentials: ALICE,
      region: 'us-east-1',
      service: 'execute-api',
      sha256: NodeSha256,
    });
    const signed = await signer.sign({
      method: 'POST',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: '/plans',
      query: {},
      headers: { host: url.host },
      body: JSON.stringify(PLAN),
    });
    const response = await call('POST', '/plans', {
      headers: signed.headers as Record<string, string>,
      body: JSON.stringify({ ...PLAN, objective: 'something else entirely, swapped in transit' }),
    });
    expect(response.status).toBe(403);
  });

  it('accepts a signed submission and records the signer as the submitter', async () => {
    const submitted = await call('POST', '/plans', {
      body: JSON.stringify(PLAN),
      headers: { 'content-type': 'application/json' },
      signWith: ALICE,
    });
    expect(submitted.status, submitted.text).toBe(201);
    executionArn = submitted.json().executionArn as string;
    const records = await readEvents(
      platform.stack.data.clients.doc,
      platform.stack.data.tableNames.events,
      executionArn,
    );
    expect(records[0]?.event).toBe('PLAN_CREATED');
    expect(records[0]?.details.submitted_by).toBe(ALICE.arn);
  });

  it('answers the gate only with a valid JWT of an allowed approver', async () => {
    const gate = await waitFor('the plan gate', async () => gates.find((g) => g.notice.kind === 'plan'));
    const path = new URL(gate.link).pathname;
    const digest = gate.notice.plan.digest;
    const answer = JSON.stringify({ digest, decision: 'APPROVE' });
    const json = { 'content-type': 'application/json', accept: 'application/json' };
    const none = await call('POST', path, { body: answer, headers: json });
    expect(none.status).toBe(401);
    const forged = await call('POST', path, {
      body: answer,
      headers: {
        ...json,
        ...bearer(
          signJwt(stranger.privateKey, issuer.jwks.keys[0]?.kid as string, {
            iss: issuer.issuer,
            aud: issuer.audience,
            email: 'dana@example.test',
            exp: now() + 600,
          }),
        ),
      },
    });
    expect(forged.status).toBe(401);
    const expired = await call('POST', path, {
      body: answer,
      headers: {
        ...json,
        ...bearer(issuer.token('dana@example.test', { exp: now() - 5 })),
      },
    });
    expect(expired.status).toBe(401);
    const notAllowed = await call('POST', path, {
      body: answer,
      headers: { ...json, ...bearer(issuer.token('eve@example.test')) },
    });
    expect(notAllowed.status).toBe(403);
    const shown = await call('GET', path, { headers: { accept: 'application/json' } });
    expect(shown.status).toBe(200);
    const approved = await call('POST', path, {
      body: answer,
      headers: { ...json, ...bearer(issuer.token('dana@example.test')) },
    });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.json()).toMatchObject({ status: 'decided', decision: { decision: 'APPROVE' } });
    const again = await call('POST', path, {
      body: answer,
      headers: { ...json, ...bearer(issuer.token('dana@example.test')) },
    });
    expect(again.status).toBe(409);
  });

  it('reports status and events to the signer, and streams progress as Server-Sent Events', async () => {
    const status = await waitFor('the run to finish', async () => {
      const response = await call('GET', `/plans/${encodeURIComponent(executionArn)}`, { signWith: ALICE });
      return response.json().status === 'SUCCEEDED' ? response : undefined;
    });
    expect(status.json().steps).toMatchObject([
      { id: 'first', status: 'completed' },
      { id: 'second', status: 'completed' },
    ]);
    const events = await call('GET', `/executions/${encodeURIComponent(executionArn)}/events`, {
      signWith: ALICE,
    });
    expect(events.status).toBe(200);
    const progressPath = `/executions/${encodeURIComponent(executionArn)}/progress`;
    const stream = await call('GET', progressPath, { signWith: ALICE });
    expect(stream.type).toBe('text/event-stream');
    const frames = stream.text.split('\n\n').filter(Boolean);
    const lines = frames.filter((f) => !f.includes('event: end')).map((f) => /data: (.*)/.exec(f)?.[1]);
    expect(lines.filter((l) => l?.startsWith('[Task 1/2] ✓'))).toHaveLength(1);
    expect(lines.filter((l) => l?.startsWith('[Task 2/2] ✓'))).toHaveLength(1);
    expect(frames.at(-1)).toContain('event: end');
    const firstId = /id: (\d+)/.exec(frames[0] as string)?.[1] as string;
    const resumed = await call('GET', progressPath, {
      signWith: ALICE,
      headers: { 'last-event-id': firstId },
    });
    expect(resumed.text.split('\n\n').filter(Boolean)).toHaveLength(frames.length - 1);
    const denied = await call('GET', progressPath);
    expect(denied.status).toBe(403);
  });

  it("drafts a plan from a goal signed by its submitter, who is recorded as the plan's submitter", async () => {
    const goal = JSON.stringify({ goal: 'Add a health check endpoint' });
    expect((await call('POST', '/plans', { body: goal })).status).toBe(403);
    const accepted = await call('POST', '/plans', {
      body: goal,
      headers: { 'content-type': 'application/json' },
      signWith: ALICE,
    });
    expect(accepted.status).toBe(202);
    const location = accepted.json().location as string;
    const draft = await waitFor('the draft to launch', async () => {
      const seenDraft = (await call('GET', location, { signWith: ALICE })).json();
      return seenDraft.status === 'planning' || seenDraft.status === 'launching' ? undefined : seenDraft;
    });
    expect(draft).toMatchObject({ status: 'launched', submittedBy: ALICE.arn, outcome: 'converged' });
    const [created] = await readEvents(
      platform.stack.data.clients.doc,
      platform.stack.data.tableNames.events,
      draft.executionArn as string,
    );
    expect(created?.details).toMatchObject({ submitted_by: ALICE.arn, planner: { provider: 'openai' } });
    const tooLong = await call('POST', '/plans', {
      body: JSON.stringify({ goal: 'x'.repeat(4001) }),
      headers: { 'content-type': 'application/json' },
      signWith: ALICE,
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json().message).toMatch(/^goal: /);
    expect((await call('GET', '/drafts/unknown', { signWith: ALICE })).status).toBe(404);
  });

  it('addresses an execution by its name as well as by its URL-encoded ARN', async () => {
    const name = executionArn.split(':').at(-1) as string;
    const byName = await call('GET', `/plans/${name}`, { signWith: ALICE });
    expect(byName.status, byName.text).toBe(200);
    expect(byName.json()).toMatchObject({ executionArn, status: 'SUCCEEDED' });
    const events = await call('GET', `/executions/${name}/events`, { signWith: ALICE });
    expect(events.status, events.text).toBe(200);
    expect(events.json().executionArn).toBe(executionArn);
    const progress = await call('GET', `/executions/${name}/progress`, { signWith: ALICE });
    expect(progress.status, progress.text).toBe(200);
    expect(progress.text).toContain('event: end');
    for (const unknown of ['no-such-execution', encodeURIComponent(`${executionArn}-not`)]) {
      const missing = await call('GET', `/plans/${unknown}`, { signWith: ALICE });
      expect(missing.status, missing.text).toBe(404);
    }
  });

  it('checked every response against the served OpenAPI 3.1 document, errors and refusals included', async () => {
    const doc = (await api.document()) as unknown as { openapi: string };
    expect(doc.openapi).toBe('3.1.0');
    const statuses = new Set(api.checked.map((r) => `${r.method} ${r.route} ${r.status}`));
    for (const expected of [
      'POST /plans 201',
      'POST /plans 202',
      'POST /plans 400',
      'POST /plans 403',
      'GET /plans/{executionId} 200',
      'GET /plans/{executionId} 404',
      'GET /executions/{executionId}/progress 403',
      'POST /approvals/{approvalId} 401',
      'POST /approvals/{approvalId} 403',
      'POST /approvals/{approvalId} 409',
      'GET /drafts/{draftId} 404',
    ])
      expect(statuses).toContain(expected);
  });
});

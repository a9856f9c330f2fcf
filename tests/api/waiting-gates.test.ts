/**
 * `GET /plans/{id}` at a waiting gate, through `plangate serve`'s platform (Plans API → compiled
 * gate → journal): the gate, what it asks, who may answer (in words and by name, fewer once one
 * approved), the deadline and its ladder's next rung, and its shared link, the one Slack gets,
 * which asks whoever opens it to sign in, and whether its notice reached nobody. Every response is
 * checked against the served OpenAPI document (ApiClient).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { StatusResponseSchema } from '../../lib/launch/plans-api-schemas.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { journalFor } from '../../lib/runtime/deps.ts';
import { approvalsFor } from '../../lib/runtime/gate/gate.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { undeliveredReporter } from '../../lib/runtime/notify/undelivered.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { loadSigningKey, storePaths } from '../../lib/serve/store-directory.ts';
import { ApiClient } from '../support/api-client.ts';

const ALICE = {
  accessKeyId: 'AKIDALICEWAITINGGATE',
  secretAccessKey: 'alice-waiting-gate-secret-01',
  arn: 'arn:aws:iam::123456789012:user/alice',
};

const PLAN = PlanSchema.parse({
  id: 'waiting-gate',
  version: 1,
  objective: 'Say hello once two people approved',
  sizePolicy: { minSteps: 1 },
  approval: {
    approvers: ['dana@example.test', 'erin@example.test'],
    quorum: 2,
    allowAutoApprove: false,
    timeoutSeconds: 3600,
    remindAfterSeconds: 600,
    escalateTo: [{ approvers: ['ops@example.test'], quorum: 1 }],
  },
  steps: [
    {
      id: 'hello',
      description: 'Say hello',
      tool: 'echo',
      args: { message: 'hello' },
      contract: { kind: 'assert', expression: 'output.message = "hello"' },
    },
  ],
});

let dir: string;
let platform: LocalPlatform;
let api: ApiClient;
let executionArn: string;
const notices: ApprovalNotice[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-waiting-gate-'));
  platform = await LocalPlatform.start({
    paths: storePaths(join(dir, 'store')),
    cwd: dir,
    identity: { mode: 'aws', principals: [ALICE] },
    onGate: (notice) => notices.push(notice),
  });
  api = new ApiClient(platform.url);
  const submitted = await api.request('POST', '/plans', {
    signWith: ALICE,
    body: JSON.stringify(PLAN),
    headers: { 'content-type': 'application/json' },
  });
  expect(submitted.status).toBe(201);
  executionArn = submitted.json().executionArn as string;
  for (let i = 0; i < 800 && notices.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
  expect(notices).toHaveLength(1);
}, 60_000);

afterAll(async () => {
  await platform?.close();
  await rm(dir, { recursive: true, force: true });
});

async function status() {
  const response = await api.request('GET', `/plans/${encodeURIComponent(executionArn)}`, {
    signWith: ALICE,
  });
  expect(response.status).toBe(200);
  // Never the task token: the journal and the API know only the link.
  expect(response.text).not.toMatch(/taskToken|task_token/i);
  return StatusResponseSchema.parse(response.json());
}

it('names the waiting plan gate: what it asks, who may answer, the deadline, the next rung, the shared link', async () => {
  const notice = notices[0] as ApprovalNotice;
  const body = await status();
  expect(body.status).toBe('RUNNING');
  expect(body.gates).toHaveLength(1);
  const gate = body.gates[0];
  expect(gate).toMatchObject({
    kind: 'plan',
    round: 1,
    asks: 'Plan approval requested: Say hello once two people approved',
    mayAnswer: `dana@example.test, erin@example.test (never ${ALICE.arn})`,
    awaiting: ['dana@example.test', 'erin@example.test'],
    quorum: { needed: 2, approvals: 0 },
    deadline: notice.expiresAt,
    // The shared link: the one Slack carries (an emailed recipient's own link is never shown).
    link: `${platform.url}/approvals/${encodeURIComponent(notice.approvalId)}`,
  });
  // The first rung after the gate opened: its approvers are reminded 600 s in.
  const events = await readEvents(
    platform.stack.journalDeps().dynamo,
    platform.stack.journalDeps().tables.events,
    executionArn,
  );
  const requested = events.find((e) => e.event === 'GATE_APPROVAL_REQUESTED');
  expect(requested?.details.opened).toMatchObject({
    link_id: notice.approvalId,
    expires_at: notice.expiresAt,
  });
  expect(gate?.next).toEqual({
    action: 'remind',
    at: new Date(Date.parse(requested?.timestamp as string) + 600_000).toISOString(),
  });
  // The link opens the gate's page, which asks the reader to sign in: it answers nothing by itself.
  const page = await fetch(gate?.link as string, { redirect: 'manual' });
  expect(page.status).toBeLessThan(500);
  expect(await page.text()).not.toContain('value="APPROVE"');
});

it('says so beside the gate when its notice reached nobody', async () => {
  const notice = notices[0] as ApprovalNotice;
  expect((await status()).gates[0]?.undelivered).toBeUndefined();
  // What the notifier Lambda of a deployment without SES or Slack journals.
  await undeliveredReporter({ journal: journalFor(platform.stack.journalDeps()) })(notice, {
    reason: 'no-channel',
    message: 'no channel is configured',
  });
  expect((await status()).gates[0]?.undelivered).toMatchObject({
    reason: 'no-channel',
    message: 'no channel is configured',
  });
});

it('says who is still awaited once one approver approved, and nothing once the gate is decided', async () => {
  const notice = notices[0] as ApprovalNotice;
  const approvals = approvalsFor({
    ...platform.stack.journalDeps(),
    sfn: platform.stack.sfn,
    signingKey: await loadSigningKey(storePaths(join(dir, 'store'))),
  });
  const answer = (by: string) =>
    approvals.answer(notice.approvalId, {
      by,
      digest: notice.plan.digest,
      decision: { decision: 'APPROVE' },
    });
  expect((await answer('dana@example.test')).status).toBe('pending');
  const one = (await status()).gates[0];
  expect(one?.awaiting).toEqual(['erin@example.test']);
  expect(one?.quorum).toEqual({ needed: 2, approvals: 1 });
  expect((await answer('erin@example.test')).status).toBe('decided');
  let body = await status();
  for (let i = 0; i < 400 && body.status === 'RUNNING'; i++) {
    expect(body.gates).toEqual([]);
    await new Promise((r) => setTimeout(r, 25));
    body = await status();
  }
  expect(body.status).toBe('SUCCEEDED');
  expect(body.gates).toEqual([]);
});

/**
 * One version at a time, through `plangate serve`'s platform (the local API Gateway with the AWS
 * deployment's authorizers: SigV4 to submit, an approver's JWT to answer):
 * - gating v2 closes v1's waiting plan gate (GATE_SUPERSEDED in v1's journal); v1's link then
 *   refuses every answer (410, audited), its page says "Superseded by v2" and links to v2's gate,
 *   v1 ends rejected without running a step, and v2 is approved and runs;
 * - the same plan id and version with other content is refused (409, nothing stored), while the
 *   same content again is accepted as before.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListExecutionsCommand, ListStateMachineVersionsCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { queryEvents, readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { ApiClient } from '../support/api-client.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const ALICE = {
  accessKeyId: 'AKIDALICEVERSIONS',
  secretAccessKey: 'alice-versions-secret-0123',
  arn: 'arn:aws:iam::123456789012:user/alice',
};
const APPROVER = 'dana@example.test';
const issuer = new LocalIssuer();
const approval = { approvers: [APPROVER], allowAutoApprove: false };

let platform: LocalPlatform;
/** Every response is checked against the served OpenAPI document as it arrives. */
let api: ApiClient;
const gates: { notice: ApprovalNotice; link: string }[] = [];

beforeAll(async () => {
  const store = await mkdtemp(join(tmpdir(), 'plangate-versions-'));
  platform = await LocalPlatform.start({
    paths: storePaths(join(store, 'store')),
    cwd: store,
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
});

async function submit(plan: object): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await api.request('POST', '/plans', {
    signWith: ALICE,
    body: JSON.stringify(plan),
    headers: { 'content-type': 'application/json' },
  });
  return { status: response.status, body: response.json() };
}

const approverJson = (email = APPROVER) => ({
  'content-type': 'application/json',
  accept: 'application/json',
  authorization: `Bearer ${issuer.token(email)}`,
});

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const gateOf = (planId: string, version: number) =>
  waitFor(`the plan gate of ${planId} v${version}`, () =>
    gates.find(
      (g) => g.notice.kind === 'plan' && g.notice.plan.id === planId && g.notice.plan.version === version,
    ),
  );

const journal = (executionArn: string): Promise<JournalRecord[]> =>
  readEvents(platform.stack.data.clients.doc, platform.stack.data.tableNames.events, executionArn);

const finished = (executionArn: string) =>
  waitFor('the execution to complete', async () => {
    const events = await journal(executionArn);
    return events.some((e) => e.event === 'EXECUTION_COMPLETE') ? events : undefined;
  });

describe('one version at a time (plangate serve)', () => {
  it("gating v2 supersedes v1's waiting gate: v1 cannot be approved, says so and links to v2; v2 runs", async () => {
    const v1 = await submit(echoChainPlan('versioned', ['first', 'second'], { approval }));
    expect(v1.status, JSON.stringify(v1.body)).toBe(201);
    const v1Gate = await gateOf('versioned', 1);
    const v2 = await submit({
      ...echoChainPlan('versioned', ['first', 'second', 'third'], { approval }),
      version: 2,
    });
    expect(v2.status, JSON.stringify(v2.body)).toBe(201);
    const v2Gate = await gateOf('versioned', 2);
    const v1Arn = v1.body.executionArn as string;
    const v2Arn = v2.body.executionArn as string;

    // v1's journal says it was superseded, by which version, digest and execution.
    const superseded = await waitFor('GATE_SUPERSEDED in v1', async () =>
      (await journal(v1Arn)).find((e) => e.event === 'GATE_SUPERSEDED'),
    );
    expect(superseded.details).toEqual({
      gate: 'plan',
      by_version: 2,
      by_digest: v2Gate.notice.plan.digest,
      by_execution: v2Arn,
    });

    // Answering v1's link is refused (410 Gone), as an allowed approver and with v1's own digest.
    const v1Path = new URL(v1Gate.link).pathname;
    const answered = await api.request('POST', v1Path, {
      headers: approverJson(),
      body: JSON.stringify({ digest: v1Gate.notice.plan.digest, decision: 'APPROVE' }),
    });
    expect(answered.status).toBe(410);
    expect(answered.json().message).toBe('superseded by v2: review v2 instead');

    // v1 ends rejected ("superseded by v2") without running anything; the refusal is audited.
    const v1Events = await finished(v1Arn);
    expect(v1Events.filter((e) => e.event.startsWith('TASK_'))).toEqual([]);
    expect(v1Events.find((e) => e.event === 'EXECUTION_COMPLETE')?.details).toMatchObject({
      succeeded: false,
      reason: 'superseded by v2',
    });
    // In v1's journal, or, when v1 had already ended, in a stream of its own naming v1 (nothing
    // follows an execution's EXECUTION_COMPLETE).
    expect(v1Events.at(-1)?.event).toBe('EXECUTION_COMPLETE');
    const deps = platform.stack.journalDeps();
    const refusals = (
      await queryEvents(deps.dynamo, deps.tables.events, { index: 'byPlan', value: 'versioned' })
    ).filter(
      (e) => e.event === 'GATE_ANSWER_REFUSED' && (e.executionId === v1Arn || e.details.execution === v1Arn),
    );
    expect(refusals.map((e) => [e.details.reason, e.details.by])).toEqual([['superseded', APPROVER]]);
    expect(v1Events.some((e) => e.event === 'GATE_APPROVED')).toBe(false);

    // v1's page: opened as a person would, it says "Superseded by v2" and links to v2's gate.
    const page = await api.request('GET', v1Path);
    expect(page.status).toBe(410);
    const html = page.text;
    expect(html).toContain('<title>Superseded by v2</title>');
    expect(html).toContain(`href="${new URL(v2Gate.link).pathname}"`);

    // v2 is approved and runs.
    const approved = await api.request('POST', new URL(v2Gate.link).pathname, {
      headers: approverJson(),
      body: JSON.stringify({ digest: v2Gate.notice.plan.digest, decision: 'APPROVE' }),
    });
    expect(approved.status, approved.text).toBe(200);
    const v2Events = await finished(v2Arn);
    expect(v2Events.find((e) => e.event === 'EXECUTION_COMPLETE')?.details).toMatchObject({
      succeeded: true,
      summary: { completed: 3 },
    });
    expect(v2Events.some((e) => e.event === 'GATE_SUPERSEDED')).toBe(false);
  }, 60_000);

  it('refuses the same plan id and version with other content (409, nothing stored); the same content again is accepted', async () => {
    const plan = echoChainPlan('duplicated', ['only'], { approval });
    const first = await submit(plan);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const stored = (first.body.plan as { digest: string }).digest;
    const planCreated = async () =>
      (
        await queryEvents(platform.stack.data.clients.doc, platform.stack.data.tableNames.events, {
          index: 'byPlan',
          value: 'duplicated',
        })
      ).filter((e) => e.event === 'PLAN_CREATED');

    const other = await submit({ ...plan, objective: 'Echo one value, but this is other content' });
    expect(other.status).toBe(409);
    expect(other.body.error).toBe('plan version already submitted');
    expect(other.body.message).toContain(`digest ${stored}`);
    expect(other.body.message).toMatch(/this one has digest sha256:[0-9a-f]{64}/);
    expect(other.body.message).toContain('bump the version');
    // Nothing of it was stored: one PLAN_CREATED, with the first digest; one execution, one
    // published state machine version.
    expect((await planCreated()).map((e) => e.planDigest)).toEqual([stored]);
    const stateMachineArn = (first.body.stateMachineVersionArn as string).replace(/:\d+$/, '');
    const executions = async () =>
      (await platform.stack.sfn.send(new ListExecutionsCommand({ stateMachineArn }))).executions ?? [];
    expect((await executions()).map((e) => e.executionArn)).toEqual([first.body.executionArn]);
    expect(
      (await platform.stack.sfn.send(new ListStateMachineVersionsCommand({ stateMachineArn })))
        .stateMachineVersions,
    ).toHaveLength(1);

    // The same content again: accepted as before, on the same state machine version.
    const again = await submit(plan);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.plan).toEqual(first.body.plan);
    expect(again.body.stateMachineVersionArn).toBe(first.body.stateMachineVersionArn);
    expect((await planCreated()).map((e) => e.planDigest)).toEqual([stored, stored]);
    expect(await executions()).toHaveLength(2);
    // Both wait at their gates: the same version again closes nothing.
    await waitFor('both gates', () =>
      gates.filter((g) => g.notice.plan.id === 'duplicated').length === 2 ? true : undefined,
    );
  }, 60_000);
  it('of ten submissions of one id and version with ten different contents at once, exactly one is launched', async () => {
    const plan = echoChainPlan('raced', ['only'], { approval });
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => submit({ ...plan, objective: `Echo one value, content ${i}` })),
    );
    const launched = answers.filter((a) => a.status === 201);
    expect(answers.map((a) => a.status).sort()).toEqual([201, ...Array(9).fill(409)]);
    const [first] = launched as [(typeof launched)[number]];
    const digest = (first.body.plan as { digest: string }).digest;
    for (const refused of answers.filter((a) => a.status === 409))
      expect(refused.body.message).toContain(`already submitted with digest ${digest}`);
    const created = (
      await queryEvents(platform.stack.data.clients.doc, platform.stack.data.tableNames.events, {
        index: 'byPlan',
        value: 'raced',
      })
    ).filter((e) => e.event === 'PLAN_CREATED');
    expect(created.map((e) => e.planDigest)).toEqual([digest]);
    // The one launched waits at its gate before the platform stops (nothing of it still running).
    await waitFor('its gate', () => (gates.some((g) => g.notice.plan.id === 'raced') ? true : undefined));
  }, 60_000);
});

/**
 * One version at a time, on the gate Lambda and the approvals service against the local stack
 * (dynalite, the event bus, the real SDK clients; a recording endpoint stands in for Step
 * Functions' task-token API): gating a version closes the waiting plan gates of earlier ones,
 * an older version gated after a newer one is closed at once, a closed gate refuses every answer,
 * the timeout ladder hands the closing on, and an answer racing the closing either lands first
 * or is refused, never both.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { eventIdentity, journalFor } from '../../lib/runtime/deps.ts';
import { SUPERSEDE_DECIDER } from '../../lib/runtime/gate/approvals.ts';
import { type ApprovalNotice, approvalsFor, type GateDeps } from '../../lib/runtime/gate/gate.ts';
import { GateSupersededError } from '../../lib/runtime/gate/links.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { GateRequest } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';
import { type RecordingSfn, startRecordingSfn } from './recording-sfn.ts';

let dir: string;
let plane: LocalDataPlane;
let recorder: RecordingSfn;
const notices: ApprovalNotice[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-versions-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  recorder = await startRecordingSfn();
});
afterAll(async () => {
  await recorder.close();
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

const gateDeps = (): GateDeps => ({
  dynamo: plane.clients.doc,
  tables: plane.tableNames,
  events: plane.clients.events,
  tools: builtinRegistry(),
  cwd: dir,
  env: {},
  sfn: recorder.client,
  signingKey: 'k'.repeat(32),
  notify: async (n) => {
    notices.push(n);
  },
});
const approvals = () => approvalsFor(gateDeps());
const events = (executionId: string) => readEvents(plane.clients.doc, plane.tableNames.events, executionId);
const tokenOf = (executionId: string, rung = '') => `AQ${'t'.repeat(200)}-${executionId}${rung}`;
const digestOf = (version: number) => `sha256:v${version}`;

/** Gates `version` of `planId` in execution `executionId`; its notice, if anybody was asked. */
async function gate(
  planId: string,
  version: number,
  executionId: string,
  over: Partial<GateRequest> = {},
): Promise<ApprovalNotice | undefined> {
  const before = notices.length;
  await makeGate(gateDeps())({
    kind: 'plan',
    taskToken: tokenOf(executionId),
    plan: { id: planId, version, digest: digestOf(version) },
    executionId,
    approval: { approvers: ['ana', 'ben'], forbiddenApprovers: [], quorum: 1 },
    round: 1,
    timeoutSeconds: 3600,
    ...over,
  });
  // Requests in the same millisecond would tie on the byPlan index's sort key.
  await new Promise((r) => setTimeout(r, 3));
  return notices.length > before ? notices.at(-1) : undefined;
}

const approve = (linkId: string, version: number, by = 'ana') =>
  approvals().answer(linkId, { by, digest: digestOf(version), decision: { decision: 'APPROVE' } });

const sentTo = (executionId: string, rung = '') =>
  recorder.successes.filter((s) => s.taskToken === tokenOf(executionId, rung)).map((s) => s.output);

describe('one version at a time', () => {
  it("closes v1's waiting plan gate when v2 is gated: v1 is told REJECT, its link refuses and points to v2", async () => {
    const v1 = (await gate('shop', 1, 'shop-v1')) as ApprovalNotice;
    const v2 = (await gate('shop', 2, 'shop-v2')) as ApprovalNotice;
    expect(v2).toBeDefined();
    expect(sentTo('shop-v1')).toEqual([
      { decision: 'REJECT', by: SUPERSEDE_DECIDER, reason: 'superseded by v2' },
    ]);
    expect(sentTo('shop-v2')).toEqual([]);
    const refused = await approve(v1.approvalId, 1).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(GateSupersededError);
    expect(refused).toMatchObject({
      reason: 'superseded',
      message: 'superseded by v2: review v2 instead',
      supersededBy: { version: 2, digest: digestOf(2), executionId: 'shop-v2', linkId: v2.approvalId },
    });
    await expect(approvals().describe(v1.approvalId)).rejects.toBeInstanceOf(GateSupersededError);
    expect((await events('shop-v1')).map((e) => [e.event, e.details])).toEqual([
      [
        'GATE_APPROVAL_REQUESTED',
        {
          plan_id: 'shop',
          gate: 'plan',
          round: 1,
          opened: expect.objectContaining({ link_id: v1.approvalId }),
        },
      ],
      ['GATE_SUPERSEDED', { gate: 'plan', by_version: 2, by_digest: digestOf(2), by_execution: 'shop-v2' }],
      [
        'GATE_ANSWER_REFUSED',
        { gate: 'plan', reason: 'superseded', message: 'superseded by v2: review v2 instead', by: 'ana' },
      ],
    ]);
    // v2 waits, and is answered as usual.
    expect(await approve(v2.approvalId, 2)).toMatchObject({ status: 'decided' });
  });

  it('closes an older version gated after a newer one at once, asking nobody; the same version again is left open', async () => {
    const v2 = (await gate('cart', 2, 'cart-v2')) as ApprovalNotice;
    expect(await gate('cart', 1, 'cart-v1-late')).toBeUndefined();
    expect(sentTo('cart-v1-late')).toEqual([
      { decision: 'REJECT', by: SUPERSEDE_DECIDER, reason: 'superseded by v2' },
    ]);
    expect((await events('cart-v1-late')).find((e) => e.event === 'GATE_SUPERSEDED')?.details).toMatchObject({
      by_version: 2,
      by_execution: 'cart-v2',
    });
    // The same version (and content) gated in another execution closes nothing.
    const again = await gate('cart', 2, 'cart-v2-again');
    expect(again).toBeDefined();
    expect(sentTo('cart-v2')).toEqual([]);
    expect(await approve(v2.approvalId, 2)).toMatchObject({ status: 'decided' });
  });

  it('closes a gate short of its quorum (the votes so far do not carry over); leaves an approved version and its step gates alone', async () => {
    const quorum = { approvers: ['ana', 'ben'], forbiddenApprovers: [], quorum: 2 };
    const v1 = (await gate('quorum', 1, 'quorum-v1', { approval: quorum })) as ApprovalNotice;
    expect(await approve(v1.approvalId, 1)).toEqual({ status: 'pending', votes: 1 });
    await gate('quorum', 2, 'quorum-v2', { approval: quorum });
    await expect(approve(v1.approvalId, 1, 'ben')).rejects.toBeInstanceOf(GateSupersededError);
    expect(sentTo('quorum-v1')).toEqual([
      { decision: 'REJECT', by: SUPERSEDE_DECIDER, reason: 'superseded by v2' },
    ]);

    // v1 of another plan approved and running, waiting at a step gate: v2's gate leaves it alone.
    const approved = (await gate('running', 1, 'running-v1')) as ApprovalNotice;
    await approve(approved.approvalId, 1);
    const step = (await gate('running', 1, 'running-v1', {
      kind: 'step',
      stepId: 'deploy',
      taskToken: tokenOf('running-v1', '-step'),
    })) as ApprovalNotice;
    await gate('running', 2, 'running-v2');
    expect((await events('running-v1')).some((e) => e.event === 'GATE_SUPERSEDED')).toBe(false);
    expect(await approve(step.approvalId, 1)).toMatchObject({ status: 'decided' });
  });

  it("hands the closing on at the next rung of v1's timeout ladder (its token was dead when v2 was gated)", async () => {
    const ladder = { approvers: ['ana'], forbiddenApprovers: [], quorum: 1 };
    await gate('ladder', 1, 'ladder-v1', { approval: ladder });
    await gate('ladder', 2, 'ladder-v2', { approval: ladder });
    for (const stage of ['remind', 'escalate', 'expire'] as const) {
      const before = notices.length;
      await makeGate(gateDeps())({
        kind: 'plan',
        taskToken: tokenOf('ladder-v1', `-${stage}`),
        plan: { id: 'ladder', version: 1, digest: digestOf(1) },
        executionId: 'ladder-v1',
        approval: ladder,
        round: 1,
        timeoutSeconds: 3600,
        ladder: { stage, level: 1 },
      });
      expect(notices.length, stage).toBe(before);
      expect(sentTo('ladder-v1', `-${stage}`), stage).toEqual([
        { decision: 'REJECT', by: SUPERSEDE_DECIDER, reason: 'superseded by v2' },
      ]);
    }
    expect((await events('ladder-v1')).map((e) => e.event)).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_SUPERSEDED',
    ]);
  });

  it("closes v1's escalated gate: when v2 is gated later, and at once when v2 was gated while v1's ladder climbed", async () => {
    const ladder = { approvers: ['ana'], forbiddenApprovers: [], quorum: 1 };
    const escalate = (planId: string) =>
      gate(planId, 1, `${planId}-v1`, {
        approval: ladder,
        taskToken: tokenOf(`${planId}-v1`, '-escalate'),
        ladder: { stage: 'escalate', level: 1 },
      });
    const rejected = [{ decision: 'REJECT', by: SUPERSEDE_DECIDER, reason: 'superseded by v2' }];

    // The ladder hands v1 to the next group; v2 gated later closes that group's gate.
    await gate('escalated', 1, 'escalated-v1', { approval: ladder });
    const next = (await escalate('escalated')) as ApprovalNotice;
    expect(next.kind).toBe('plan');
    await gate('escalated', 2, 'escalated-v2', { approval: ladder });
    expect(sentTo('escalated-v1', '-escalate')).toEqual(rejected);
    await expect(approve(next.approvalId, 1)).rejects.toBeInstanceOf(GateSupersededError);

    // v2's request is journaled but its pass has not seen v1 (the index lagged): the escalation
    // that opens v1's next gate closes it itself, and asks nobody.
    await gate('lagging', 1, 'lagging-v1', { approval: ladder });
    await journalFor(gateDeps()).append({
      ...eventIdentity({
        executionId: 'lagging-v2',
        plan: { id: 'lagging', version: 2, digest: digestOf(2) },
      }),
      event: 'GATE_APPROVAL_REQUESTED',
      details: { plan_id: 'lagging', gate: 'plan', round: 1 },
    });
    expect(await escalate('lagging')).toBeUndefined();
    expect(sentTo('lagging-v1', '-escalate')).toEqual(rejected);
    expect((await events('lagging-v1')).map((e) => e.event)).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_ESCALATED',
      'GATE_SUPERSEDED',
    ]);
  });

  it('lets exactly one of an answer and a later version closing the gate win, every time', async () => {
    const outcomes = { approved: 0, superseded: 0, both: 0, neither: 0 };
    for (let i = 0; i < 20; i++) {
      const planId = `race-${i}`;
      const v1 = (await gate(planId, 1, `${planId}-v1`)) as ApprovalNotice;
      const [answered] = await Promise.allSettled([
        // Staggered, so both orders happen.
        new Promise((r) => setTimeout(r, (i % 10) * 12)).then(() => approve(v1.approvalId, 1)),
        gate(planId, 2, `${planId}-v2`),
      ]);
      const journal = (await events(`${planId}-v1`)).map((e) => e.event);
      const approved = answered.status === 'fulfilled' && journal.includes('GATE_APPROVED');
      const superseded =
        answered.status === 'rejected' &&
        answered.reason instanceof GateSupersededError &&
        journal.includes('GATE_SUPERSEDED');
      if (approved && superseded) outcomes.both++;
      else if (approved) outcomes.approved++;
      else if (superseded) outcomes.superseded++;
      else outcomes.neither++;
      // Whoever won, v1's execution was told exactly one decision.
      expect(sentTo(`${planId}-v1`)).toHaveLength(1);
      expect(journal.includes('GATE_APPROVED') && journal.includes('GATE_SUPERSEDED')).toBe(false);
    }
    expect(outcomes).toMatchObject({ both: 0, neither: 0 });
    expect(outcomes.approved + outcomes.superseded).toBe(20);
  });
});

/**
 * Every vote counts for the content it saw, end to end: `plangate serve` (the local stack behind
 * the same approvals API as on AWS, the approver named by the loopback identity header), plans
 * submitted to POST /plans, gates answered through POST /approvals/{link id} as scripts do, the
 * journal read back through the Plans API and the auditor's CLI on the store.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { ApiClient } from '../support/api-client.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { CliRun, verifyChain, workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

/** A one-step shell plan gated by `approval`; its command writes out.txt in serve's directory. */
function shellPlan(id: string, approval: Record<string, unknown>, command = 'echo original > out.txt') {
  return {
    id,
    version: 1,
    objective: 'Write out.txt once approved',
    sizePolicy: { minSteps: 1 },
    approval: { allowAutoApprove: false, ...approval },
    steps: [
      {
        id: 'write',
        description: 'Write out.txt',
        tool: 'shell',
        args: { command },
        contract: { kind: 'command', command: 'test -f out.txt' },
      },
    ],
  };
}

/** One `plangate serve` on its own store, and what the tests do through its APIs. */
interface Served {
  readonly store: string;
  /** serve's cwd: where plan code works (never the store, which plan code may not see). */
  readonly workspace: string;
  readonly serve: ServeProcess;
  /** Every response is checked against the served OpenAPI document as it arrives. */
  readonly api: ApiClient;
}

async function startServed(): Promise<Served> {
  const store = await mkdtemp(join(tmpdir(), 'plangate-votes-'));
  const workspace = await workDir();
  const serve = startServe(['--identity', 'header', '--store', store, '--time-scale', '0.01'], workspace);
  return { store, workspace, serve, api: new ApiClient(await serve.line(() => true)) };
}

let shared: Served;
beforeAll(async () => {
  shared = await startServed();
}, 60_000);
afterAll(async () => {
  await shared?.serve.stop();
});

const as = (user: string, init: { body?: string; headers?: Record<string, string> } = {}) => ({
  ...init,
  headers: { 'content-type': 'application/json', 'x-plangate-user': user, ...init.headers },
});

/** Submits a plan as `carol` and returns its execution and the link id its plan gate printed. */
async function submit(
  { api, serve }: Served,
  plan: ReturnType<typeof shellPlan>,
): Promise<{ executionArn: string; linkId: string }> {
  const res = await api.request('POST', '/plans', as('carol', { body: JSON.stringify(plan) }));
  expect(res.status, res.text).toBe(201);
  const executionArn = res.json().executionArn as string;
  const line = await serve.line((l) => l.startsWith(`gate plan of ${plan.id} v1 waits: `));
  return { executionArn, linkId: decodeURIComponent(line.split('/approvals/')[1] as string) };
}

/** The gate as the approvals API shows it to a script. */
async function gateOf(
  { api }: Served,
  linkId: string,
): Promise<Record<string, unknown> & { planDigest: string }> {
  const res = await api.request('GET', `/approvals/${encodeURIComponent(linkId)}`, {
    headers: { accept: 'application/json' },
  });
  expect(res.status).toBe(200);
  return res.json() as Record<string, unknown> & { planDigest: string };
}

/** POST /approvals/{link id} as `user`: the status and the JSON body. */
async function answer({ api }: Served, linkId: string, user: string, body: Record<string, unknown>) {
  const res = await api.request(
    'POST',
    `/approvals/${encodeURIComponent(linkId)}`,
    as(user, { body: JSON.stringify(body), headers: { accept: 'application/json' } }),
  );
  return { status: res.status, body: res.json() };
}

async function eventsOf({ api }: Served, executionArn: string): Promise<JournalRecord[]> {
  const res = await api.request('GET', `/executions/${encodeURIComponent(executionArn)}/events`, as('carol'));
  expect(res.status).toBe(200);
  return (res.json() as { events: JournalRecord[] }).events;
}

async function untilEvent(
  served: Served,
  executionArn: string,
  type: string,
  count = 1,
): Promise<JournalRecord[]> {
  for (let i = 0; i < 600; i++) {
    const events = await eventsOf(served, executionArn);
    if (events.filter((e) => e.event === type).length >= count) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${executionArn}: no ${count} × ${type}`);
}

describe('votes, quorum and modifications through the approvals API', { timeout: 120_000 }, () => {
  it('the quorum-modification attack: an approval does not carry over to content modified after it', async () => {
    // Its own serve: the auditor reads the store once serve has let it go.
    const served = await startServed();
    const { store, workspace } = served;
    const plan = shellPlan('votes-attack', { approvers: ['alice', 'bob'], quorum: 2 });
    const { executionArn, linkId } = await submit(served, plan);
    const { planDigest } = await gateOf(served, linkId);

    expect(await answer(served, linkId, 'alice', { digest: planDigest, decision: 'APPROVE' })).toEqual({
      status: 200,
      body: { status: 'pending', votes: 1 },
    });
    const modify = {
      digest: planDigest,
      decision: 'APPROVE_WITH_MODIFICATIONS',
      argOverrides: { write: { command: 'echo modified > out.txt' } },
    };
    const modified = await answer(served, linkId, 'bob', modify);
    expect(modified.status).toBe(200);
    expect(modified.body).toMatchObject({ status: 'modified', revision: 1 });
    const revisionDigest = modified.body.digest as string;
    expect(revisionDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(revisionDigest).not.toBe(planDigest);

    // Nothing runs on alice's approval of the original plus bob's modification.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await eventsOf(served, executionArn)).map((e) => e.event)).not.toContain('TASK_STARTED');
    const gate = await gateOf(served, linkId);
    expect(gate).toMatchObject({
      status: 'pending',
      planDigest,
      votes: 0,
      revision: {
        number: 1,
        digest: revisionDigest,
        by: 'bob',
        skipSteps: [],
        argOverrides: { write: { command: 'echo modified > out.txt' } },
      },
    });

    // An answer for the content as first shown is refused, and says why.
    const stale = await answer(served, linkId, 'alice', { digest: planDigest, decision: 'APPROVE' });
    expect(stale.status).toBe(409);
    expect(stale.body.message).toBe(
      `the plan was modified by bob (revision 1, ${revisionDigest}): review it again`,
    );
    // The revision needs the full quorum: alice's approval of it is not enough.
    expect(await answer(served, linkId, 'alice', { digest: revisionDigest, decision: 'APPROVE' })).toEqual({
      status: 200,
      body: { status: 'pending', votes: 1 },
    });
    await new Promise((r) => setTimeout(r, 500));
    expect((await eventsOf(served, executionArn)).map((e) => e.event)).not.toContain('TASK_STARTED');
    const decided = await answer(served, linkId, 'bob', { digest: revisionDigest, decision: 'APPROVE' });
    expect(decided).toMatchObject({
      status: 200,
      body: {
        status: 'decided',
        decision: {
          decision: 'APPROVE_WITH_MODIFICATIONS',
          by: 'alice, bob',
          skipSteps: [],
          argOverrides: { write: { command: 'echo modified > out.txt' } },
        },
      },
    });

    const events = await untilEvent(served, executionArn, 'EXECUTION_COMPLETE');
    expect(verifyChain(events).ok).toBe(true);
    expect(events.find((e) => e.event === 'EXECUTION_COMPLETE')?.details.succeeded).toBe(true);
    expect((await readFile(join(workspace, 'out.txt'), 'utf8')).trim()).toBe('modified');
    const gateEvents = events
      .filter((e) => e.event.startsWith('GATE_') && e.event !== 'GATE_APPROVAL_REQUESTED')
      .map((e) => [e.event, e.details]);
    expect(gateEvents).toEqual([
      ['GATE_VOTE', { gate: 'plan', voter: 'alice', decision: 'APPROVE', digest: planDigest }],
      [
        'GATE_VOTE',
        {
          gate: 'plan',
          voter: 'bob',
          decision: 'APPROVE_WITH_MODIFICATIONS',
          digest: planDigest,
          modifications: { skipSteps: [], argOverrides: { write: { command: 'echo modified > out.txt' } } },
        },
      ],
      [
        'GATE_PLAN_MODIFIED',
        {
          gate: 'plan',
          by: 'bob',
          from: planDigest,
          to: revisionDigest,
          revision: 1,
          skipSteps: [],
          argOverrides: { write: { command: 'echo modified > out.txt' } },
        },
      ],
      [
        'GATE_ANSWER_REFUSED',
        {
          gate: 'plan',
          reason: 'digest-mismatch',
          message: `the plan was modified by bob (revision 1, ${revisionDigest}): review it again`,
          by: 'alice',
        },
      ],
      ['GATE_VOTE', { gate: 'plan', voter: 'alice', decision: 'APPROVE', digest: revisionDigest }],
      ['GATE_VOTE', { gate: 'plan', voter: 'bob', decision: 'APPROVE', digest: revisionDigest }],
      [
        'GATE_APPROVED',
        {
          gate: 'plan',
          approver: 'alice, bob',
          approvers: ['alice', 'bob'],
          digest: revisionDigest,
          modifications: { skipSteps: [], argOverrides: { write: { command: 'echo modified > out.txt' } } },
          // The approval binds the definition pinned at submission.
          definition_hash: pinnedDefinition(events),
        },
      ],
    ]);

    // The auditor finds every vote of the first voter, and the decision naming her.
    expect(await served.serve.stop()).toBe(0);
    const audit = new CliRun(['audit', 'query', '--approver', 'alice', '--store', store, '--json'], store);
    expect(await audit.exited, audit.stderr).toBe(0);
    const found = audit.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as JournalRecord)
      .filter((e) => e.executionId === executionArn)
      .map((e) => [e.event, e.details.digest]);
    expect(found).toEqual([
      ['GATE_VOTE', planDigest],
      ['GATE_VOTE', revisionDigest],
      ['GATE_APPROVED', revisionDigest],
    ]);
  });

  it('a modification shows what it runs, marked by the same analysis; a destructive one needs the step to have its own gate', async () => {
    const plan = shellPlan('votes-destructive-mod', { approvers: ['alice', 'bob'], quorum: 2 });
    const { executionArn, linkId } = await submit(shared, plan);
    const { planDigest } = await gateOf(shared, linkId);
    const modify = (command: string, digest = planDigest) => ({
      digest,
      decision: 'APPROVE_WITH_MODIFICATIONS',
      argOverrides: { write: { command } },
    });

    // `write` has no gate of its own: a modification cannot make it destructive.
    const sneaky = await answer(shared, linkId, 'bob', modify('"rm" -rf ./data'));
    expect(sneaky.status).toBe(400);
    expect(sneaky.body.message).toMatch(
      /^decision\.argOverrides\.write: .*rm.*: a destructive command needs the step's own gate \(requiresApproval\), which "write" does not have; submit a new version of the plan instead$/,
    );
    expect(await gateOf(shared, linkId)).toMatchObject({ status: 'pending', votes: 0 });
    expect((await gateOf(shared, linkId)).revision).toBeUndefined();

    // A harmless change: every channel shows the new command, the one it replaces and who changed it.
    const modified = await answer(shared, linkId, 'bob', modify('echo changed > out.txt'));
    expect(modified.body).toMatchObject({ status: 'modified', revision: 1 });
    const gate = await gateOf(shared, linkId);
    expect((gate.view as { steps: unknown[] }).steps[0]).toMatchObject({
      id: 'write',
      call: { form: 'command', text: 'echo changed > out.txt' },
      risks: { destructive: [], ownGate: false },
      revised: { revision: 1, by: 'bob', replaces: { form: 'command', text: 'echo original > out.txt' } },
    });
    const { html } = await openApprovalPage(`${shared.api.baseUrl}/approvals/${encodeURIComponent(linkId)}`);
    expect(html).toContain('echo changed &gt; out.txt');
    expect(html).toContain('changed by revision 1 (bob)');
    // Changing it further from the revision is checked on the revision's content as well.
    const worse = await answer(
      shared,
      linkId,
      'alice',
      modify('find . -delete', modified.body.digest as string),
    );
    expect(worse.status).toBe(400);

    expect(
      await answer(shared, linkId, 'alice', {
        digest: modified.body.digest,
        decision: 'REJECT',
        reason: 'not today',
      }),
    ).toMatchObject({ status: 200 });
    const events = await untilEvent(shared, executionArn, 'EXECUTION_COMPLETE');
    expect(
      events.filter((e) => e.event === 'GATE_ANSWER_REFUSED').map((e) => [e.details.by, e.details.reason]),
    ).toEqual([
      ['bob', 'invalid'],
      ['alice', 'invalid'],
    ]);
    expect(events.map((e) => e.event)).not.toContain('TASK_STARTED');
  });

  it('a destructive modification of a step with its own gate is marked destructive at the plan gate', async () => {
    const base = shellPlan('votes-gated-mod', { approvers: ['alice', 'bob'], quorum: 1 });
    const plan = { ...base, steps: base.steps.map((s) => ({ ...s, requiresApproval: true })) };
    const { linkId } = await submit(shared, plan);
    const { planDigest } = await gateOf(shared, linkId);
    const modified = await answer(shared, linkId, 'bob', {
      digest: planDigest,
      decision: 'APPROVE_WITH_MODIFICATIONS',
      argOverrides: { write: { command: 'rm -rf ./data' } },
    });
    expect(modified.body).toMatchObject({ status: 'modified', revision: 1 });
    const step = ((await gateOf(shared, linkId)).view as { steps: { risks: { destructive: string[] } }[] })
      .steps[0];
    expect(step?.risks.destructive.join(' ')).toContain('rm -rf ./data');
    expect(
      await answer(shared, linkId, 'alice', {
        digest: modified.body.digest,
        decision: 'REJECT',
        reason: 'no',
      }),
    ).toMatchObject({ status: 200 });
  });

  it('a plain approval by a quorum: every vote its own event, the decision names every approver', async () => {
    const plan = shellPlan('votes-plain', { approvers: ['alice', 'bob'], quorum: 2 });
    const { executionArn, linkId } = await submit(shared, plan);
    const { planDigest } = await gateOf(shared, linkId);
    await answer(shared, linkId, 'alice', {
      digest: planDigest,
      decision: 'APPROVE',
      comment: 'looks right',
    });
    expect(
      (await answer(shared, linkId, 'bob', { digest: planDigest, decision: 'APPROVE' })).body,
    ).toMatchObject({
      status: 'decided',
      decision: { decision: 'APPROVE', by: 'alice, bob' },
    });
    const events = await untilEvent(shared, executionArn, 'EXECUTION_COMPLETE');
    expect(
      events.filter((e) => e.event === 'GATE_VOTE' || e.event === 'GATE_APPROVED').map((e) => e.details),
    ).toEqual([
      { gate: 'plan', voter: 'alice', decision: 'APPROVE', digest: planDigest, comment: 'looks right' },
      { gate: 'plan', voter: 'bob', decision: 'APPROVE', digest: planDigest },
      {
        gate: 'plan',
        approver: 'alice, bob',
        approvers: ['alice', 'bob'],
        digest: planDigest,
        definition_hash: pinnedDefinition(events),
      },
    ]);
  });

  it('a clarification request says who asked', async () => {
    const plan = shellPlan('votes-question', { approvers: ['alice'] });
    const { executionArn, linkId } = await submit(shared, plan);
    const { planDigest } = await gateOf(shared, linkId);
    const asked = await answer(shared, linkId, 'alice', {
      digest: planDigest,
      decision: 'ASK_FOR_CLARIFICATION',
      question: 'Why out.txt?',
    });
    expect(asked.body).toMatchObject({ status: 'decided' });
    const events = await untilEvent(shared, executionArn, 'GATE_CLARIFICATION_REQUESTED');
    expect(events.find((e) => e.event === 'GATE_CLARIFICATION_REQUESTED')?.details).toEqual({
      gate: 'plan',
      question: 'Why out.txt?',
      asked_by: 'alice',
    });
  });

  it('journals every refused answer of a 20-way race, whatever the timing (3 rounds)', async () => {
    for (const round of [1, 2, 3]) {
      const { executionArn, linkId } = await submit(shared, shellPlan(`votes-race-${round}`, {}));
      const { planDigest } = await gateOf(shared, linkId);
      const users = Array.from({ length: 20 }, (_, i) => `racer${i + 1}`);
      const results = await Promise.all(
        users.map((user) => answer(shared, linkId, user, { digest: planDigest, decision: 'APPROVE' })),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status === 409)).toHaveLength(19);
      const events = await untilEvent(shared, executionArn, 'EXECUTION_COMPLETE');
      const refused = events.filter((e) => e.event === 'GATE_ANSWER_REFUSED');
      expect(refused, `round ${round}`).toHaveLength(19);
      const winner = events.find((e) => e.event === 'GATE_APPROVED')?.details.approver;
      expect(new Set([...refused.map((e) => e.details.by), winner])).toEqual(new Set(users));
      expect(verifyChain(events).ok).toBe(true);
    }
  });
});

/** The definition hash PLAN_CREATED pinned (what the approval must bind). */
function pinnedDefinition(events: readonly JournalRecord[]): string {
  const pinned = (
    events.find((e) => e.event === 'PLAN_CREATED')?.details.integrity as { definition_hash?: string }
  )?.definition_hash;
  expect(pinned).toMatch(/\S/);
  return pinned as string;
}

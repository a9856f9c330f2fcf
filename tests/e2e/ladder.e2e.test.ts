// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are literal `${...}` strings
/**
 * The timeout ladder keeps the plan's state: gates answered after their reminder, or by the group
 * they were escalated to, on `plangate serve` (the embedded engine through the local stack) with
 * the answers posted to the approvals API, as a script or the page would. Proven twice: with the
 * engine's clock sped up (--time-scale 0.01) and at the real time scale (seconds-long ladders).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

const SUBMITTER = 'sam';

/**
 * prepare → deploy (its own step gate) → report, and `audit` beside them (it depends on nothing):
 * deploy reads prepare's output, so a lost ledger would block it.
 */
function ladderPlan(id: string, approval: Record<string, unknown>, deploy: Record<string, unknown> = {}) {
  return {
    id,
    version: 1,
    objective: 'Deploy a prepared value once a person approves the deployment',
    sizePolicy: { minSteps: 1 },
    approval: { allowAutoApprove: false, approvers: ['alice'], ...approval },
    steps: [
      {
        id: 'prepare',
        description: 'Prepare the value to deploy',
        tool: 'echo',
        args: { value: 'v42' },
        outputs: ['value'],
        contract: { kind: 'assert', expression: 'output.value = "v42"' },
      },
      {
        id: 'deploy',
        description: 'Deploy the prepared value',
        dependsOn: ['prepare'],
        requiresApproval: true,
        tool: 'echo',
        args: { value: '${steps.prepare.value}' },
        outputs: ['value'],
        contract: { kind: 'assert', expression: 'output.value = "v42"' },
        ...deploy,
      },
      {
        id: 'report',
        description: 'Report the deployed value',
        dependsOn: ['deploy'],
        tool: 'echo',
        args: { message: 'deployed ${steps.deploy.value}' },
        outputs: ['message'],
        contract: { kind: 'assert', expression: 'output.message = "deployed v42"' },
      },
      {
        id: 'audit',
        description: 'Record that a deployment was planned',
        tool: 'echo',
        args: { message: 'noted' },
        outputs: ['message'],
        contract: { kind: 'assert', expression: 'output.message = "noted"' },
      },
    ],
  };
}

/** One `plangate serve` (header identity) at a time scale, and what a test does with it. */
class Platform {
  private constructor(
    readonly serve: ServeProcess,
    readonly url: string,
  ) {}

  static async start(timeScale: string): Promise<Platform> {
    const store = await mkdtemp(join(tmpdir(), 'plangate-ladder-'));
    const serve = startServe(
      ['--identity', 'header', '--store', store, '--time-scale', timeScale],
      await workDir(),
    );
    return new Platform(serve, await serve.line(() => true));
  }

  private call(path: string, by: string, init: RequestInit = {}): Promise<Response> {
    return fetch(`${this.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-plangate-user': by },
    });
  }

  /** Submits the plan as SUBMITTER; its execution ARN. */
  async submit(plan: ReturnType<typeof ladderPlan>): Promise<string> {
    const res = await this.call('/plans', SUBMITTER, { method: 'POST', body: JSON.stringify(plan) });
    expect(res.status, await res.clone().text()).toBe(201);
    return ((await res.json()) as { executionArn: string }).executionArn;
  }

  /** The link of the `nth` (1-based) notice of a gate: the request, a reminder, an escalation. */
  async notice(planId: string, gate: 'plan' | string, nth: number): Promise<string> {
    const prefix = `gate ${gate === 'plan' ? 'plan' : `step ${gate}`} of ${planId} v1 waits: `;
    await this.serve.line(() => this.serve.lines.filter((l) => l.startsWith(prefix)).length >= nth);
    return (this.serve.lines.filter((l) => l.startsWith(prefix))[nth - 1] as string).slice(prefix.length);
  }

  /** Answers through the approvals API as `by`, for the digest the gate shows. */
  async answer(link: string, by: string, decision: Record<string, unknown>): Promise<void> {
    const path = new URL(link).pathname;
    const gate = (await (await this.call(path, by)).json()) as { planDigest: string };
    const res = await this.call(path, by, {
      method: 'POST',
      body: JSON.stringify({ digest: gate.planDigest, ...decision }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }

  async events(executionArn: string): Promise<JournalRecord[]> {
    const res = await this.call(`/executions/${encodeURIComponent(executionArn)}/events`, SUBMITTER);
    return ((await res.json()) as { events: JournalRecord[] }).events;
  }

  /** Waits until the journal has `event` (of `taskId`); returns the journal then. */
  async until(executionArn: string, event: string, taskId?: string, timeoutMs = 40_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const events = await this.events(executionArn);
      if (events.some((e) => e.event === event && (taskId === undefined || e.task_id === taskId)))
        return events;
      if (Date.now() > deadline)
        throw new Error(`${event} ${taskId ?? ''} not seen: ${events.map((e) => e.event).join(', ')}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  /** The whole journal once EXECUTION_COMPLETE is in it, checked (hash chain, seed order). */
  async finished(executionArn: string): Promise<JournalRecord[]> {
    const events = await this.until(executionArn, 'EXECUTION_COMPLETE');
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(seedOrderProblems(events)).toEqual([]);
    return events;
  }
}

const of = (events: readonly JournalRecord[], taskId: string) =>
  events.filter((e) => e.task_id === taskId).map((e) => e.event);
const completion = (events: readonly JournalRecord[]) =>
  events.find((e) => e.event === 'EXECUTION_COMPLETE')?.details;

/** Every step ran and the run succeeded: the ledger reached deploy and report intact. */
function expectRanThrough(events: readonly JournalRecord[]) {
  for (const id of ['prepare', 'deploy', 'report', 'audit'])
    expect(of(events, id), id).toEqual(expect.arrayContaining(['TASK_STARTED', 'TASK_COMPLETED']));
  expect(events.map((e) => e.event)).not.toContain('TASK_BLOCKED');
  expect(events.map((e) => e.event)).not.toContain('TASK_SKIPPED');
  expect(completion(events)).toMatchObject({
    succeeded: true,
    summary: { completed: 4, failed: 0, skipped: 0 },
  });
}

/** The cases, on a platform at some time scale; `s` is the ladder's unit in plan seconds. */
function ladderCases(scale: string, s: { remind: number; timeout: number }) {
  let platform: Platform;
  beforeAll(async () => {
    platform = await Platform.start(scale);
  });
  afterAll(async () => {
    expect(await platform.serve.stop()).toBe(0);
  });
  const policy = { timeoutSeconds: s.timeout, remindAfterSeconds: s.remind };
  let plans = 0;
  const planId = (name: string) => `ladder-${name}-${++plans}`;

  it('a step gate approved after its reminder runs its step, and its dependents run', async () => {
    const id = planId('remind');
    const arn = await platform.submit(ladderPlan(id, policy));
    await platform.answer(await platform.notice(id, 'plan', 1), 'alice', { decision: 'APPROVE' });
    // The reminder's notice: the same gate, asked again after remindAfterSeconds.
    const link = await platform.notice(id, 'deploy', 2);
    await platform.until(arn, 'GATE_REMINDED', 'deploy');
    await platform.answer(link, 'alice', { decision: 'APPROVE' });
    const events = await platform.finished(arn);
    expect(of(events, 'deploy')).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_REMINDED',
      // Each vote is its own event, then the decision it completed.
      'GATE_VOTE',
      'GATE_APPROVED',
      'TASK_STARTED',
      'TASK_COMPLETED',
    ]);
    expect(
      events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'report')?.details.result,
    ).toEqual({
      message: 'deployed v42',
    });
    expectRanThrough(events);
  });

  it('a step gate approved by the group it was escalated to runs its step', async () => {
    const id = planId('escalate');
    const arn = await platform.submit(ladderPlan(id, { ...policy, escalateTo: [{ approvers: ['carol'] }] }));
    await platform.answer(await platform.notice(id, 'plan', 1), 'alice', { decision: 'APPROVE' });
    // Asked, reminded, then handed to carol (a new gate, a new link).
    const escalated = await platform.notice(id, 'deploy', 3);
    await platform.until(arn, 'GATE_ESCALATED', 'deploy');
    await platform.answer(escalated, 'carol', { decision: 'APPROVE' });
    const events = await platform.finished(arn);
    expect(of(events, 'deploy')).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_REMINDED',
      'GATE_ESCALATED',
      'GATE_VOTE',
      'GATE_APPROVED',
      'TASK_STARTED',
      'TASK_COMPLETED',
    ]);
    expect(events.find((e) => e.event === 'GATE_APPROVED' && e.task_id === 'deploy')?.details.approver).toBe(
      'carol',
    );
    expectRanThrough(events);
  });

  it('a plan gate approved after its reminder runs the plan with its ledger intact', async () => {
    const id = planId('plan-remind');
    const arn = await platform.submit(ladderPlan(id, policy));
    const link = await platform.notice(id, 'plan', 2);
    await platform.until(arn, 'GATE_REMINDED');
    await platform.answer(link, 'alice', { decision: 'APPROVE' });
    await platform.answer(await platform.notice(id, 'deploy', 1), 'alice', { decision: 'APPROVE' });
    const events = await platform.finished(arn);
    expect(events.slice(0, 5).map((e) => e.event)).toEqual([
      'PLAN_CREATED',
      'GATE_APPROVAL_REQUESTED',
      'GATE_REMINDED',
      'GATE_VOTE',
      'GATE_APPROVED',
    ]);
    expectRanThrough(events);
  });

  it('a critical step whose gate nobody answers is rejected by the timeout: the run fails, nothing says an approver skipped it', async () => {
    const id = planId('expire');
    const arn = await platform.submit(ladderPlan(id, policy));
    await platform.answer(await platform.notice(id, 'plan', 1), 'alice', { decision: 'APPROVE' });
    const events = await platform.finished(arn);
    expect(of(events, 'deploy')).toEqual(['GATE_APPROVAL_REQUESTED', 'GATE_REMINDED', 'GATE_REJECTED']);
    expect(events.find((e) => e.event === 'GATE_REJECTED')?.details).toMatchObject({
      gate: 'step',
      approver: 'plangate-timeout',
      reason: 'timed out',
    });
    expect(of(events, 'report')).toEqual([]);
    expect(JSON.stringify(events)).not.toContain('skipped by an approver');
    expect(completion(events)).toMatchObject({
      succeeded: false,
      error: 'Plangate.CriticalStepSkipped',
      reason: expect.stringContaining('timed out: nobody approved in time'),
    });
  });

  it('a non-critical step whose gate nobody answers is skipped as "timed out", its dependent blocked', async () => {
    const id = planId('expire-optional');
    const arn = await platform.submit(ladderPlan(id, policy, { critical: false }));
    await platform.answer(await platform.notice(id, 'plan', 1), 'alice', { decision: 'APPROVE' });
    const events = await platform.finished(arn);
    expect(of(events, 'deploy')).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_REMINDED',
      'GATE_REJECTED',
      'TASK_SKIPPED',
    ]);
    expect(events.find((e) => e.event === 'TASK_SKIPPED')?.details.reason).toBe(
      'timed out: nobody approved in time',
    );
    expect(events.find((e) => e.event === 'TASK_BLOCKED')).toMatchObject({
      task_id: 'report',
      details: { blocked_by: ['deploy'] },
    });
    // A step nobody approved did not run, and it was not critical: the rest of the plan stands.
    expect(completion(events)).toMatchObject({
      succeeded: true,
      summary: { completed: 2, failed: 0, skipped: 2 },
    });
  });
}

describe.concurrent('timeout ladder on the engine sped up (--time-scale 0.01)', { timeout: 60_000 }, () => {
  // 1 s of plan time is 10 ms: reminded after 3 s, 9 s per group.
  ladderCases('0.01', { remind: 300, timeout: 900 });
});

describe.concurrent('timeout ladder at the real time scale', { timeout: 60_000 }, () => {
  ladderCases('1', { remind: 3, timeout: 8 });
});

/**
 * End-to-end: the real `plangate` CLI on the real local stack (embedded engine, dynalite,
 * local event bus, lambdas/ handlers), one child process per scenario, answers on stdin or
 * through the approval page. Each test then reads the events stored in the local DynamoDB,
 * checks them against seed 000's list and order, and verifies the hash chain.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads.ts';
import { CliRun, runPlan, scenario, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

async function checkedEvents(cwd: string, run: CliRun): Promise<JournalRecord[]> {
  const events = await storedEvents(cwd, run.executionArn);
  expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
  expect(seedOrderProblems(events)).toEqual([]);
  // What --json printed live is exactly what was stored.
  expect(run.events.map((e) => e.hash)).toEqual(events.map((e) => e.hash));
  return events;
}

const types = (events: readonly JournalRecord[], taskId?: string) =>
  events.filter((e) => taskId === undefined || e.task_id === taskId).map((e) => e.event);

describe.concurrent('plangate run, end to end on the local stack', { timeout: 60_000 }, () => {
  it('recovers a transient failure by retry with backoff', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('transient-retry.yaml'), cwd, ['--approve']);
    expect(await run.exited).toBe(0);
    expect(readFileSync(join(cwd, 'record.txt'), 'utf8').trim()).toBe('2');
    const events = await checkedEvents(cwd, run);
    expect(types(events, 'fetch')).toEqual(
      expect.arrayContaining(['TASK_STARTED', 'FAILURE_DETECTED', 'TASK_COMPLETED']),
    );
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details.approver).toBe('plangate-run--approve');
    expect(events.at(-1)?.details).toMatchObject({ succeeded: true, summary: { completed: 2, failed: 0 } });
    expect(run.stderr).toContain('--approve: answering the plan gate APPROVE');
  });

  it('escalates a contract failure; skipping it blocks its dependent while the independent branch completes', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('contract-skip.yaml'), cwd);
    await run.untilEvent('GATE_APPROVAL_REQUESTED');
    run.answer('approve');
    await run.until(
      'escalation prompt',
      () => run.stderr.includes('retry, skip or abort') || run.stderr.includes('skip    skip this step'),
    );
    run.answer('skip');
    expect(await run.exited).toBe(0);
    const events = await checkedEvents(cwd, run);
    expect(types(events, 'broken')).toEqual(
      expect.arrayContaining(['TASK_FAILED', 'FAILURE_CLASSIFIED', 'RECOVERY_ESCALATION']),
    );
    expect(
      events.find((e) => e.event === 'RECOVERY_ESCALATION' && e.details.user_decision)?.details,
    ).toMatchObject({
      user_decision: 'SKIP',
      decided_by: 'person',
    });
    expect(types(events, 'after-broken')).toEqual(['TASK_BLOCKED']);
    expect(types(events, 'independent')).toContain('TASK_COMPLETED');
    expect(existsSync(join(cwd, 'out/independent.txt'))).toBe(true);
    expect(existsSync(join(cwd, 'out/copy.txt'))).toBe(false);
  });

  it('stops for a person on a permission error; retry after the grant completes the run', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('permission.yaml'), cwd, ['--approve']);
    await run.until('escalation prompt', () => run.stderr.includes('skip    skip this step'));
    const asked = await storedEventsWhileRunning(run);
    expect(asked.find((e) => e.event === 'FAILURE_CLASSIFIED')?.details.failure_type).toBe('permission');
    // Credentials are configured out of band, never typed into the harness.
    writeFileSync(join(cwd, 'granted.txt'), 'deploy scope\n');
    run.answer('retry');
    expect(await run.exited).toBe(0);
    const events = await checkedEvents(cwd, run);
    expect(types(events, 'deploy').filter((t) => t === 'TASK_STARTED')).toHaveLength(2);
    expect(
      events.find((e) => e.event === 'RECOVERY_ESCALATION' && e.details.user_decision)?.details.user_decision,
    ).toBe('RETRY');
    expect(existsSync(join(cwd, 'verified.txt'))).toBe(true);
  });

  it('runs nothing when the plan is rejected at the gate', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('gated.yaml'), cwd);
    await run.untilEvent('GATE_APPROVAL_REQUESTED');
    run.answer('reject wrong approach, split the work differently');
    expect(await run.exited).toBe(1);
    const events = await checkedEvents(cwd, run);
    expect(events.find((e) => e.event === 'GATE_REJECTED')?.details).toMatchObject({
      gate: 'plan',
      reason: 'wrong approach, split the work differently',
    });
    expect(types(events).filter((t) => t.startsWith('TASK_'))).toEqual([]);
    expect(existsSync(join(cwd, 'a.txt'))).toBe(false);
  });

  it('applies a modification made on the approval page (a skipped step) and tells the terminal', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('gated.yaml'), cwd);
    await run.untilEvent('GATE_APPROVAL_REQUESTED');
    await run.until('approval link', () => /open (http:\/\/127\.0\.0\.1:\d+\/approve\/\S+)/.test(run.stderr));
    const link = /open (http:\/\/127\.0\.0\.1:\d+\/approve\/\S+)/.exec(run.stderr)?.[1] as string;
    expect(link).not.toMatch(/token/i);
    const page = await fetch(link);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Write b.txt containing the letter b');
    const answered = await fetch(link, {
      method: 'POST',
      body: new URLSearchParams({ decision: 'APPROVE_WITH_MODIFICATIONS', skipSteps: 'write-b' }),
    });
    expect(answered.status).toBe(200);
    // Single use: the same link cannot answer twice.
    expect(
      (await fetch(link, { method: 'POST', body: new URLSearchParams({ decision: 'REJECT' }) })).status,
    ).toBe(410);
    expect(await run.exited).toBe(0);
    expect(run.stderr).toContain('Answered on the approval page: APPROVE_WITH_MODIFICATIONS');
    const events = await checkedEvents(cwd, run);
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({
      approver: 'approval-page',
      modifications: { skipSteps: ['write-b'] },
    });
    expect(types(events, 'write-a')).toContain('TASK_COMPLETED');
    expect(types(events, 'write-b')).toEqual(['TASK_SKIPPED']);
    expect(types(events, 'write-c')).toEqual(['TASK_BLOCKED']);
    expect(existsSync(join(cwd, 'b.txt'))).toBe(false);
  });

  it('does not complete a step that claims success when its contract fails', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('premature.yaml'), cwd, ['--approve']);
    expect(await run.exited).toBe(1);
    const events = await checkedEvents(cwd, run);
    expect(types(events, 'claim')).not.toContain('TASK_COMPLETED');
    expect(events.find((e) => e.event === 'TASK_FAILED')?.details.error).toBe('Plangate.ContractFailed');
    expect(events.find((e) => e.event === 'FAILURE_CLASSIFIED')?.details.failure_type).toBe('logic');
    expect(events.find((e) => e.event === 'RECOVERY_ESCALATION')?.details).toMatchObject({
      user_decision: 'ABORT',
      decided_by: 'recipe',
    });
    expect(types(events, 'after')).not.toContain('TASK_STARTED');
    expect(events.at(-1)?.details).toMatchObject({ succeeded: false });
  });

  it('resumes after kill -9 without running completed steps again', async () => {
    const cwd = await workDir();
    const first = runPlan(scenario('crash-resume.yaml'), cwd, ['--approve']);
    await first.untilEvent('TASK_STARTED', 'slow');
    first.kill9();
    await first.exited;
    const arn = first.executionArn;
    const resumed = new CliRun(['resume', arn, '--json', '--time-scale', '0.01'], cwd);
    expect(await resumed.exited).toBe(0);
    expect(readFileSync(join(cwd, 'first.log'), 'utf8')).toBe('ran\n');
    expect(existsSync(join(cwd, 'last.txt'))).toBe(true);
    const events = await storedEvents(cwd, arn);
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(seedOrderProblems(events)).toEqual([]);
    expect(types(events, 'first').filter((t) => t === 'TASK_STARTED')).toHaveLength(1);
    expect(types(events, 'first').filter((t) => t === 'TASK_COMPLETED')).toHaveLength(1);
    expect(events.at(-1)?.event).toBe('EXECUTION_COMPLETE');
  });
});

/** While a run holds the store, its events come from the run's own output (the store is locked). */
async function storedEventsWhileRunning(run: CliRun): Promise<JournalRecord[]> {
  await run.untilEvent('RECOVERY_ESCALATION');
  return run.events;
}

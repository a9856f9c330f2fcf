/**
 * End-to-end on the local stack: a plan that runs out of wall clock mid-way stops for a person
 * before the next step (BUDGET_EXCEEDED), with nothing half-recorded; continuing raises the budget.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { executionFiles } from '../../lib/files/execution-files.ts';
import { loadPlan } from '../../lib/plan/load.ts';
import { CliRun, scenario, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';
import { filesUnder, halfRecorded } from './worker-setup.ts';

/** Real seconds: the budget is wall clock, so the engine's time is not scaled. */
const runBudget = (cwd: string) =>
  new CliRun(['run', scenario('budget.yaml'), '--json', '--approve', '--time-scale', '1'], cwd);

describe.concurrent('budgets, end to end on the local stack', { timeout: 60_000 }, () => {
  it('runs out of wall clock mid-way: stops for a person before the next step; abort leaves nothing half-recorded', async () => {
    const cwd = await workDir();
    const run = runBudget(cwd);
    await run.untilEvent('BUDGET_EXCEEDED');
    await run.until('escalation prompt', () => run.stderr.includes('skip    skip this step'));
    expect(run.stderr).toContain('budget exceeded: wallClockSeconds used');
    run.answer('abort');
    expect(await run.exited).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(seedOrderProblems(events)).toEqual([]);
    expect(halfRecorded(events)).toEqual([]);
    const exceeded = events.find((e) => e.event === 'BUDGET_EXCEEDED');
    expect(exceeded?.task_id).toBe('three');
    expect(exceeded?.details).toMatchObject({ limit: 'wallClockSeconds', budget: 6 });
    expect(Number(exceeded?.details.used)).toBeGreaterThanOrEqual(6);
    expect(events.filter((e) => e.task_id === 'three').map((e) => e.event)).toEqual([
      'BUDGET_EXCEEDED',
      'RECOVERY_ESCALATION',
      'RECOVERY_ESCALATION',
    ]);
    expect(events.at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { error: 'Plangate.Aborted' },
    });
    const plan = (await loadPlan(scenario('budget.yaml'))).plan;
    if (!plan) throw new Error('budget.yaml does not load');
    const files = filesUnder(join(cwd, 'wall-clock-budget-execution'));
    expect(files).toEqual(executionFiles(plan, events));
    expect(files.get('tasks/01/handoff.md')).toContain("- Finish within 6 s (the plan's wall-clock budget).");
  });

  it('continuing raises the budget by the original amount and the run completes', async () => {
    const cwd = await workDir();
    const run = runBudget(cwd);
    await run.until('escalation prompt', () => run.stderr.includes('skip    skip this step'));
    run.answer('retry');
    expect(await run.exited).toBe(0);
    const events = await storedEvents(cwd, run.executionArn);
    expect(seedOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.task_id === 'three').map((e) => e.event)).toEqual([
      'BUDGET_EXCEEDED',
      'RECOVERY_ESCALATION',
      'RECOVERY_ESCALATION',
      'TASK_STARTED',
      'RECOVERY_APPLIED',
      'TASK_COMPLETED',
    ]);
  });
});

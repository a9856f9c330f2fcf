/**
 * Budgets on workers (issue 10, seed 004 §7), through the real CLI: seed 004's fix-auth-timeout
 * on a 200k-token budget, run by `plangate worker` processes whose scripted coder reports 50k
 * tokens and $0.25 per attempt on its last output line, as `claude -p --output-format json` does.
 * The worker returns the usage with the result, the harness records it in the step's events (the
 * lazy attempt's too: spent all the same) and counts it, each handoff says what is left, and
 * before the fourth step the budget is used up: the run stops for a person (BUDGET_EXCEEDED).
 * Abort leaves nothing half-recorded; continue raises the budget and the run completes.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { verifyChain } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';
import {
  buggyWorkspace,
  filesUnder,
  halfRecorded,
  regeneratedFiles,
  runWithWorkers,
  WORKER_FIXTURES,
} from './worker-setup.ts';

const PLAN = join(WORKER_FIXTURES, 'fix-auth-timeout-budget.yaml');
const PLAN_ID = 'fix-auth-timeout-budget';
const USAGE = { tokens: 50_000, costUsd: 0.25 };

/** The run up to the budget question, its events so far and the agent's log directory. */
async function runUntilBudgetQuestion() {
  const { tmp, repo, log } = await buggyWorkspace();
  const { run, worker, store } = runWithWorkers(PLAN, repo, tmp, {
    AGENT_LOG: log,
    AGENT_TOKENS: String(USAGE.tokens),
    AGENT_COST_USD: String(USAGE.costUsd),
  });
  const coder = worker();
  await run.untilEvent('BUDGET_EXCEEDED', undefined, 1);
  await run.until('the budget question', () => run.stderr.includes('skip    skip this step'), 60_000);
  return { tmp, log, run, coder, store };
}

const handoffOf = (log: string, step: string, attempt = 1) =>
  readFileSync(join(log, `${step}-${attempt}.handoff.md`), 'utf8');

/** "Finish within N s (the plan's wall-clock budget left)." → N */
function secondsGiven(handoff: string): number {
  const match = /- Finish within (\d+) s \(the plan's wall-clock budget left\)\./.exec(handoff);
  if (!match?.[1]) throw new Error(`no cut time limit in:\n${handoff}`);
  return Number(match[1]);
}

const of = (events: readonly JournalRecord[], type: string, step: string) =>
  events.filter((e) => e.event === type && e.task_id === step);

describe.concurrent('plangate worker on a budget', { timeout: 120_000 }, () => {
  it('counts what the agents used (the lazy attempt too) and stops for a person before the step after the budget ran out; abort leaves nothing half-recorded', async () => {
    const { tmp, log, run, coder, store } = await runUntilBudgetQuestion();
    expect(run.stderr).toContain('budget exceeded: tokens used 200000 of 200000');
    run.answer('abort');
    try {
      expect(await run.exited, run.stderr).toBe(1);
    } finally {
      coder.terminate();
    }
    await coder.exited;
    const events = run.events;
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(seedOrderProblems(events)).toEqual([]);
    expect(halfRecorded(events)).toEqual([]);

    // Every attempt's usage is in its step's events: three completions and the lazy failure.
    for (const step of ['s1-analyze-the-bug', 's2-write-the-fix', 's3-lint-and-type-check'])
      expect(of(events, 'TASK_COMPLETED', step).map((e) => e.details.usage)).toEqual([USAGE]);
    expect(of(events, 'TASK_FAILED', 's2-write-the-fix').map((e) => e.details.usage)).toEqual([USAGE]);

    // Checked before the fourth step: it never started, a person was asked and aborted.
    expect(events.filter((e) => e.task_id === 's4-create-pr').map((e) => e.event)).toEqual([
      'BUDGET_EXCEEDED',
      'RECOVERY_ESCALATION',
      'RECOVERY_ESCALATION',
    ]);
    expect(of(events, 'BUDGET_EXCEEDED', 's4-create-pr')[0]?.details).toEqual({
      limit: 'tokens',
      budget: 200_000,
      used: 200_000,
      raised_to: 400_000,
    });
    expect(events.at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { error: 'Plangate.Aborted' },
    });

    // Each handoff said what was left when its step started, the command limit, and a time
    // limit cut to the wall clock left (the steps may take 120 s; the plan has 90 s).
    const s1 = handoffOf(log, 's1-analyze-the-bug');
    const retry = handoffOf(log, 's2-write-the-fix', 2);
    const s3 = handoffOf(log, 's3-lint-and-type-check');
    expect(s1).toContain("- Tokens left in the plan's budget: 200000.");
    expect(retry).toContain("- Tokens left in the plan's budget: 100000.");
    expect(s3).toContain("- Tokens left in the plan's budget: 50000.");
    expect(s3).toContain("- Cost left in the plan's budget: $0.75.");
    for (const handoff of [s1, retry, s3])
      expect(handoff).toContain(
        '- Run at most 30 commands; when near the limit, conclude with the data you have.',
      );
    expect(secondsGiven(s1)).toBeLessThan(90);
    expect(secondsGiven(s3)).toBeLessThanOrEqual(secondsGiven(s1));
    // The value the first step captured reached the second's handoff.
    const rootCause = of(events, 'TASK_COMPLETED', 's1-analyze-the-bug')[0]?.details.result as {
      root_cause: string;
    };
    expect(rootCause.root_cause).toBe('login() passes timeout=30 to auth()');
    expect(retry).toContain(`| \`root_cause\` | \`s1-analyze-the-bug\` | ${rootCause.root_cause} |`);

    // Seed 003's files: regenerated from the events they are the same; they say what the events say.
    const written = filesUnder(join(tmp, `${PLAN_ID}-execution`));
    const fresh = join(tmp, 'regenerated');
    await mkdir(fresh);
    expect(await regeneratedFiles(run.executionArn, store, fresh, PLAN_ID)).toEqual(written);
    const file = (path: string) => written.get(path) ?? '';
    expect(file('tasks/01/result.md')).toContain(`| \`root_cause\` | ${rootCause.root_cause} |`);
    expect(file('tasks/01/result.md')).toContain(
      `| Output \`root_cause\` captured | PASS | ${rootCause.root_cause} |`,
    );
    // The task's handoff is the one its last attempt's agent read.
    expect(file('tasks/02/handoff.md')).toBe(retry);
    expect(file('execution-state.md')).toMatch(/\| 04 \| s4-create-pr \| failed \| \S+ \| aborted \|/);
    expect(file('tasks/04/result.md')).toContain('Not validated: the task did not run.');
    expect(written.has('tasks/04/handoff.md')).toBe(false);
    expect(file(`${PLAN_ID}-execution-result.md`)).toContain('**Outcome:** failed: Plangate.Aborted');
    // What the agents used, as the budget counted it: per task, and for the run.
    expect(file('tasks/02/result.md')).toContain('**Usage:** 100000 tokens, $0.50 (2 attempts reported)');
    expect(file(`${PLAN_ID}-execution-result.md`)).toContain(
      '**Usage:** 200000 tokens, $1.00 (4 attempts reported)',
    );
  });

  it('continuing raises the token budget by the original amount: the fourth step runs, told what is left, and the run completes', async () => {
    const { log, run, coder } = await runUntilBudgetQuestion();
    run.answer('retry');
    try {
      expect(await run.exited, run.stderr).toBe(0);
    } finally {
      coder.terminate();
    }
    await coder.exited;
    const events = run.events;
    expect(seedOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.task_id === 's4-create-pr').map((e) => e.event)).toEqual([
      'BUDGET_EXCEEDED',
      'RECOVERY_ESCALATION',
      'RECOVERY_ESCALATION',
      'TASK_STARTED',
      'RECOVERY_APPLIED',
      'TASK_COMPLETED',
    ]);
    expect(of(events, 'TASK_COMPLETED', 's4-create-pr')[0]?.details.usage).toEqual(USAGE);
    const attempt = Number(of(events, 'TASK_STARTED', 's4-create-pr')[0]?.details.attempt);
    expect(handoffOf(log, 's4-create-pr', attempt)).toContain("- Tokens left in the plan's budget: 200000.");
    expect(events.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
  });
});

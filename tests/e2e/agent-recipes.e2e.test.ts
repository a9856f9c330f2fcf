/**
 * Recipes for agent failures, through the real CLI with a scripted agent (seed 000: classify,
 * then the step's recipe; only the truly unknown asks a person at once). An agent that exits
 * non-zero or produces no declared output is a logic failure its `on_fail` retries (on a worker
 * and in-process alike); a worker stopped by SIGTERM hands its task back and another worker
 * retries it at once; a wall-clock budget that runs out inside an agent step stops it as
 * BUDGET_EXCEEDED and asks a person once.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { CliRun, REPO, RUN_TIME_SCALE, runPlan, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';
import { halfRecorded, scriptedWorker } from './worker-setup.ts';

const AGENT = join(REPO, 'tests/fixtures/agent-recipes/flaky-agent.sh');
const ESCALATION_PROMPT = 'skip    skip this step';

function writePlan(cwd: string, yaml: string): string {
  const file = join(cwd, 'plan.yaml');
  writeFileSync(file, yaml);
  return file;
}

const of = (events: readonly JournalRecord[], step: string) => events.filter((e) => e.task_id === step);
const typesOf = (events: readonly JournalRecord[], step: string) => of(events, step).map((e) => e.event);

/** Waits for the run to end; a person asked on the way answers ABORT (which the test then refuses). */
async function ended(run: CliRun): Promise<number | null> {
  const asked = run
    .until('an escalation', () => run.stderr.includes(ESCALATION_PROMPT), 90_000)
    .then(() => run.answer('abort'))
    .catch(() => {});
  const code = await run.exited;
  await asked;
  return code;
}

function expectWellFormed(events: readonly JournalRecord[]): void {
  expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
  expect(seedOrderProblems(events)).toEqual([]);
  expect(halfRecorded(events)).toEqual([]);
}

/** Retried by its recipe, never asked: a logic failure first, then a second attempt that completed. */
function expectRetriedAsLogic(events: readonly JournalRecord[], step: string): void {
  expect(of(events, step).find((e) => e.event === 'FAILURE_CLASSIFIED')?.details).toMatchObject({
    failure_type: 'logic',
  });
  expect(typesOf(events, step).filter((t) => t === 'TASK_STARTED')).toHaveLength(2);
  expect(typesOf(events, step)).not.toContain('RECOVERY_ESCALATION');
  expect(of(events, step).find((e) => e.event === 'RECOVERY_APPLIED')?.details).toEqual({
    recipe_name: 'retry_logic',
    outcome: 'success',
  });
  expect(typesOf(events, step).at(-1)).toBe('TASK_COMPLETED');
}

const workerSteps = `
  - id: exits
    description: Do the work after a failed build
    target: coder
    timeoutSeconds: 3000
    task: Write exits.txt.
    contract: { kind: command, command: test -f exits.txt }
    onFail: { retries: 1, escalation: ask }
  - id: no-output
    description: Report the answer
    target: coder
    timeoutSeconds: 3000
    task: Report the answer as answer.
    outputs: [answer]
    contract: { kind: command, command: 'test "\${steps.no-output.answer}" = 42' }
    onFail: { retries: 1, escalation: ask }`;

describe.concurrent('agent failures follow their recipes', { timeout: 120_000 }, () => {
  it('on a worker: non-zero exit and a missing declared output are logic failures on_fail retries, nobody asked', async () => {
    const cwd = await workDir();
    const plan = writePlan(
      cwd,
      `id: agent-failures\nversion: 1\nsizePolicy: { minSteps: 1 }\nobjective: Agents that fail once\nsteps:${workerSteps}\n`,
    );
    const run = runPlan(plan, cwd, ['--approve'], { PLANGATE_AGENT_COMMAND: AGENT });
    const code = await ended(run);
    expect(run.stderr).not.toContain(ESCALATION_PROMPT);
    expect(code, run.stderr).toBe(0);
    expectWellFormed(run.events);
    expectRetriedAsLogic(run.events, 'exits');
    expectRetriedAsLogic(run.events, 'no-output');
    expect(of(run.events, 'exits').find((e) => e.event === 'TASK_FAILED')?.details).toMatchObject({
      error: 'AgentFailed',
    });
    expect(of(run.events, 'no-output').find((e) => e.event === 'TASK_FAILED')?.details).toMatchObject({
      error: 'Worker.MissingOutput',
    });
  });

  it('in-process (tool: agent): a non-zero exit is a logic failure on_fail retries', async () => {
    const cwd = await workDir();
    const plan = writePlan(
      cwd,
      `id: in-process-agent
version: 1
sizePolicy: { minSteps: 1 }
objective: An in-process agent that fails once
steps:
  - id: exits
    description: Do the work after a failed build
    tool: agent
    task: Write exits.txt.
    contract: { kind: command, command: test -f exits.txt }
    onFail: { retries: 1, escalation: ask }
`,
    );
    const run = runPlan(plan, cwd, ['--approve'], { PLANGATE_AGENT_COMMAND: AGENT });
    const code = await ended(run);
    expect(run.stderr).not.toContain(ESCALATION_PROMPT);
    expect(code, run.stderr).toBe(0);
    expectWellFormed(run.events);
    expectRetriedAsLogic(run.events, 'exits');
  });

  it('a worker stopped by SIGTERM hands its task back: another worker retries it at once', async () => {
    const cwd = await workDir();
    const store = join(cwd, 'store');
    const plan = writePlan(
      cwd,
      `id: stopped-worker
version: 1
sizePolicy: { minSteps: 1 }
objective: An agent whose worker is stopped
steps:
  - id: hangs
    description: Write hangs.txt
    target: coder
    timeoutSeconds: 3000
    task: Write hangs.txt.
    contract: { kind: command, command: test -f hangs.txt }
    onFail: { retries: 0, escalation: ask }
`,
    );
    const run = runPlan(plan, cwd, ['--approve', '--no-workers', '--store', store]);
    // At the run's time scale: slower heartbeats would time the first attempt out before the stop.
    const worker = () =>
      scriptedWorker({ agentCommand: AGENT, workspace: cwd, store, cwd, timeScale: RUN_TIME_SCALE });
    const first = worker();
    let second: CliRun | undefined;
    try {
      await first.until('the agent hangs', () => existsSync(join(cwd, 'hangs.pid')), 60_000);
      second = worker();
      // A moment for the second worker to start polling; the retry waits for it anyway.
      await new Promise((r) => setTimeout(r, 3000));
      first.terminate();
      expect(await first.exited, first.stderr).toBe(0);
      expect(first.stdout).toContain('stopping');
      const code = await ended(run);
      expect(run.stderr).not.toContain(ESCALATION_PROMPT);
      expect(code, run.stderr).toBe(0);
    } finally {
      first.terminate();
      second?.terminate();
    }
    const events = run.events;
    expectWellFormed(events);
    expect(of(events, 'hangs').find((e) => e.event === 'FAILURE_CLASSIFIED')?.details).toMatchObject({
      failure_type: 'transient',
      // handed back by the stop, not timed out
      error: 'Worker.Stopped',
    });
    expect(typesOf(events, 'hangs').filter((t) => t === 'TASK_STARTED')).toHaveLength(2);
    expect(typesOf(events, 'hangs')).not.toContain('RECOVERY_ESCALATION');
    expect(readFileSync(join(cwd, 'hangs.txt'), 'utf8')).toBe('done\n');
  });

  it.each([
    ['on a worker', 'target: coder'],
    ['in-process (tool: agent)', 'tool: agent'],
  ])(
    '%s: a wall-clock budget that runs out inside an agent step stops it as BUDGET_EXCEEDED, asked once',
    async (_where, runsOn) => {
      const cwd = await workDir();
      const plan = writePlan(
        cwd,
        `id: budget-inside
version: 1
sizePolicy: { minSteps: 1 }
objective: An agent step that outlives the plan's wall clock
budget: { wallClockSeconds: 4 }
steps:
  - id: hangs
    description: Write hangs.txt
    ${runsOn}
    timeoutSeconds: 60
    task: Write hangs.txt.
    contract: { kind: command, command: test -f hangs.txt }
    onFail: { retries: 2, escalation: ask }
`,
      );
      // Real time: the budget is wall clock, and the agent's cut must not be outrun by scaled timeouts.
      const run = new CliRun(['run', plan, '--json', '--approve'], cwd, {
        PLANGATE_AGENT_COMMAND: AGENT,
      });
      await run.until('the budget question', () => run.stderr.includes(ESCALATION_PROMPT), 60_000);
      run.answer('abort');
      expect(await run.exited, run.stderr).toBe(1);
      const events = run.events;
      expectWellFormed(events);
      expect(run.stderr.split(ESCALATION_PROMPT)).toHaveLength(2);
      expect(typesOf(events, 'hangs').filter((t) => t === 'TASK_STARTED')).toHaveLength(1);
      expect(of(events, 'hangs').filter((e) => e.event === 'BUDGET_EXCEEDED')).toHaveLength(1);
      expect(of(events, 'hangs').find((e) => e.event === 'BUDGET_EXCEEDED')?.details).toMatchObject({
        limit: 'wallClockSeconds',
        budget: 4,
      });
      const escalation = of(events, 'hangs').filter((e) => e.event === 'RECOVERY_ESCALATION');
      expect(escalation.at(-1)?.details).toMatchObject({ user_decision: 'ABORT' });
      expect(of(events, 'hangs').find((e) => e.event === 'TASK_FAILED')?.details).toMatchObject({
        error: 'Plangate.BudgetExceeded',
      });
      expect(events.at(-1)).toMatchObject({
        event: 'EXECUTION_COMPLETE',
        details: { error: 'Plangate.Aborted' },
      });
      // The agent was stopped when the budget ran out, not left running.
      expect(existsSync(join(cwd, 'hangs.txt'))).toBe(false);
    },
  );
});

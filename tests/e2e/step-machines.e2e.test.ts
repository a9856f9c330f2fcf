/**
 * End-to-end on the local stack: a plan large enough for the compiler to put its tool steps on a
 * step machine (`stepMachines: 'auto'`) runs with the real Lambdas: every step through the child
 * execution, the journal in order, and a stop inside a child (a person's ABORT) ending the run
 * with `Plangate.Aborted`, as if it had happened in the plan machine. The plan is large by its
 * data (each step's environment carries 40 KB), not by its step count, so it runs in seconds; too
 * large for the gate's own view, so its person approves it on the approval page, page by page.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compilePlan } from '../../lib/compiler/index.ts';
import type { PlanInput } from '../../lib/plan/schema.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { type CliRun, runPlan, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

/** The fewest steps of this size that the compiler puts on a step machine (checked below). */
const WIDTH = 4;
const PADDING = 'x'.repeat(40_000);

/** `first`, then WIDTH steps beside each other, then `last`; `broken` writes the wrong marker. */
function widePlan(broken?: string): PlanInput {
  const middle = Array.from({ length: WIDTH }, (_, i) => `w${i + 1}`);
  const step = (id: string, dependsOn: string[]) => ({
    id,
    description: `Write ${id}.txt`,
    tool: 'shell',
    args: { command: `echo ${id === broken ? 'wrong' : id} > ${id}.txt`, env: { PADDING } },
    contract: { kind: 'command' as const, command: `grep -qx ${id} ${id}.txt` },
    dependsOn,
    ...(id === broken ? { onFail: { retries: 0, escalation: 'ask' as const } } : {}),
  });
  return {
    id: 'wide-on-step-machines',
    version: 1,
    objective: 'Write a marker file per step, most of them at once',
    sizePolicy: { maxSteps: WIDTH + 2 },
    steps: [step('first', []), ...middle.map((id) => step(id, ['first'])), step('last', middle)],
  };
}

/**
 * Approves the plan gate on its page, as its person: the plan is larger than the gate's own view
 * can show whole, so the terminal refuses an approval (docs/gate.md); the page shows every
 * command, page by page, and takes the approval once every page was read.
 */
async function approveOnPage(run: CliRun, plan: PlanInput): Promise<void> {
  await run.until('the plan gate link', () => /open (http:\S+\/approvals\/\S+)/.test(run.stderr));
  const link = /open (http:\S+\/approvals\/\S+)/.exec(run.stderr)?.[1] as string;
  const page = await openApprovalPage(link);
  const digest = /name="digest" value="([^"]+)"/.exec(page.html)?.[1] as string;
  const { pages, seen } = await page.readEveryPage();
  expect(pages.length).toBeGreaterThan(1);
  // Every step's environment whole, on one of the pages.
  for (const step of plan.steps)
    expect(pages.some((html) => html.includes(`id="step-${step.id}"`))).toBe(true);
  expect(pages.join('').split(PADDING).length - 1).toBeGreaterThanOrEqual(plan.steps.length);
  // The terminal's view hides commands: its person was told to read the page.
  expect(run.stderr).toContain('This view does not show every command that runs');
  expect((await page.answer({ decision: 'APPROVE', digest, seen })).status).toBe(200);
}

async function checkedEvents(cwd: string, run: CliRun): Promise<JournalRecord[]> {
  const events = await storedEvents(cwd, run.executionArn);
  expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
  expect(seedOrderProblems(events)).toEqual([]);
  return events;
}

describe.concurrent('step machines, end to end on the local stack', { timeout: 60_000 }, () => {
  it('runs every step of a wide plan through its step machine', async () => {
    const plan = widePlan();
    // The premise: this plan's tool steps are on a step machine.
    expect(compilePlan(plan).definitions.map((d) => d.name)).toEqual([plan.id, `${plan.id}-step-1`]);
    const cwd = await workDir();
    const file = join(cwd, 'wide.json');
    writeFileSync(file, JSON.stringify(plan));
    const run = runPlan(file, cwd, ['--approve'], {}, { approvesWhenAsked: false });
    await approveOnPage(run, plan);
    expect(await run.exited, run.stderr).toBe(0);
    const events = await checkedEvents(cwd, run);
    const completed = events.filter((e) => e.event === 'TASK_COMPLETED').map((e) => e.task_id);
    expect(completed).toHaveLength(WIDTH + 2);
    expect(completed[0]).toBe('first');
    expect(completed.at(-1)).toBe('last');
    expect(events.at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { succeeded: true, summary: { completed: WIDTH + 2, failed: 0, skipped: 0 } },
    });
  });

  it('stops the run with Plangate.Aborted when a person aborts at an escalation inside a step machine', async () => {
    const plan = widePlan('w3');
    const cwd = await workDir();
    const file = join(cwd, 'wide.json');
    writeFileSync(file, JSON.stringify(plan));
    const run = runPlan(file, cwd, ['--approve'], {}, { approvesWhenAsked: false });
    await approveOnPage(run, plan);
    await run.until('escalation prompt', () => run.stderr.includes('skip    skip this step'));
    run.answer('abort the marker is wrong');
    expect(await run.exited).toBe(1);
    const events = await checkedEvents(cwd, run);
    expect(events.filter((e) => e.task_id === 'w3').map((e) => e.event)).toEqual([
      'TASK_STARTED',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
      'RECOVERY_APPLIED',
      'RECOVERY_ESCALATION',
      'RECOVERY_ESCALATION',
    ]);
    expect(events.filter((e) => e.event === 'RECOVERY_ESCALATION').at(-1)?.details).toMatchObject({
      user_decision: 'ABORT',
      decided_by: 'person',
    });
    expect(events.filter((e) => e.task_id === 'last')).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { succeeded: false, error: 'Plangate.Aborted' },
    });
  });
});

import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { writeMarkerPlan } from '../support/marker-plan.ts';
import { type CliRun, runPlan, scenario, storedEvents, verifyChain, workDir } from './cli.ts';

const SELF = userInfo().username;
/** The link each gate's question prints ("Answer here or open <link>"). */
const LINK = /Answer here or open (http:\/\/127\.0\.0\.1:\d+\/\S+)/g;

/** A one-step plan with this approval policy, written to `cwd`. */
async function onePlan(cwd: string, approval: Record<string, unknown> = {}): Promise<string> {
  return writeMarkerPlan(cwd, 'front-door', approval);
}

/** The link printed with the n-th gate question (1-based); the first waits for the run to start too. */
async function printedLink(run: CliRun, n = 1): Promise<string> {
  await run.until(`approval link ${n}`, () => [...run.stderr.matchAll(LINK)].length >= n, 45_000);
  return [...run.stderr.matchAll(LINK)][n - 1]?.[1] as string;
}

const digestOf = (html: string) => /name="digest" value="([^"]+)"/.exec(html)?.[1] as string;

function checked(events: JournalRecord[]): JournalRecord[] {
  expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
  // Every answer names a person: never a page, never a made-up approver.
  expect(JSON.stringify(events)).not.toContain('approval-page');
  return events;
}

describe.concurrent('plangate run: one front door, one identity, one policy', { timeout: 90_000 }, () => {
  it('records who launched it; refuses the launcher approving, on the printed page as in the terminal; ask and reject still work', async () => {
    const cwd = await workDir();
    const run = runPlan(await onePlan(cwd), cwd);
    const link = await printedLink(run);
    // Said with the question, before anyone tries, with the ways on.
    expect(run.stderr).toContain(`you (${SELF}) submitted this plan, so you may not approve it`);
    expect(run.stderr).toContain('start it with --solo');
    expect(link).not.toMatch(/token/i);
    run.answer('approve');
    await run.until('the terminal refusal', () =>
      run.stderr.includes(`${SELF} submitted this plan and may not approve it`),
    );
    const page = await openApprovalPage(link);
    const approved = await page.answer({ decision: 'APPROVE', digest: digestOf(page.html) });
    expect(approved.status).toBe(403);
    expect(await approved.text()).toContain(`${SELF} submitted this plan and may not approve it`);
    // A question is still the submitter's to ask, and the gate asks again.
    run.answer('ask is the marker needed?');
    await run.until('the question asked again', () =>
      run.stderr.includes('Question asked: is the marker needed?'),
    );
    run.answer('reject not mine to approve');
    expect(await run.exited).toBe(1);
    const events = checked(await storedEvents(cwd, run.executionArn));
    expect(events[0]?.details).toMatchObject({
      submitted_by: SELF,
      launched_by: SELF,
      os_user: SELF,
      solo: false,
    });
    const refused = events.filter((e) => e.event === 'GATE_ANSWER_REFUSED');
    expect(refused.map((e) => e.details)).toEqual([
      expect.objectContaining({ gate: 'plan', reason: 'forbidden', by: SELF }),
      expect.objectContaining({ gate: 'plan', reason: 'forbidden', by: SELF }),
    ]);
    expect(events.filter((e) => e.event === 'GATE_APPROVED')).toEqual([]);
    expect(events.find((e) => e.event === 'GATE_REJECTED')?.details).toMatchObject({
      approver: SELF,
      reason: 'not mine to approve',
    });
  });

  it('a solo run records no submitter, and its launcher approves it', async () => {
    const cwd = await workDir();
    const run = runPlan(await onePlan(cwd), cwd, ['--solo']);
    await printedLink(run);
    expect(run.stderr).not.toContain('you may not approve it');
    run.answer('approve');
    expect(await run.exited).toBe(0);
    const events = checked(await storedEvents(cwd, run.executionArn));
    expect(events[0]?.details).toMatchObject({ launched_by: SELF, os_user: SELF, solo: true });
    expect(events[0]?.details.submitted_by).toBeUndefined();
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({ approver: SELF });
  });

  it('the launcher is the submitter under any --as name: alice launching may not approve as alice', async () => {
    const cwd = await workDir();
    const run = runPlan(await onePlan(cwd, { approvers: ['alice'] }), cwd, ['--as', 'alice']);
    await printedLink(run);
    run.answer('approve');
    await run.until('the terminal refusal', () =>
      run.stderr.includes('alice submitted this plan and may not approve it'),
    );
    run.answer('reject not mine to approve');
    expect(await run.exited).toBe(1);
    const events = checked(await storedEvents(cwd, run.executionArn));
    expect(events[0]?.details).toMatchObject({ submitted_by: 'alice', launched_by: 'alice', os_user: SELF });
    expect(events.filter((e) => e.event === 'GATE_APPROVED')).toEqual([]);
  });

  it('approves a plan that names its approvers from the terminal as --as alice', async () => {
    const cwd = await workDir();
    const run = runPlan(await onePlan(cwd, { approvers: ['alice'] }), cwd, ['--as', 'alice', '--solo']);
    await printedLink(run);
    run.answer('approve');
    expect(await run.exited).toBe(0);
    const events = checked(await storedEvents(cwd, run.executionArn));
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({ approver: 'alice' });
    expect(events.filter((e) => e.event === 'GATE_ANSWER_REFUSED')).toEqual([]);
  });

  it('approves a plan that names its approvers on the printed page as --as alice', async () => {
    const cwd = await workDir();
    const run = runPlan(await onePlan(cwd, { approvers: ['alice'] }), cwd, ['--as', 'alice', '--solo']);
    const page = await openApprovalPage(await printedLink(run));
    expect(page.html).toContain('alice');
    const approved = await page.answer({ decision: 'APPROVE', digest: digestOf(page.html) });
    expect(approved.status).toBe(200);
    expect(await run.exited).toBe(0);
    // The terminal stopped asking, and says who answered.
    expect(run.stderr).toMatch(/Answered elsewhere.*APPROVE by alice/);
    const events = checked(await storedEvents(cwd, run.executionArn));
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({ approver: 'alice' });
  });

  it('refuses anyone else, in the terminal and on the page, saying who may approve', async () => {
    const cwd = await workDir();
    const run = runPlan(await onePlan(cwd, { approvers: ['alice'] }), cwd, ['--as', 'bob']);
    const link = await printedLink(run);
    const hint = 'alice may approve this gate; you are bob: rerun with --as alice';
    // Said with the question, before anyone tries.
    expect(run.stderr).toContain(hint);
    run.answer('approve');
    await run.until('the terminal refusal', () => run.count('GATE_ANSWER_REFUSED') >= 1);
    const page = await openApprovalPage(link);
    expect(page.html).toContain(hint);
    const approved = await page.answer({ decision: 'APPROVE', digest: digestOf(page.html) });
    expect(approved.status).toBe(403);
    expect(await approved.text()).toContain('bob is not one of this plan&#39;s approvers');
    await run.until('both refusals', () => run.count('GATE_ANSWER_REFUSED') >= 2);
    run.terminate();
    expect(await run.exited).toBe(130);
    expect(run.events.filter((e) => e.event === 'GATE_ANSWER_REFUSED').map((e) => e.details)).toEqual([
      expect.objectContaining({ reason: 'forbidden', by: 'bob' }),
      expect.objectContaining({ reason: 'forbidden', by: 'bob' }),
    ]);
    expect(run.count('GATE_APPROVED')).toBe(0);
    expect(run.count('TASK_STARTED')).toBe(0);
  });

  it("shows the plan's checklist on the page as the execution stands at each page load", async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('step-gates.yaml'), cwd, ['--solo']);
    await printedLink(run, 1);
    run.answer('approve');
    const staging = await openApprovalPage(await printedLink(run, 2));
    expect(staging.html).toContain('1. [x] Create the out/ directory');
    expect(staging.html).toMatch(/2\. \[ \] Write out\/staging.txt.*\n.*\n\s+notes: awaiting approval/);
    expect((await staging.answer({ decision: 'APPROVE', digest: digestOf(staging.html) })).status).toBe(200);
    const prod = await openApprovalPage(await printedLink(run, 3));
    expect(prod.html).toContain('2. [x] Write out/staging.txt');
    run.answer('reject not during the freeze');
    expect(await run.exited).toBe(0);
    const events = checked(await storedEvents(cwd, run.executionArn));
    expect(events.filter((e) => e.event === 'GATE_APPROVED').map((e) => e.details.approver)).toEqual([
      SELF,
      SELF,
    ]);
  });
});

/**
 * End-to-end: the real `plangate` CLI on the real local stack (embedded engine, dynalite,
 * local event bus, lambdas/ handlers), one child process per scenario, answers on stdin or
 * through the approval page. Each test then reads the events stored in the local DynamoDB,
 * checks them against seed 000's list and order, and verifies the hash chain.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { CliRun, runPlan, scenario, storedEvents, UNPROVEN_NOTE, verifyChain, workDir } from './cli.ts';
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
  it('recovers a transient failure by retry with backoff, and the events say so in order', async () => {
    const cwd = await workDir();
    // Without --json: what a person sees.
    const run = new CliRun(
      ['run', scenario('transient-retry.yaml'), '--approve', '--time-scale', '0.01'],
      cwd,
    );
    expect(await run.exited).toBe(0);
    expect(readFileSync(join(cwd, 'record.txt'), 'utf8').trim()).toBe('2');
    const events = await storedEvents(cwd, run.executionArn);
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(seedOrderProblems(events)).toEqual([]);
    expect(events.map((e) => `${e.event}${e.task_id ? ` ${e.task_id}` : ''}`)).toEqual([
      'PLAN_CREATED',
      'GATE_APPROVAL_REQUESTED',
      'GATE_VOTE',
      'GATE_APPROVED',
      'TASK_STARTED fetch',
      'TASK_FAILED fetch',
      'FAILURE_DETECTED fetch',
      'FAILURE_CLASSIFIED fetch',
      'TASK_STARTED fetch',
      'RECOVERY_APPLIED fetch',
      'TASK_COMPLETED fetch',
      'TASK_STARTED record',
      'TASK_COMPLETED record',
      'EXECUTION_COMPLETE',
    ]);
    const fetch = events.filter((e) => e.task_id === 'fetch');
    expect(fetch.filter((e) => e.event === 'TASK_STARTED').map((e) => e.details.attempt)).toEqual([1, 2]);
    expect(fetch.find((e) => e.event === 'FAILURE_DETECTED')?.details).toMatchObject({
      error: 'Plangate.Transient',
      attempt: 1,
    });
    expect(fetch.find((e) => e.event === 'FAILURE_CLASSIFIED')?.details).toEqual({
      failure_type: 'transient',
      error: 'Plangate.Transient',
    });
    expect(fetch.find((e) => e.event === 'RECOVERY_APPLIED')?.details).toEqual({
      recipe_name: 'retry_transient',
      outcome: 'success',
    });
    // The run's identity (the OS user here) approves. Its steps write files, which is not proven
    // read-only: --approve leaves the gate to a person, whom this test plays (cli.ts).
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details.approver).toBe(userInfo().username);
    expect(events.at(-1)?.details).toMatchObject({ succeeded: true, summary: { completed: 2, failed: 0 } });
    expect(run.stderr).toContain(
      `${UNPROVEN_NOTE} plan gate, what it covers is not proven read-only: step fetch`,
    );
    expect(run.stdout).toContain('RECOVERY_APPLIED: retry_transient → success');
    expect(run.stdout).toContain('(attempt 2)');
    expect(run.stdout).toContain('2/2 tasks completed. 0 failures.');
  });

  it('escalates a contract failure; skipping it blocks its dependent while the independent branch completes', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('contract-skip.yaml'), cwd, ['--solo']);
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
    const run = runPlan(scenario('gated.yaml'), cwd, ['--solo']);
    await run.untilEvent('GATE_APPROVAL_REQUESTED');
    run.answer('reject wrong approach, split the work differently');
    expect(await run.exited).toBe(1);
    const events = await checkedEvents(cwd, run);
    expect(events.find((e) => e.event === 'GATE_REJECTED')?.details).toMatchObject({
      gate: 'plan',
      reason: 'wrong approach, split the work differently',
    });
    expect(types(events).filter((t) => t.startsWith('TASK_'))).toEqual([]);
    expect(types(events).slice(-2)).toEqual(['GATE_REJECTED', 'EXECUTION_COMPLETE']);
    expect(events.at(-1)?.details).toMatchObject({
      succeeded: false,
      error: 'Plangate.GateRejected',
      reason: 'wrong approach, split the work differently',
      summary: { completed: 0, failed: 0, skipped: 3 },
    });
    expect(run.stderr).toContain(
      '0/3 tasks completed. Plan rejected: wrong approach, split the work differently.',
    );
    expect(existsSync(join(cwd, 'a.txt'))).toBe(false);
  });

  it('asks the plan gate again after a question, then runs once approved', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('gated.yaml'), cwd, ['--solo']);
    await run.untilEvent('GATE_APPROVAL_REQUESTED');
    run.answer('ask why does c.txt copy b.txt instead of writing c?');
    await run.untilEvent('GATE_APPROVAL_REQUESTED', undefined, 2);
    await run.until('the question shown again', () =>
      run.stderr.includes('Question asked: why does c.txt copy b.txt instead of writing c?'),
    );
    run.answer('approve');
    expect(await run.exited).toBe(0);
    const events = await checkedEvents(cwd, run);
    expect(types(events).slice(0, 7)).toEqual([
      'PLAN_CREATED',
      'GATE_APPROVAL_REQUESTED',
      'GATE_VOTE',
      'GATE_CLARIFICATION_REQUESTED',
      'GATE_APPROVAL_REQUESTED',
      'GATE_VOTE',
      'GATE_APPROVED',
    ]);
    expect(events.filter((e) => e.event === 'GATE_APPROVAL_REQUESTED').map((e) => e.details.round)).toEqual([
      1, 2,
    ]);
    expect(events[3]?.details).toEqual({
      gate: 'plan',
      question: 'why does c.txt copy b.txt instead of writing c?',
      asked_by: expect.any(String),
    });
    expect(events.at(-1)?.details).toMatchObject({ succeeded: true, summary: { completed: 3 } });
  });

  it('asks each gated step: an approved one runs, a rejected one is skipped and its dependent blocked', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('step-gates.yaml'), cwd, ['--solo']);
    await run.untilEvent('GATE_APPROVAL_REQUESTED');
    run.answer('approve');
    await run.untilEvent('GATE_APPROVAL_REQUESTED', 'deploy-staging');
    await run.until('the staging question', () =>
      run.stderr.includes('Write out/staging.txt containing the word staging" needs approval'),
    );
    run.answer('approve');
    await run.untilEvent('GATE_APPROVAL_REQUESTED', 'deploy-prod');
    await run.until('the prod question', () =>
      run.stderr.includes('Write out/prod.txt containing the word prod" needs approval'),
    );
    run.answer('reject not during the freeze');
    expect(await run.exited).toBe(0);
    const events = await checkedEvents(cwd, run);
    expect(types(events, 'deploy-staging')).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_VOTE',
      'GATE_APPROVED',
      'TASK_STARTED',
      'TASK_COMPLETED',
    ]);
    expect(types(events, 'deploy-prod')).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_VOTE',
      'GATE_REJECTED',
      'TASK_SKIPPED',
    ]);
    expect(events.find((e) => e.event === 'GATE_REJECTED')?.details).toMatchObject({
      gate: 'step',
      reason: 'not during the freeze',
    });
    expect(types(events, 'announce')).toEqual(['TASK_BLOCKED']);
    expect(events.find((e) => e.event === 'TASK_BLOCKED')?.details.blocked_by).toEqual(['deploy-prod']);
    expect(events.at(-1)?.details).toMatchObject({
      succeeded: true,
      summary: { completed: 2, failed: 0, skipped: 2 },
    });
    expect(existsSync(join(cwd, 'out/staging.txt'))).toBe(true);
    expect(existsSync(join(cwd, 'out/prod.txt'))).toBe(false);
  });

  it('waits for a person to do a human step; their reported output is checked and used later', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('human-step.yaml'), cwd, ['--approve']);
    await run.untilEvent('TASK_STARTED', 'pick-version');
    await run.until('the human prompt', () => run.stderr.includes('done [name=value …]'));
    expect(run.stderr).toContain('Choose the next release version');
    // A report without the declared output is refused and asked again.
    run.answer('done release=1.2.3');
    await run.until('the refusal', () => run.stderr.includes('this step must report "version"'));
    run.answer('done version=1.2.3');
    expect(await run.exited).toBe(0);
    const events = await checkedEvents(cwd, run);
    // The refused report is audited (GATE_ANSWER_REFUSED); the accepted one answers the step.
    expect(types(events, 'pick-version')).toEqual([
      'TASK_STARTED',
      'GATE_ANSWER_REFUSED',
      'HUMAN_TASK_ANSWERED',
      'TASK_COMPLETED',
    ]);
    expect(events.find((e) => e.event === 'GATE_ANSWER_REFUSED')?.details).toMatchObject({
      gate: 'human',
      reason: 'invalid',
    });
    expect(events.find((e) => e.event === 'HUMAN_TASK_ANSWERED')?.details).toMatchObject({
      decision: 'DONE',
      outputs: ['version'],
    });
    const completed = events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'pick-version');
    expect(completed?.details).toMatchObject({
      result: { version: '1.2.3' },
      evidence: { kind: 'assert', passed: true },
    });
    expect(readFileSync(join(cwd, 'version.txt'), 'utf8')).toBe('1.2.3\n');
    expect(types(events, 'write-version')).toEqual(['TASK_STARTED', 'TASK_COMPLETED']);
  });

  it("takes a human step's report from plangate complete in another shell, checked like any report", async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('human-step.yaml'), cwd, ['--approve']);
    await run.until('the human prompt', () => run.stderr.includes('done [name=value …]'));
    const complete = async (...args: string[]) => {
      const other = new CliRun(['complete', run.executionArn, ...args], cwd);
      return { code: await other.exited, stderr: other.stderr };
    };
    const wrongStep = await complete('write-version', '--value', 'version=1.2.3');
    expect(wrongStep.code).toBe(1);
    expect(wrongStep.stderr).toContain('is not waiting for a person (waiting: pick-version)');
    const missing = await complete('pick-version', '--value', 'release=1.2.3');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('this step must report "version"');
    const done = await complete('pick-version', '--value', 'version=2.0.1');
    expect(done.stderr).toContain(`Recorded: pick-version done by ${userInfo().username} with version`);
    expect(done.code).toBe(0);
    expect(await run.exited).toBe(0);
    // The terminal stopped asking once the step was answered elsewhere.
    expect(run.stderr).toContain('Answered elsewhere');
    const events = await checkedEvents(cwd, run);
    expect(events.find((e) => e.event === 'HUMAN_TASK_ANSWERED')?.details).toMatchObject({
      decision: 'DONE',
      outputs: ['version'],
    });
    expect(readFileSync(join(cwd, 'version.txt'), 'utf8')).toBe('2.0.1\n');
    // Nothing waits once the run is over: complete says so instead of hanging.
    const late = await complete('pick-version', '--value', 'version=9.9.9');
    expect(late.code).toBe(1);
    expect(late.stderr).toContain('no plangate run holds');
  });

  it('aborts at an escalation: the failed step counts as failed, the steps that never ran as skipped', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('abort.yaml'), cwd, ['--approve']);
    await run.until('escalation prompt', () => run.stderr.includes('skip    skip this step'));
    run.answer('abort wrong number written');
    expect(await run.exited).toBe(1);
    const events = await checkedEvents(cwd, run);
    expect(types(events, 'two')).toEqual([
      'TASK_STARTED',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
      'RECOVERY_APPLIED',
      'RECOVERY_ESCALATION',
      'RECOVERY_ESCALATION',
    ]);
    expect(events.filter((e) => e.event === 'RECOVERY_APPLIED').map((e) => e.details)).toEqual([
      { recipe_name: 'escalate_logic', outcome: 'escalated' },
    ]);
    expect(events.filter((e) => e.event === 'RECOVERY_ESCALATION').at(-1)?.details).toMatchObject({
      user_decision: 'ABORT',
      decided_by: 'person',
    });
    for (const never of ['three', 'four', 'five']) expect(types(events, never)).toEqual([]);
    expect(events.at(-1)?.details).toMatchObject({
      succeeded: false,
      error: 'Plangate.Aborted',
      summary: { completed: 1, failed: 1, skipped: 3 },
    });
    expect(run.stderr).toContain('1/5 tasks completed. 1 failure. 3 skipped or blocked.');
  });

  it('applies a modification made on the approval page (a skipped step) and tells the terminal', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('gated.yaml'), cwd, ['--solo']);
    await run.untilEvent('GATE_APPROVAL_REQUESTED');
    await run.until('approval link', () =>
      /open (http:\/\/127\.0\.0\.1:\d+\/approvals\/\S+)/.test(run.stderr),
    );
    const link = /open (http:\/\/127\.0\.0\.1:\d+\/approvals\/\S+)/.exec(run.stderr)?.[1] as string;
    expect(link).not.toMatch(/token/i);
    const page = await openApprovalPage(link);
    expect(page.html).toContain('Write b.txt containing the letter b');
    // The form binds the answer to the digest the page showed.
    const digest = /name="digest" value="([^"]+)"/.exec(page.html)?.[1] as string;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // A post without the page's session (its cookie and form token) is refused and decides nothing.
    const forged = await fetch(`${page.url}/as-recipient`, {
      method: 'POST',
      body: new URLSearchParams({ decision: 'REJECT', digest }),
    });
    expect(forged.status).toBe(403);
    const answered = await page.answer({
      decision: 'APPROVE_WITH_MODIFICATIONS',
      skipSteps: 'write-b',
      digest,
    });
    expect(answered.status).toBe(200);
    // The modification is a revision: it goes back to the gate, and nothing runs until it is
    // approved as changed (by the whole quorum: here one approval, the same person's).
    expect(await answered.text()).toContain('Your changes were recorded as revision 1');
    const revised = await openApprovalPage(link);
    const revisionDigest = /name="digest" value="([^"]+)"/.exec(revised.html)?.[1] as string;
    expect(revisionDigest).not.toBe(digest);
    expect(revised.html).toContain('skips write-b');
    // An answer still bound to the content before the change is refused (and journaled, below).
    expect((await revised.answer({ decision: 'APPROVE', digest })).status).not.toBe(200);
    expect((await revised.answer({ decision: 'APPROVE', digest: revisionDigest })).status).toBe(200);
    // Single use: the link opens no second answer; it opens a page that says who answered.
    const opened = await fetch(link, { redirect: 'manual' });
    expect(opened.status).toBe(303);
    const again = await fetch(new URL(opened.headers.get('location') as string, link), {
      headers: { cookie: (opened.headers.get('set-cookie') as string).split(';')[0] as string },
    });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('Already answered by');
    expect(await run.exited).toBe(0);
    // The terminal stopped asking, and says what was decided, by whom.
    expect(run.stderr).toContain(
      `Answered elsewhere: this gate was already answered: APPROVE_WITH_MODIFICATIONS by ${userInfo().username}`,
    );
    const events = await checkedEvents(cwd, run);
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({
      approver: userInfo().username,
      digest: revisionDigest,
      modifications: { skipSteps: ['write-b'] },
    });
    expect(events.find((e) => e.event === 'GATE_PLAN_MODIFIED')?.details).toMatchObject({
      to: revisionDigest,
    });
    expect(
      events.some((e) => e.event === 'GATE_ANSWER_REFUSED' && e.details.reason === 'digest-mismatch'),
    ).toBe(true);
    expect(types(events, 'write-a')).toContain('TASK_COMPLETED');
    expect(types(events, 'write-b')).toEqual(['TASK_SKIPPED']);
    expect(types(events, 'write-c')).toEqual(['TASK_BLOCKED']);
    expect(existsSync(join(cwd, 'b.txt'))).toBe(false);
  });

  it('asks the terminal again about a revision made on the page, and its approval there runs it', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('gated.yaml'), cwd, ['--solo']);
    await run.until('approval link', () =>
      /open (http:\/\/127\.0\.0\.1:\d+\/approvals\/\S+)/.test(run.stderr),
    );
    const link = /open (http:\/\/127\.0\.0\.1:\d+\/approvals\/\S+)/.exec(run.stderr)?.[1] as string;
    const page = await openApprovalPage(link);
    const digest = /name="digest" value="([^"]+)"/.exec(page.html)?.[1] as string;
    const answered = await page.answer({
      decision: 'APPROVE_WITH_MODIFICATIONS',
      skipSteps: 'write-b',
      digest,
    });
    expect(answered.status).toBe(200);
    // The terminal's question about the plan as first shown is withdrawn; it asks about the revision.
    await run.until('the question asked again', () =>
      run.stderr.includes('asking again about what it now runs'),
    );
    const asked = run.stderr.slice(run.stderr.indexOf('asking again about what it now runs'));
    await run.until('the revision shown', () =>
      run.stderr.slice(run.stderr.indexOf('asking again')).includes('skipped by revision 1'),
    );
    expect(asked).not.toContain('Not recorded');
    run.answer('approve');
    expect(await run.exited, run.stderr).toBe(0);
    const events = await checkedEvents(cwd, run);
    expect(events.filter((e) => e.event === 'GATE_ANSWER_REFUSED')).toEqual([]);
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({
      modifications: { skipSteps: ['write-b'] },
    });
    expect(types(events, 'write-b')).toEqual(['TASK_SKIPPED']);
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
    // The step under way when the harness died is not re-run silently: its attempt is recorded
    // as failed (the engine cannot know whether it finished), classified transient, and retried.
    const slow = events.filter((e) => e.task_id === 'slow');
    expect(slow.find((e) => e.event === 'FAILURE_CLASSIFIED')?.details).toMatchObject({
      failure_type: 'transient',
    });
    expect(types(events, 'slow').filter((t) => t === 'TASK_STARTED')).toHaveLength(2);
    expect(events.at(-1)?.event).toBe('EXECUTION_COMPLETE');
  });
});

/** While a run holds the store, its events come from the run's own output (the store is locked). */
async function storedEventsWhileRunning(run: CliRun): Promise<JournalRecord[]> {
  await run.untilEvent('RECOVERY_ESCALATION');
  return run.events;
}

/**
 * kill -9 of `plangate run` while it rolls back, then `plangate resume`: the rollback under way is
 * retried as its contract says (an undo its contract already proves is not done twice), the
 * remaining rollbacks run newest first, and the execution ends with ROLLBACK_COMPLETED of each and
 * EXECUTION_COMPLETE. Then the same at seeded random moments of the rollback, several kills per
 * run (the seed is printed; PLANGATE_KILL_SEED replays it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/dag.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { CliRun, runPlan, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

const SEED = Number(process.env.PLANGATE_KILL_SEED ?? Math.floor(Math.random() * 2 ** 31));

/**
 * Three steps that each write a file and undo it (slowly, so a kill lands inside), and a fourth
 * that fails its contract and aborts by recipe: the rollbacks start with nobody to ask.
 */
function rollbackPlan(
  cwd: string,
  {
    undo = (id: string) => `sleep 0.4 && rm -f ${id}.txt && echo ${id} >> undo.log`,
    transientRetries = 6,
  }: { undo?: (id: string) => string; transientRetries?: number } = {},
): string {
  const step = (id: string, after?: string) => `
  - id: ${id}
    description: Create ${id}.txt
    ${after ? `dependsOn: [${after}]` : ''}
    tool: shell
    args: { command: "echo ${id} > ${id}.txt" }
    contract: { kind: command, command: test -f ${id}.txt }
    rollback:
      tool: shell
      args: { command: "${undo(id)}" }
      contract: { kind: command, command: test ! -e ${id}.txt }`;
  const file = join(cwd, 'plan.yaml');
  writeFileSync(
    file,
    `id: interrupted-rollback
version: 1
objective: Create three files, fail the fourth, and undo the three while being killed
recovery:
  transient: { maxAttempts: ${transientRetries}, intervalSeconds: 1, backoffRate: 1 }
steps:${step('one')}${step('two', 'one')}${step('three', 'two')}
  - id: four
    description: Create four.txt containing the number 4
    dependsOn: [three]
    onFail: { retries: 0, escalation: abort }
    tool: shell
    args: { command: "echo 5 > four.txt" }
    contract: { kind: command, command: grep -qx 4 four.txt }
`,
  );
  return file;
}

const resume = (arn: string, cwd: string) =>
  new CliRun(['resume', arn, '--json', '--time-scale', '0.01'], cwd);

/** Every rollback ended once, newest first, and the execution ended aborted after them. */
function expectRolledBack(events: readonly JournalRecord[]): void {
  expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
  expect(seedOrderProblems(events)).toEqual([]);
  const ended = events.filter((e) => e.event === 'ROLLBACK_COMPLETED' || e.event === 'ROLLBACK_FAILED');
  expect(ended.map((e) => `${e.event} ${e.task_id}`)).toEqual([
    'ROLLBACK_COMPLETED three',
    'ROLLBACK_COMPLETED two',
    'ROLLBACK_COMPLETED one',
  ]);
  expect(events.at(-1)).toMatchObject({
    event: 'EXECUTION_COMPLETE',
    details: { error: 'Plangate.Aborted' },
  });
}

describe.concurrent('kill -9 during a rollback, then plangate resume', { timeout: 120_000 }, () => {
  it('retries the interrupted rollback, runs the rest newest first and ends the execution', async () => {
    const cwd = await workDir();
    const first = runPlan(rollbackPlan(cwd), cwd, ['--approve']);
    await first.untilEvent('ROLLBACK_STARTED', 'three');
    first.kill9();
    await first.exited;
    const arn = first.executionArn;
    const resumed = resume(arn, cwd);
    expect(await resumed.exited, resumed.stderr).toBe(1);
    expect(resumed.stderr).not.toContain('The engine stopped while this task was running');
    const events = await storedEvents(cwd, arn);
    expectRolledBack(events);
    const three = events.filter((e) => e.task_id === 'three' && e.event.startsWith('ROLLBACK_'));
    // The interrupted attempt is on record; its retry was decided by the rollback's contract.
    expect(three[0]?.event).toBe('ROLLBACK_STARTED');
    expect(three.at(-1)?.details).toMatchObject({ evidence: { kind: 'command', passed: true } });
    expect(readFileSync(join(cwd, 'undo.log'), 'utf8')).toMatch(/three\n(three\n)?two\none\n$/);
    const state = readFileSync(join(cwd, 'interrupted-rollback-execution', 'execution-state.md'), 'utf8');
    expect(state).not.toMatch(/rolling_back/);
    expect(state).toMatch(/\| 03 \| three \| rolled_back \|/);
    const status = new CliRun(['status'], cwd);
    expect(await status.exited).toBe(0);
    expect(status.stdout).not.toContain('UNFINISHED');
  });

  it('runs an interrupted undo again when its contract says it did not happen (attempt 2)', async () => {
    const cwd = await workDir();
    // Before the resume, each undo waits (the kill lands in it, and the orphan it leaves does nothing).
    const plan = rollbackPlan(cwd, {
      undo: (id) => `if [ -f resumed ]; then rm -f ${id}.txt && echo ${id} >> undo.log; else sleep 30; fi`,
    });
    const first = runPlan(plan, cwd, ['--approve']);
    await first.untilEvent('ROLLBACK_STARTED', 'three');
    first.kill9();
    await first.exited;
    writeFileSync(join(cwd, 'resumed'), '');
    const resumed = resume(first.executionArn, cwd);
    expect(await resumed.exited, resumed.stderr).toBe(1);
    const events = await storedEvents(cwd, first.executionArn);
    expectRolledBack(events);
    expect(
      events.filter((e) => e.task_id === 'three' && e.event.startsWith('ROLLBACK_')).map((e) => e.details),
    ).toMatchObject([
      { tool: 'shell', rehearsal: false },
      { tool: 'shell', rehearsal: false, attempt: 2 },
      { evidence: { passed: true } },
    ]);
    expect(readFileSync(join(cwd, 'undo.log'), 'utf8')).toBe('three\ntwo\none\n');
  });

  it('records the rollback failed, and still ends the run, when its recipe retries no interruption', async () => {
    const cwd = await workDir();
    const first = runPlan(rollbackPlan(cwd, { transientRetries: 0 }), cwd, ['--approve']);
    await first.untilEvent('ROLLBACK_STARTED', 'three');
    first.kill9();
    await first.exited;
    const resumed = resume(first.executionArn, cwd);
    expect(await resumed.exited, resumed.stderr).toBe(1);
    const events = await storedEvents(cwd, first.executionArn);
    expect(seedOrderProblems(events)).toEqual([]);
    const failed = events.find((e) => e.event === 'ROLLBACK_FAILED');
    expect(failed?.task_id).toBe('three');
    expect(failed?.details).toMatchObject({ error: 'States.TaskFailed' });
    expect(String(failed?.details.error_message)).toContain(
      'the rollback did not finish: The engine stopped',
    );
    // An undo that failed stops the undoing: older steps stay as they are.
    expect(events.some((e) => e.event === 'ROLLBACK_STARTED' && e.task_id === 'two')).toBe(false);
    expect(events.at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { error: 'Plangate.Aborted' },
    });
  });

  it(`survives kills at random moments of the rollback (seed ${SEED})`, async () => {
    process.stdout.write(`rollback kill -9 test: seed ${SEED} (replay with PLANGATE_KILL_SEED=${SEED})\n`);
    const random = prng(SEED);
    const cwd = await workDir();
    let attached = runPlan(rollbackPlan(cwd), cwd, ['--approve']);
    await attached.untilEvent('ROLLBACK_STARTED');
    const arn = attached.executionArn;
    // Up to three kills, each at a random moment after the rollback began or the process resumed
    // (in a procedure, in a contract check, between them, in Finalize).
    const killedAfter: string[] = [];
    for (let kill = 0; kill < 3; kill++) {
      await new Promise((r) => setTimeout(r, random() * 1500));
      if (attached.count('EXECUTION_COMPLETE') > 0) break;
      attached.kill9();
      await attached.exited;
      const last = attached.events.at(-1);
      killedAfter.push(`${last?.event} ${last?.task_id ?? ''}`);
      attached = resume(arn, cwd);
      await attached.until('resumed', () => attached.stderr.includes('Execution:'), 30_000);
    }
    process.stdout.write(`rollback kill -9 test: killed after ${killedAfter.join('; ')}\n`);
    expect(killedAfter.length).toBeGreaterThan(0);
    expect(await attached.exited, attached.stderr).toBe(1);
    expectRolledBack(await storedEvents(cwd, arn));
  });
});

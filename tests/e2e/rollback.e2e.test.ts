/**
 * End-to-end on the local stack: rollback on abort (reverse completion order, each proved by its
 * contract), the rehearsal of a successful run, and seed 003's execution files, which the run
 * writes as events arrive and `plangate files` regenerates byte for byte from the events.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { executionFiles } from '../../lib/files/execution-files.ts';
import { loadPlan } from '../../lib/plan/load.ts';
import type { Plan } from '../../lib/plan/schema.ts';
import { CliRun, runPlan, scenario, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';
import { filesUnder } from './worker-setup.ts';

const FILES_DIR = 'rollback-on-abort-execution';

async function planOf(file: string): Promise<Plan> {
  const loaded = await loadPlan(file);
  if (!loaded.plan) throw new Error(`${file} does not load`);
  return loaded.plan;
}

describe.concurrent('rollback and execution files, end to end on the local stack', {
  timeout: 90_000,
}, () => {
  it('aborts after three steps: their rollbacks run newest first, each verified, and the files match the events', async () => {
    const cwd = await workDir();
    const run = runPlan(scenario('rollback.yaml'), cwd, ['--approve']);
    await run.until('escalation prompt', () => run.stderr.includes('skip    skip this step'));
    // Before choosing, the person sees what an abort will undo, in the order it will.
    const prompt = run.stderr.slice(run.stderr.lastIndexOf('failed:'));
    expect(prompt).toContain('If you abort, these rollbacks run, in this order');
    const listed = [...prompt.matchAll(/^ {2}(\d)\. undo (\w+) \(shell\)/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(listed).toEqual(['1 three', '2 two', '3 one']);
    expect(prompt).toContain('rm three.txt && echo three >> undo.log');
    run.answer('abort');
    expect(await run.exited).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(seedOrderProblems(events)).toEqual([]);

    const rollbacks = events.filter((e) => e.event.startsWith('ROLLBACK_'));
    expect(rollbacks.map((e) => `${e.event} ${e.task_id}`)).toEqual([
      'ROLLBACK_STARTED three',
      'ROLLBACK_COMPLETED three',
      'ROLLBACK_STARTED two',
      'ROLLBACK_COMPLETED two',
      'ROLLBACK_STARTED one',
      'ROLLBACK_COMPLETED one',
    ]);
    // Each undo was proved by its own contract, not taken on the tool's word.
    for (const e of rollbacks.filter((r) => r.event === 'ROLLBACK_COMPLETED'))
      expect(e.details).toMatchObject({ rehearsal: false, evidence: { kind: 'command', passed: true } });
    expect(readFileSync(join(cwd, 'undo.log'), 'utf8')).toBe('three\ntwo\none\n');
    expect(readdirSync(cwd).filter((f) => /^(one|two|three)\.txt$/.test(f))).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { error: 'Plangate.Aborted' },
    });

    // The files the run wrote live are the projection of the stored events…
    const live = filesUnder(join(cwd, FILES_DIR));
    expect(live).toEqual(executionFiles(await planOf(scenario('rollback.yaml')), events));
    expect(live.get('execution-state.md')).toMatch(/\| 03 \| three \| rolled_back \|/);
    expect(live.get('execution-state.md')).toMatch(/\| 04 \| four \| failed \|/);
    expect(live.get('tasks/02/handoff.md')).toContain('| `stdout` | `one` | one |');
    expect(live.get('tasks/04/result.md')).toContain('| Contract (command) | FAIL |');
    expect(live.get('rollback-on-abort-execution-result.md')).toContain(
      'Every rollback procedure was run and verified.',
    );
    // …and `plangate files` regenerates them identically, replacing a hand edit.
    writeFileSync(join(cwd, FILES_DIR, 'execution-state.md'), 'edited by hand\n');
    expect(await new CliRun(['files', run.executionArn], cwd).exited).toBe(0);
    expect(filesUnder(join(cwd, FILES_DIR))).toEqual(live);
  });

  it('--rehearse-rollback proves the procedures after a successful run, before EXECUTION_COMPLETE', async () => {
    const cwd = await workDir();
    const planFile = join(cwd, 'plan.yaml');
    writeFileSync(planFile, readFileSync(scenario('rollback.yaml'), 'utf8').replace('four: 5', 'four: 4'));
    const run = new CliRun(
      ['run', planFile, '--json', '--approve', '--rehearse-rollback', '--time-scale', '0.01'],
      cwd,
    );
    expect(await run.exited).toBe(0);
    const events = await storedEvents(cwd, run.executionArn);
    expect(seedOrderProblems(events)).toEqual([]);
    expect(
      events.filter((e) => e.event === 'ROLLBACK_COMPLETED').map((e) => [e.task_id, e.details.rehearsal]),
    ).toEqual([
      ['three', true],
      ['two', true],
      ['one', true],
    ]);
    expect(events.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
    expect(readFileSync(join(cwd, 'undo.log'), 'utf8')).toBe('three\ntwo\none\n');
  });

  it('a rehearsal whose rollback does not pass its contract fails the run and says which one', async () => {
    const cwd = await workDir();
    const planFile = join(cwd, 'plan.yaml');
    writeFileSync(
      planFile,
      readFileSync(scenario('rollback.yaml'), 'utf8')
        .replace('four: 5', 'four: 4')
        .replace('rm two.txt && echo two >> undo.log', 'echo two >> undo.log'),
    );
    const run = new CliRun(
      ['run', planFile, '--json', '--approve', '--rehearse-rollback', '--time-scale', '0.01'],
      cwd,
    );
    expect(await run.exited).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    expect(
      events.filter((e) => e.event.startsWith('ROLLBACK_')).map((e) => `${e.event} ${e.task_id}`),
    ).toEqual([
      'ROLLBACK_STARTED three',
      'ROLLBACK_COMPLETED three',
      'ROLLBACK_STARTED two',
      'ROLLBACK_FAILED two',
    ]);
    expect(events.at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { succeeded: false, error: 'Plangate.RollbackFailed' },
    });
    const result = readFileSync(join(cwd, FILES_DIR, 'rollback-on-abort-execution-result.md'), 'utf8');
    expect(result).toMatch(/\| 02 \| two \| shell \| FAILED at/);
    expect(result).toContain('Untested: `one`, `two`');
  });
});

/**
 * Workers around runs (issue 22), through the real CLI with scripted agents: `plangate resume`
 * keeps a `--no-workers` run's worker mode (it used to start its own workers, which took the
 * tasks from the external ones and failed them "no agent is configured"); the run says when an
 * agent step is queued and when nobody has taken it for a while; kill -9 of a worker or of a run
 * ends its agents and rollback shells (they used to run on as orphans); the attempt's worker is
 * recorded; the run's own workers take independent steps of one target side by side.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliRun, verifyChain, workDir } from './cli.ts';
import { scriptedWorker, standsStill, WORKER_FIXTURES, WORKER_TIME_SCALE } from './worker-setup.ts';

const AGENT = join(WORKER_FIXTURES, 'timed-agent.sh');

/** A work directory with `plan` copied in, the agent's log directory and a store path. */
async function setUp(plan: string): Promise<{ tmp: string; plan: string; log: string; store: string }> {
  const tmp = await workDir();
  const log = join(tmp, 'agent-log');
  await mkdir(log);
  await copyFile(join(WORKER_FIXTURES, plan), join(tmp, plan));
  return { tmp, plan: join(tmp, plan), log, store: join(tmp, 'store') };
}

/** The heartbeat files of a hanging agent or rollback (names starting `prefix`), once there are `count`. */
async function beatsOf(prefix: string, count: number, run: CliRun): Promise<string[]> {
  const read = () =>
    readdirSync(dirname(prefix))
      .filter((name) => name.startsWith(basename(prefix)))
      .map((name) => join(dirname(prefix), name));
  await run.until(`${count} heartbeats ${prefix}*`, () => read().length >= count, 60_000);
  return read();
}

/**
 * The heartbeats still going after 10 s (none: every process that wrote them has ended). A pid
 * cannot say it: in its sandbox a process has a pid of its own.
 */
async function stillBeating(files: readonly string[]): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  const still = files.map((file) => ({ file, stands: standsStill(file, 1000) }));
  while (still.some((s) => !s.stands()) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 100));
  return still.filter((s) => !s.stands()).map((s) => s.file);
}

function workerProcess(tmp: string, store: string, env: Readonly<Record<string, string>>): CliRun {
  return scriptedWorker({ agentCommand: AGENT, workspace: tmp, store, cwd: tmp, env });
}

describe('workers around runs', { timeout: 120_000 }, () => {
  it('resume of a --no-workers run leaves agent steps to plangate worker processes; the run says a step waits for a worker and records who ran it', async () => {
    const { tmp, plan, log, store } = await setUp('pair.yaml');
    // The worker's time scale: the steps, queued before the kill, must outlast a resume and a worker starting.
    const common = [
      '--json',
      '--approve',
      '--store',
      store,
      '--files-dir',
      tmp,
      '--time-scale',
      WORKER_TIME_SCALE,
    ];
    // No agent here: a worker of the run itself could only fail the tasks.
    const run = new CliRun(['run', plan, '--no-workers', ...common], tmp, {
      PLANGATE_AGENT_COMMAND: '',
    });
    await run.untilEvent('TASK_STARTED', undefined, 2);
    await run.until('the queued lines', () => /right.*queued for a "coder" worker/.test(run.stderr));
    expect(run.stderr).toMatch(/left.*queued for a "coder" worker/);
    await run.until('a wait notice', () =>
      /left.* waits for a "coder" worker: none has taken it for \d+ s/.test(run.stderr),
    );
    run.kill9();
    await run.exited;

    const resume = new CliRun(['resume', run.executionArn, ...common], tmp, { PLANGATE_AGENT_COMMAND: '' });
    await resume.until('re-attached', () => resume.stderr.includes('Execution:'));
    await resume.until('the worker hint', () => resume.stderr.includes('plangate worker --target coder'));
    const worker = workerProcess(tmp, store, { AGENT_LOG: log });
    try {
      await resume.until(
        'the end or a failure',
        () => resume.count('TASK_FAILED') > 0 || resume.count('EXECUTION_COMPLETE') > 0,
        60_000,
      );
      expect(resume.events.filter((e) => e.event === 'TASK_FAILED').map((e) => e.details)).toEqual([]);
      expect(await resume.exited, resume.stderr).toBe(0);
    } finally {
      worker.terminate();
    }
    await worker.exited;
    const name = /^(\S+): working for "coder"/m.exec(worker.stdout)?.[1];
    expect(name).toMatch(new RegExp(`^${hostname()}:\\d+$`));
    expect(worker.stdout).toMatch(/took left/);
    expect(worker.stdout).toMatch(/took right/);

    // Which worker ran each attempt is in the journal, and so in `plangate events` and the files.
    const events = resume.events;
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    for (const step of ['left', 'right'])
      expect(events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === step)?.details).toMatchObject({
        worker: name,
      });
    const listed = new CliRun(['events', run.executionArn, '--store', store], tmp);
    expect(await listed.exited).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`TASK_COMPLETED\\s+left .*"worker":"${name}"`));
    const result = readFileSync(join(tmp, 'pair-execution/tasks/01/result.md'), 'utf8');
    expect(result).toContain(`**Worker:** ${name}`);
  });

  it('kill -9 of a worker ends its agent and what the agent started', async () => {
    const { tmp, plan, log, store } = await setUp('pair.yaml');
    const hang = join(tmp, 'agents.beat');
    const run = new CliRun(
      ['run', plan, '--no-workers', '--json', '--approve', '--store', store, '--files-dir', tmp],
      tmp,
    );
    const worker = workerProcess(tmp, store, { AGENT_LOG: log, AGENT_HANG_FILE: hang });
    try {
      const beats = await beatsOf(hang, 2, run);
      worker.kill9();
      await worker.exited;
      expect(await stillBeating(beats), 'agent processes left running').toEqual([]);
    } finally {
      run.kill9();
      await run.exited;
    }
  });

  it('kill -9 of a run ends its own workers’ agents, and a rollback shell it was running', async () => {
    const { tmp, plan, log, store } = await setUp('pair.yaml');
    const hang = join(tmp, 'agents.beat');
    const run = new CliRun(['run', plan, '--json', '--approve', '--store', store, '--files-dir', tmp], tmp, {
      PLANGATE_AGENT_COMMAND: AGENT,
      AGENT_LOG: log,
      AGENT_HANG_FILE: hang,
    });
    const agents = await beatsOf(hang, 2, run);
    run.kill9();
    await run.exited;
    expect(await stillBeating(agents), 'agent processes left running').toEqual([]);

    const rollback = await setUp('rollback-hang.yaml');
    const undo = new CliRun(
      ['run', rollback.plan, '--json', '--approve', '--store', rollback.store, '--time-scale', '0.01'],
      rollback.tmp,
    );
    // An exit code says nothing of its cause (unknown): a person decides, and aborts.
    await undo.until('the escalation', () => undo.stderr.includes('abort   stop the run'));
    undo.answer('abort');
    const shells = await beatsOf(join(rollback.tmp, 'rollback.beat'), 2, undo);
    await undo.untilEvent('ROLLBACK_STARTED', 'make');
    undo.kill9();
    await undo.exited;
    expect(await stillBeating(shells), 'rollback processes left running').toEqual([]);
  });

  it('runs independent steps of one target side by side on the run’s own workers', async () => {
    const { tmp, plan, log, store } = await setUp('pair.yaml');
    const run = new CliRun(
      ['run', plan, '--json', '--approve', '--store', store, '--files-dir', tmp, '--time-scale', '0.01'],
      tmp,
      { PLANGATE_AGENT_COMMAND: AGENT, AGENT_LOG: log, AGENT_SLEEP: '3' },
    );
    expect(await run.exited, run.stderr).toBe(0);
    const timeline = readFileSync(join(log, 'timeline'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' ')[0]);
    // Both started before either ended.
    expect(timeline).toEqual(['start', 'start', 'end', 'end']);
    const workers = run.events
      .filter((e) => e.event === 'TASK_COMPLETED')
      .map((e) => String(e.details.worker));
    expect(workers).toHaveLength(2);
    for (const worker of workers) expect(worker).toMatch(new RegExp(`^${hostname()}:\\d+`));
  });
});

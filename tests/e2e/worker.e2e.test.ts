/**
 * Agents as workers (issue 10), through the real CLI: `plangate run --no-workers` on seed 004's
 * fix-auth-timeout plan (its contracts adapted to bash, grep, test and git) against a throwaway
 * git repository, and two `plangate worker --target coder` processes running a scripted coder.
 * The coder's first attempt at the fix does nothing and exits 0: the contract the worker runs
 * catches it, the retry's handoff carries the contract's stderr, and the run succeeds. A worker
 * killed mid-task is recovered by the heartbeat timeout and a retry on another worker; seed 004's
 * other two plans, extract-config-module (a coder and a reviewer worker) and
 * migrate-requests-to-httpx (nine steps, 47 files), run end to end too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { executionFiles } from '../../lib/files/execution-files.ts';
import { loadPlan } from '../../lib/plan/load.ts';
import { type CliRun, verifyChain, workDir } from './cli.ts';
import {
  buggyWorkspace,
  filesUnder,
  regeneratedFiles,
  runWithWorkers,
  standsStill,
  WORKER_FIXTURES,
} from './worker-setup.ts';

const PLAN = join(WORKER_FIXTURES, 'fix-auth-timeout.md');

describe('plangate worker', { timeout: 120_000 }, () => {
  it('runs fix-auth-timeout on two coder workers: the lazy attempt is caught by the contract, the retry is told why', async () => {
    const { tmp, repo, log } = await buggyWorkspace();
    const { run, worker, store } = runWithWorkers(PLAN, repo, tmp, { AGENT_LOG: log });
    const workers = [worker(), worker()];
    try {
      const code = await run.exited;
      expect(code, `${run.stderr}\n${workers.map((w) => w.stdout + w.stderr).join('\n')}`).toBe(0);
    } finally {
      for (const w of workers) w.terminate();
    }
    await Promise.all(workers.map((w) => w.exited));
    expect(run.stderr).toContain('plangate worker --target coder');

    // The journal: the lazy attempt failed its contract, recovery retried it, every step completed.
    const journal = run.events;
    expect(verifyChain(journal)).toEqual({ ok: true, count: journal.length });
    const of = (type: string, step: string) => journal.filter((e) => e.event === type && e.task_id === step);
    const failed = of('TASK_FAILED', 's2-write-the-fix');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.details).toMatchObject({ evidence: { kind: 'command', passed: false } });
    expect(JSON.stringify(failed[0]?.details)).toContain('No such file or directory');
    expect(of('TASK_STARTED', 's2-write-the-fix')).toHaveLength(2);
    expect(of('RECOVERY_APPLIED', 's2-write-the-fix').at(-1)?.details).toMatchObject({ outcome: 'success' });
    for (const step of ['s1-analyze-the-bug', 's2-write-the-fix', 's3-lint-and-type-check', 's4-create-pr'])
      expect(of('TASK_COMPLETED', step), step).toHaveLength(1);
    expect(journal.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });

    // The retry's handoff and prompt carry the contract's stderr; the first attempt's did not.
    const prompts = (await readdir(log)).sort();
    expect(prompts.filter((f) => f.endsWith('.prompt'))).toEqual([
      's1-analyze-the-bug-1.prompt',
      's2-write-the-fix-1.prompt',
      's2-write-the-fix-2.prompt',
      's3-lint-and-type-check-1.prompt',
      's4-create-pr-1.prompt',
    ]);
    const retry = await readFile(join(log, 's2-write-the-fix-2.prompt'), 'utf8');
    expect(retry).toContain('Previous attempt (1) failed.');
    expect(retry).toContain('tests/auth/test_timeout.sh: No such file or directory');
    expect(await readFile(join(log, 's2-write-the-fix-1.prompt'), 'utf8')).not.toContain('Previous attempt');
    const handoff = await readFile(join(log, 's2-write-the-fix-2.handoff.md'), 'utf8');
    expect(handoff).toContain('# Handoff: Task 2/4 — Write the fix');
    expect(handoff).toContain('No such file or directory');

    // Each task went to one worker; both printed what they took and finished.
    const took = workers.flatMap((w) => w.stdout.split('\n').filter((l) => l.includes(' took ')));
    expect(took).toHaveLength(5);
    expect(workers.map((w) => w.stdout).join('\n')).toMatch(
      /✓ s4-create-pr: agent exited 0; contract exit 0 \(passed\)/,
    );

    // The work is in the repository, committed on the feature branch.
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo }).toString();
    expect(git('rev-parse', '--abbrev-ref', 'HEAD').trim()).toBe('fix/auth-timeout');
    expect(git('show', 'HEAD:src/auth/handler.py')).toContain('timeout=120');
    expect(git('status', '--porcelain')).toBe('');

    // Seed 003's files as the run wrote them are the events' projection: `plangate files`
    // regenerates the same bytes from the stored events, and what they say is what the events say.
    const written = filesUnder(join(tmp, 'fix-auth-timeout-execution'));
    const fresh = join(tmp, 'regenerated');
    await mkdir(fresh);
    expect(await regeneratedFiles(run.executionArn, store, fresh, 'fix-auth-timeout')).toEqual(written);
    expect([...written.keys()].sort()).toEqual([
      'execution-state.md',
      'fix-auth-timeout-execution-result.md',
      ...['01', '02', '03', '04'].flatMap((n) =>
        ['execution.log', 'handoff.md', 'result.md'].map((f) => `tasks/${n}/${f}`),
      ),
    ]);
    const file = (path: string) => written.get(path) ?? '';
    const steps = ['s1-analyze-the-bug', 's2-write-the-fix', 's3-lint-and-type-check', 's4-create-pr'];
    steps.forEach((step, i) => {
      const n = `0${i + 1}`;
      const completed = of('TASK_COMPLETED', step)[0];
      const evidence = completed?.details.evidence as { summary: string };
      expect(file('execution-state.md')).toContain(
        `| ${n} | ${step} | completed | ${completed?.timestamp} |  |`,
      );
      expect(file(`tasks/${n}/result.md`)).toContain(`| Contract (command) | PASS | ${evidence.summary} |`);
      expect(file(`tasks/${n}/result.md`)).toContain(`**Attempts:** ${of('TASK_STARTED', step).length}`);
      // The agent reported no declared outputs: what it said is captured as the tool result.
      const result = completed?.details.result as { exitCode: number };
      expect(file(`tasks/${n}/result.md`)).toContain(`| \`exitCode\` | ${result.exitCode} |`);
      // One log entry per event of the task, each headed by its timestamp, in order.
      const heads = file(`tasks/${n}/execution.log`)
        .split('\n')
        .filter((l) => /^\d{4}-/.test(l));
      expect(heads).toEqual(
        journal
          .filter((e) => e.task_id === step)
          .map((e) => expect.stringMatching(`^${e.timestamp} ${e.event}: `)),
      );
    });
    // The lazy attempt: logged with the contract's stderr, listed as an error of the task.
    expect(file('tasks/02/execution.log')).toContain('tests/auth/test_timeout.sh: No such file or directory');
    expect(file('tasks/02/result.md')).toContain(`- ${failed[0]?.timestamp} TASK_FAILED: `);
    expect(file('fix-auth-timeout-execution-result.md')).toContain('**Outcome:** succeeded');
    expect(file('fix-auth-timeout-execution-result.md')).toContain(
      '**Summary:** 4/4 tasks completed, 0 failed',
    );
    // Right after the lazy attempt failed, the projection said FAIL with the failure's evidence.
    const lazy = failed[0];
    if (!lazy) throw new Error('no failed attempt');
    const cut = journal.indexOf(lazy) + 1;
    const plan = (await loadPlan(PLAN)).plan;
    if (!plan) throw new Error(`${PLAN} does not load`);
    const then = executionFiles(plan, journal.slice(0, cut)).get('tasks/02/result.md') ?? '';
    expect(then).toContain('**Status:** failed');
    expect(then).toContain(
      `| Contract (command) | FAIL | ${(lazy.details.evidence as { summary: string }).summary} |`,
    );
  });

  it('recovers from a worker killed mid-task: its heartbeats stop, the task times out, another worker takes the retry', async () => {
    const { tmp, repo, log } = await buggyWorkspace();
    const hang = join(tmp, 'hung-agent.pid');
    const { run, worker } = runWithWorkers(PLAN, repo, tmp, { AGENT_LOG: log, AGENT_HANG_FILE: hang });
    const first = worker();
    let second: CliRun | undefined;
    try {
      await first.until('the first task taken', () => first.stdout.includes(' took '));
      await run.until(
        'the agent at work',
        () => existsSync(hang) && readFileSync(hang, 'utf8').trim() !== '',
      );
      first.kill9();
      await first.exited;
      // The worker's agent does not outlive it (its sandbox is ended): it cannot do the work later.
      await run.until('the agent ended', standsStill(hang, 1000), 60_000);
      second = worker();
      const code = await run.exited;
      expect(code, `${run.stderr}\n${second.stdout}${second.stderr}`).toBe(0);
    } finally {
      second?.terminate();
    }
    await second.exited;
    const journal = run.events;
    expect(verifyChain(journal)).toEqual({ ok: true, count: journal.length });
    const s1 = journal.filter((e) => e.task_id === 's1-analyze-the-bug');
    expect(JSON.stringify(s1.find((e) => e.event === 'FAILURE_CLASSIFIED')?.details)).toContain(
      'States.HeartbeatTimeout',
    );
    expect(s1.filter((e) => e.event === 'TASK_STARTED')).toHaveLength(2);
    expect(s1.filter((e) => e.event === 'TASK_COMPLETED')).toHaveLength(1);
    expect(journal.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
    // The second worker did everything after the crash, the retry of the first step included.
    expect(second.stdout).toMatch(/took s1-analyze-the-bug/);
  });

  it('runs extract-config-module with a coder and a reviewer worker: each takes only its own target', async () => {
    const tmp = await workDir();
    const repo = join(tmp, 'repo');
    const log = join(tmp, 'agent-log');
    await mkdir(join(repo, 'src'), { recursive: true });
    await mkdir(join(repo, 'tests'));
    await mkdir(log);
    await writeFile(
      join(repo, 'src/app.py'),
      [
        'import os',
        '# config:begin',
        'def load_config():',
        "    return {'debug': os.environ.get('APP_DEBUG') == '1'}",
        '# config:end',
        'def main():',
        '    return load_config()',
        '',
      ].join('\n'),
    );
    // Behaviour must not change: app.main() still answers the config.
    await writeFile(
      join(repo, 'tests/run.sh'),
      `python3 -c "import sys; sys.path.insert(0, 'src'); import app; assert app.main() == {'debug': False}, app.main()"\n`,
    );
    const plan = join(WORKER_FIXTURES, 'extract-config-module.md');
    const { run, worker } = runWithWorkers(plan, repo, tmp, { AGENT_LOG: log });
    const coder = worker('coder');
    const reviewer = worker('reviewer');
    try {
      const code = await run.exited;
      expect(code, `${run.stderr}\n${coder.stdout}${reviewer.stdout}${reviewer.stderr}`).toBe(0);
    } finally {
      coder.terminate();
      reviewer.terminate();
    }
    await Promise.all([coder.exited, reviewer.exited]);
    const took = (w: CliRun) =>
      w.stdout
        .split('\n')
        .filter((l) => l.includes(' took '))
        .map((l) => /took (\S+)/.exec(l)?.[1]);
    expect(took(coder)).toEqual(['s1-map-dependencies', 's2-extract-module']);
    expect(took(reviewer)).toEqual(['s3-review-extraction']);
    expect(run.events.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
    expect(await readFile(join(repo, 'src/config.py'), 'utf8')).toContain('def load_config');
    expect(await readFile(join(repo, 'docs/review-config-extract.md'), 'utf8')).toContain('APPROVED');
  });

  it('runs migrate-requests-to-httpx: nine steps on two coder workers, 47 files migrated batch by batch', async () => {
    const tmp = await workDir();
    const repo = join(tmp, 'repo');
    const log = join(tmp, 'agent-log');
    await mkdir(log);
    const plan = join(WORKER_FIXTURES, 'migrate-requests-to-httpx.md');
    const files = [
      ...new Set(
        [...(await readFile(plan, 'utf8')).matchAll(/^- file:((?:src|scripts)\/\S+\.py)$/gm)].map(
          (m) => m[1],
        ),
      ),
    ] as string[];
    expect(files).toHaveLength(47);
    for (const file of files) {
      await mkdir(join(repo, file, '..'), { recursive: true });
      await writeFile(join(repo, file), 'import requests\n');
    }
    await writeFile(join(repo, 'requirements.txt'), 'requests\n');
    await mkdir(join(repo, 'tests'));
    await writeFile(join(repo, 'tests/run.sh'), 'python3 -m py_compile $(find src scripts -name "*.py")\n');
    const { run, worker } = runWithWorkers(plan, repo, tmp, { AGENT_LOG: log });
    const workers = [worker(), worker()];
    try {
      const code = await run.exited;
      expect(code, `${run.stderr}\n${workers.map((w) => w.stdout).join('\n')}`).toBe(0);
    } finally {
      for (const w of workers) w.terminate();
    }
    await Promise.all(workers.map((w) => w.exited));
    expect(run.events.filter((e) => e.event === 'TASK_COMPLETED')).toHaveLength(9);
    expect(run.events.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
    for (const file of files) expect(await readFile(join(repo, file), 'utf8'), file).toBe('import httpx\n');
    expect(await readFile(join(repo, 'requirements.txt'), 'utf8')).toBe('httpx\n');
  });
});

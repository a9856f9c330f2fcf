/**
 * Every example plan: validated and compiled; those whose tools all run on this machine are
 * also run end to end on the local stack. The others need things a fresh machine does not
 * have, and say so here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compilePlan } from '../../lib/compiler/index.ts';
import { loadPlan } from '../../lib/plan/load.ts';
import { CliRun, REPO, runPlan, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

/** Examples that cannot run locally, and why (validated and compiled only). */
const NOT_RUNNABLE: Readonly<Record<string, string>> = {
  'fix-auth-timeout.md':
    'its contracts need uv, ruff, pyright and gh, and its steps a coding agent (tests/e2e/worker.e2e.test.ts runs it with workers, its contracts adapted)',
  'extract-config-module.md':
    'its contracts need uv and ruff, and its steps coder/reviewer agents (tests/e2e/worker.e2e.test.ts runs it with workers, its contracts adapted)',
  'migrate-requests-to-httpx.md':
    'its steps need coder/reviewer agents (plangate worker) and a Python project',
  'release-api.json': 'it builds an npm project, invokes a deploy Lambda and posts to a Slack webhook secret',
};

const examples = readdirSync(join(REPO, 'examples')).filter((f) => /\.(md|ya?ml|json)$/.test(f));

describe.concurrent('example plans', { timeout: 60_000 }, () => {
  it.each(examples)('%s validates and compiles', async (file) => {
    const loaded = await loadPlan(join(REPO, 'examples', file));
    expect(loaded.problems.filter((p) => p.severity === 'error')).toEqual([]);
    const compiled = compilePlan(loaded.plan!);
    expect(compiled.definitions.length).toBeGreaterThan(0);
  });

  it.each(examples.filter((f) => NOT_RUNNABLE[f] === undefined))(
    '%s runs end to end on the local stack',
    async (file) => {
      const cwd = await workDir();
      const run = runPlan(join(REPO, 'examples', file), cwd, ['--approve']);
      const code = await run.exited;
      expect(code, run.stderr).toBe(0);
      const events = await storedEvents(cwd, run.executionArn);
      expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
      expect(seedOrderProblems(events)).toEqual([]);
      expect(events.at(-1)?.details).toMatchObject({ succeeded: true, summary: { failed: 0 } });
    },
  );

  // How long it takes is bench/cli-startup.ts's to measure, not a test's on a shared machine.
  it("local-demo.yaml, the README's main command: the whole loop, in the sandbox, its server ended with its step", async () => {
    const cwd = await workDir();
    const run = new CliRun(['run', join(REPO, 'examples/local-demo.yaml'), '--approve'], cwd);
    expect(await run.exited, run.stderr).toBe(0);
    const work = join(cwd, 'plangate-demo');
    expect(JSON.parse(readFileSync(join(work, 'out/report.json'), 'utf8'))).toEqual({
      total: 5050,
      longest: 'epsilon',
    });
    const events = await storedEvents(cwd, run.executionArn);
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(seedOrderProblems(events)).toEqual([]);
    const completed = (id: string) =>
      events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === id)?.details;
    expect(completed('serve')).toMatchObject({ evidence: { kind: 'command', passed: true } });
    expect(completed('announce')).toMatchObject({ evidence: { kind: 'assert', passed: true } });
    // The server ended with its step: nothing answers on its port.
    const port = readFileSync(join(work, 'server.port'), 'utf8').trim();
    expect(port).toMatch(/^\d+$/);
    await expect(fetch(`http://127.0.0.1:${port}/report.json`)).rejects.toThrow();
    expect(run.stdout).toContain('8/8 tasks completed. 0 failures.');
    expect(run.stdout).toContain(`Outputs: ${work} (the plan's context.workDir)`);
    expect(run.stdout).toContain(`Events: plangate events ${run.executionArn}`);
  });
});

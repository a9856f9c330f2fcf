/**
 * Every example plan: validated and compiled; those whose tools all run on this machine are
 * also run end to end on the local stack. The others need things a fresh machine does not
 * have, and say so here.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compilePlan } from '../../lib/compiler/index.ts';
import { loadPlan } from '../../lib/plan/load.ts';
import { REPO, runPlan, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

/** Examples that cannot run locally, and why (validated and compiled only). */
const NOT_RUNNABLE: Readonly<Record<string, string>> = {
  'fix-auth-timeout.md':
    'its steps are coder-agent tasks (seed 004 targets) and it needs uv, ruff, pyright and gh',
  'extract-config-module.md': 'its steps are coder/reviewer-agent tasks (seed 004 targets)',
  'migrate-requests-to-httpx.md': 'its steps are coder/reviewer-agent tasks (seed 004 targets)',
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
});

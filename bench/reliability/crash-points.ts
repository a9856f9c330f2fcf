/**
 * Every named crash point (lib/runtime/shared/crash-points.ts), `trials` times each: the suite's
 * own crash-point tests (tests/e2e/*-crash-points.e2e.test.ts: the real `plangate serve` killed
 * with SIGKILL at the point, started again on the same store, the invariants checked) run through
 * vitest, each test's outcome read from its JSON report. A point held in a trial when its test
 * passed; a point no test kills at counts as not held.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CRASH_POINTS, type CrashPoint } from '../../lib/runtime/shared/crash-points.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
/** vitest's file filter: every tests/e2e/*crash-points.e2e.test.ts. */
const FILES = 'crash-points.e2e';

export interface CrashPointTrials {
  readonly points: readonly { readonly point: CrashPoint; readonly trials: number; readonly held: number }[];
  readonly kills: number;
  readonly held: boolean;
}

export function crashPointTrials(trials = 2): CrashPointTrials {
  const held = new Map<CrashPoint, { trials: number; held: number }>(
    CRASH_POINTS.map((point) => [point, { trials: 0, held: 0 }]),
  );
  for (let trial = 0; trial < trials; trial++) {
    const dir = mkdtempSync(path.join(tmpdir(), 'plangate-crash-trials-'));
    const report = path.join(dir, 'report.json');
    spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', FILES, '--reporter=json', `--outputFile=${report}`],
      { cwd: REPO, stdio: 'ignore', env: { ...process.env, NODE_NO_WARNINGS: '1' } },
    );
    const results = JSON.parse(readFileSync(report, 'utf8')) as {
      testResults: { assertionResults: { title: string; status: string }[] }[];
    };
    for (const test of results.testResults.flatMap((file) => file.assertionResults)) {
      const point = /^killed at (\S+)$/.exec(test.title)?.[1] as CrashPoint | undefined;
      const counted = point === undefined ? undefined : held.get(point);
      if (!counted) continue;
      counted.trials++;
      if (test.status === 'passed') counted.held++;
    }
    rmSync(dir, { recursive: true, force: true });
  }
  const points = [...held].map(([point, counted]) => ({ point, ...counted }));
  return {
    points,
    kills: points.reduce((sum, p) => sum + p.trials, 0),
    held: points.every((p) => p.trials === trials && p.held === trials),
  };
}

/**
 * The engine's Step Functions API as an SDK nobody here wrote sees it: tests/engine/boto3/drive_engine.py
 * drives `plangate engine serve` with boto3 through every operation the engine serves and checks
 * each answer against botocore's service model. Runs once per Python that has boto3 (Debian's
 * /usr/bin/python3 first, then the `python3` on PATH when it is another one with another botocore).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_NAMES } from '../../../lib/engine/operations.ts';
import { PLANGATE_NODE_ARGS } from '../../support/plangate-cli.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;
const SCRIPT = join(ROOT, 'tests/engine/boto3/drive_engine.py');
const run = promisify(execFile);

/** A Python with boto3: its path and botocore version. */
interface Python {
  readonly path: string;
  readonly botocore: string;
}

async function pythonsWithBoto3(): Promise<{ found: Python[]; missing: string[] }> {
  const found: Python[] = [];
  const missing: string[] = [];
  const seen = new Set<string>();
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    try {
      const { stdout } = await run(candidate, [
        '-c',
        'import sys, boto3, botocore; print(sys.executable); print(botocore.__version__)',
      ]);
      const [executable = candidate, version = '?'] = stdout.trim().split('\n');
      const key = `${realpathSync(executable)} ${version}`;
      if (!seen.has(key)) found.push({ path: candidate, botocore: version });
      seen.add(key);
    } catch (error) {
      missing.push(`${candidate}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  return { found, missing };
}

const { found: PYTHONS, missing } = await pythonsWithBoto3();
if (PYTHONS.length === 0)
  console.warn(`skipping the boto3 tests: no Python with boto3 (${missing.join('; ')})`);

function startServe(store: string): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(
    process.execPath,
    [...PLANGATE_NODE_ARGS, 'engine', 'serve', '--port', '0', '--store', store],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const url = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`engine serve exited early with ${code}`)));
  });
  url.catch(() => undefined);
  return { child, url };
}

describe.skipIf(PYTHONS.length === 0)('the engine API through boto3 (plangate engine serve)', () => {
  let dir: string;
  let serve: ReturnType<typeof startServe>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'plangate-boto3-'));
  });

  afterAll(async () => {
    if (serve && serve.child.exitCode === null) {
      const exited = new Promise((resolve) => serve.child.once('exit', resolve));
      serve.child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  });

  it.each(PYTHONS)(
    '$path (botocore $botocore): every served operation, shapes and error codes as the model says',
    async (python) => {
      // a fresh engine per Python: the script creates the same names each time
      if (serve && serve.child.exitCode === null) {
        const exited = new Promise((resolve) => serve.child.once('exit', resolve));
        serve.child.kill('SIGTERM');
        await exited;
      }
      serve = startServe(join(dir, `store-${python.botocore}`));
      const endpoint = await serve.url;
      const outcome = await run(python.path, [SCRIPT, endpoint, OPERATION_NAMES.join(',')], {
        cwd: ROOT,
        timeout: 100_000,
      }).catch((error: { stdout?: string; stderr?: string }) => error);
      const stdout = outcome.stdout ?? '';
      const lines = stdout.trim().split('\n');
      // what was skipped and why, for whoever reads the test log
      for (const line of lines)
        if (/^(skip|note|FAIL) /.test(line)) console.log(`[boto3 ${python.botocore}] ${line}`);
      const summary = JSON.parse(lines.at(-1) ?? '{}') as {
        exercised?: string[];
        skipped?: Record<string, string>;
        failures?: string[];
      };
      expect(summary.failures, outcome.stderr ?? '').toEqual([]);
      const covered = new Set([...(summary.exercised ?? []), ...Object.keys(summary.skipped ?? {})]);
      expect(OPERATION_NAMES.filter((op) => !covered.has(op))).toEqual([]);
    },
    120_000,
  );
});

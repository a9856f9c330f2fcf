/**
 * `npx cdk synth -o <dir>` as an operator runs it (offline, no AWS credentials, no Docker), once
 * per test run: the CDK test and the IAM simulation read the same cdk.out instead of each
 * synthesizing (half a minute apiece). The first file to ask synthesizes; another waits for it.
 * Test files only read the directory; tests/support/global-setup.ts removes it after the run.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../lib/cdk/paths.ts';

export interface CdkOut {
  /** The cdk.out directory: templates and asset directories. */
  readonly dir: string;
  /** How long the synth took, in milliseconds. */
  readonly synthMs: number;
}

const SYNTH_WAIT_MS = 240_000;

/** The run's shared cdk.out, synthesized on first use (vitest.config.ts names the run). */
export async function sharedCdkOut(): Promise<CdkOut> {
  const run = process.env.PLANGATE_TEST_RUN ?? `pid-${process.pid}`;
  const base = join(tmpdir(), `plangate-cdk-out-${run}`);
  const dir = join(base, 'cdk.out');
  const result = join(base, 'result.json');
  try {
    mkdirSync(base); // atomic: exactly one caller synthesizes
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return waitFor(result, dir);
  }
  const started = Date.now();
  const outcome = await synthesize(dir);
  const synthMs = Date.now() - started;
  writeFileSync(result, JSON.stringify({ ...outcome, synthMs }));
  if (outcome.code !== 0) throw new Error(`npx cdk synth exited ${outcome.code}:\n${outcome.stderr}`);
  return { dir, synthMs };
}

async function waitFor(result: string, dir: string): Promise<CdkOut> {
  const deadline = Date.now() + SYNTH_WAIT_MS;
  while (!existsSync(result)) {
    if (Date.now() > deadline) throw new Error(`the shared cdk synth did not finish in ${SYNTH_WAIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const outcome = JSON.parse(readFileSync(result, 'utf8')) as {
    code: number;
    stderr: string;
    synthMs: number;
  };
  if (outcome.code !== 0) throw new Error(`npx cdk synth exited ${outcome.code}:\n${outcome.stderr}`);
  return { dir, synthMs: outcome.synthMs };
}

function synthesize(outdir: string): Promise<{ code: number | null; stderr: string }> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith('AWS_')) env[key] = value;
  const child = spawn('npx', ['cdk', 'synth', '--quiet', '--no-notices', '-o', outdir], {
    cwd: PROJECT_ROOT,
    env: { ...env, AWS_EC2_METADATA_DISABLED: 'true', CDK_DOCKER: 'docker-is-not-used' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

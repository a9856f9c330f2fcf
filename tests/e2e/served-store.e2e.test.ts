/**
 * A store held by `plangate serve` is readable: `status`, `events` and `audit` read through the
 * serving process (it announces itself in the store, as `run` does) instead of crashing on the
 * database it holds; `events --json | head -1` ends quietly, without an EPIPE stack trace.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedFetch } from '../../lib/aws-local/api-gateway/signed-fetch.ts';
import type { LocalPrincipal } from '../../lib/aws-local/api-gateway/sigv4.ts';
import { echoChainPlan } from '../support/echo-plan.ts';
import { PLANGATE_NODE_ARGS, PLANGATE_SHELL_COMMAND } from '../support/plangate-cli.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');

let serve: ChildProcess;
let store: string;
let executionArn: string;

async function plangate(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...PLANGATE_NODE_ARGS, ...args], { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  store = await mkdtemp(join(tmpdir(), 'plangate-served-'));
  serve = spawn(process.execPath, [...PLANGATE_NODE_ARGS, 'serve', '--store', store], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    serve.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve((out.split('\n')[0] as string).trim());
    });
    serve.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
  const [principal] = JSON.parse(await readFile(join(store, 'credentials.json'), 'utf8')) as LocalPrincipal[];
  const plan = echoChainPlan('served-store', ['first', 'second'], { approval: { allowAutoApprove: false } });
  const response = await signedFetch(new URL('/plans', url), principal as LocalPrincipal, {
    method: 'POST',
    body: JSON.stringify(plan),
    headers: { 'content-type': 'application/json' },
  });
  expect(response.status).toBeLessThan(300);
  executionArn = ((await response.json()) as { executionArn: string }).executionArn;
}, 90_000);

afterAll(async () => {
  serve?.kill('SIGTERM');
  await new Promise((r) => serve?.once('exit', r));
  await rm(store, { recursive: true, force: true });
});

describe('a store held by plangate serve', () => {
  it('is listed by status', async () => {
    const status = await plangate('status', '--store', store);
    expect(status.stderr).not.toMatch(/Database is closed|\n\s+at /);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('served-store');
  });

  it("gives an execution's events and its audit trail", async () => {
    const events = await plangate('events', executionArn, '--store', store);
    expect(events.stderr).not.toMatch(/Database is closed|\n\s+at /);
    expect(events.stdout).toContain('PLAN_CREATED');
    const audit = await plangate('audit', 'query', '--store', store, '--plan', 'served-store');
    expect(audit.stderr).not.toMatch(/Database is closed|\n\s+at /);
    expect(audit.code).toBe(0);
  });

  it('ends quietly when the reader closes the pipe', async () => {
    const { stdout, stderr } = await run(
      'bash',
      ['-c', `${PLANGATE_SHELL_COMMAND} events '${executionArn}' --store '${store}' --json | head -1`],
      { cwd: ROOT },
    );
    expect(JSON.parse(stdout).event).toBe('PLAN_CREATED');
    expect(stderr).not.toMatch(/EPIPE|\n\s+at /);
  });
});

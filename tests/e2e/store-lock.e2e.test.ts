/**
 * One `plangate serve` per store: of servers started on one store at once, one serves and every
 * other exits 1 with a one-line refusal naming the holder (never a stack trace); a lock left by a
 * process that is gone is taken over.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { PLANGATE_NODE_ARGS } from '../support/plangate-cli.ts';
import { startServe } from './serve-process.ts';

const dir = fs.mkdtempSync(join(tmpdir(), 'plangate-store-lock-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** `plangate serve` on `store`: what it has printed so far, and its exit. */
function serveOnce(store: string) {
  const child = spawn(
    process.execPath,
    [...PLANGATE_NODE_ARGS, 'serve', '--store', store, '--identity', 'header'],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    },
  );
  const out = { pid: child.pid, stdout: '', stderr: '', code: undefined as number | null | undefined };
  child.stdout.on('data', (d: Buffer) => {
    out.stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out.stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) =>
    child.on('exit', (code) => {
      out.code = code;
      resolve();
    }),
  );
  return { out, exited };
}

async function until(check: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('of 10 servers started at once on one store, one serves and 9 refuse in one line naming it', async () => {
  const store = join(dir, 'raced');
  const racers = Array.from({ length: 10 }, () => serveOnce(store));
  await until(() => racers.filter((r) => r.out.code !== undefined).length === 9, 90_000);
  const [serving] = racers.filter((r) => r.out.code === undefined);
  if (!serving) throw new Error('none serves');
  await until(() => serving.out.stdout.startsWith('http://127.0.0.1:'), 30_000);
  const holder = JSON.parse(fs.readFileSync(join(store, 'LOCK'), 'utf8')) as { pid: number };
  expect(holder.pid).toBe(serving.out.pid);
  for (const { out } of racers.filter((r) => r !== serving)) {
    expect(out.code).toBe(1);
    expect(out.stdout).toBe('');
    // one line, naming the holder and the fix: no stack trace
    expect(out.stderr).toMatch(
      new RegExp(
        `^plangate serve: could not start: the store \\S*raced is held by process ${holder.pid} \\(plangate serve, since [^)]+\\); stop that process, or give this one another --store\\n$`,
      ),
    );
  }
  process.kill(holder.pid, 'SIGTERM');
  await serving.exited;
  expect(serving.out.code).toBe(0);
  expect(fs.existsSync(join(store, 'LOCK'))).toBe(false);
}, 150_000);

it('takes over a lock left by a process that is gone', async () => {
  const store = join(dir, 'stale');
  fs.mkdirSync(store, { recursive: true });
  const dead = Number(
    spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout,
  );
  fs.writeFileSync(
    join(store, 'LOCK'),
    JSON.stringify({
      pid: dead,
      start: 1,
      token: 'left-by-a-killed-serve',
      holder: 'plangate serve',
      since: '2026-01-01T00:00:00.000Z',
    }),
  );
  const serve = startServe(['--store', store, '--identity', 'header'], dir);
  await serve.line((l) => l.startsWith('http://127.0.0.1:'));
  expect(JSON.parse(fs.readFileSync(join(store, 'LOCK'), 'utf8'))).toMatchObject({ pid: serve.child.pid });
  expect(await serve.stop()).toBe(0);
}, 60_000);

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import { Journal, readEvents } from '../../lib/runtime/journal/journal.ts';

const REPO = join(import.meta.dirname, '../..');
const TSX_LOADER = pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href;
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

it('keeps the journal across a restart of the local stack (data under <dataDir>/dynamodb)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-dynamo-'));
  dirs.push(dir);
  const event = {
    event: 'PLAN_CREATED' as const,
    planId: 'p',
    planVersion: 1,
    planDigest: 'sha256:1',
    executionId: 'exec-restart',
    details: { task_count: 1, dependencies: {} },
  };
  const first = await startLocalDataPlane({ dataDir: dir });
  expect(first.dynamo.path).toBe(join(dir, 'dynamodb'));
  await new Journal({ dynamo: first.clients.doc, eventsTable: first.tableNames.events }).append(event);
  await first.close();

  const second = await startLocalDataPlane({ dataDir: dir });
  await new Journal({ dynamo: second.clients.doc, eventsTable: second.tableNames.events }).append(event);
  const events = await readEvents(second.clients.doc, second.tableNames.events, 'exec-restart');
  await second.close();
  expect(events.map((e) => e.seq)).toEqual([1, 2]);
  expect(verifyChain(events).ok).toBe(true);
});

async function storeDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-dynamo-'));
  dirs.push(dir);
  return dir;
}

it('keeps every answered write after kill -9 mid-stream (dynalite answers a write once LevelDB has handed it to the OS)', async () => {
  const dir = await storeDir();
  const child = spawn(
    process.execPath,
    ['--import', TSX_LOADER, join(REPO, 'tests/support/journal-writer.ts'), dir],
    { env: { ...process.env, NODE_NO_WARNINGS: '1' }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let answered = 0;
  await new Promise<void>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`the writer exited (${code}) before it was killed`)));
    child.stdout.on('data', (chunk: Buffer) => {
      const seqs = chunk.toString().trim().split('\n').map(Number);
      answered = Math.max(answered, ...seqs);
      if (answered >= 60 && !child.killed) {
        child.kill('SIGKILL');
        resolve();
      }
    });
  });
  await new Promise((resolve) => child.once('exit', resolve));

  const plane = await startLocalDataPlane({ dataDir: dir });
  const events = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-killed');
  await plane.close();
  expect(events.length).toBeGreaterThanOrEqual(answered);
  expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
}, 60_000);

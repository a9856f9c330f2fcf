import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startLocalDataPlane } from '../../lib/local/stack.ts';
import { Journal, readEvents, verifyChain } from '../../lib/runtime/journal/journal.ts';

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

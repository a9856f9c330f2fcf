/**
 * Reading a store (plangate status, events, audit) never writes to it: a store without data or
 * without tables is reported (or answered empty), and its table list is the same afterwards.
 */
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { localClients } from '../../lib/aws-local/clients.ts';
import { startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { startLocalDynamo } from '../../lib/aws-local/dynamo.ts';
import { run as audit } from '../../lib/cli/audit.ts';
import { run as events } from '../../lib/cli/events.ts';
import { run as status } from '../../lib/cli/status.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { openStoreReader, StoreNotFoundError } from '../../lib/serve/store-reader.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function tempStore(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-reader-'));
  dirs.push(dir);
  return join(dir, '.plangate');
}

/** The tables in the store's dynalite data, read with the store otherwise closed. */
async function tablesIn(store: string): Promise<string[]> {
  const dynamo = await startLocalDynamo({ dataDir: store });
  const clients = localClients({ dynamoEndpoint: dynamo.endpoint, eventsEndpoint: dynamo.endpoint });
  try {
    return (await clients.dynamo.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    clients.destroy();
    await dynamo.close();
  }
}

/** Runs a CLI command with its output captured. */
async function cli(command: (argv: string[]) => Promise<number>, ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  const code = await command(argv);
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

it('reading a store whose data has no tables creates none: an error or an empty answer', async () => {
  const store = await tempStore();
  expect(await tablesIn(store)).toEqual([]);

  await expect(openStoreReader(storePaths(store))).rejects.toThrow(StoreNotFoundError);
  const shown = await cli(events, 'arn:aws:states:us-east-1:0:execution:p:x', '--store', store);
  expect(shown).toMatchObject({ code: 1, stdout: '' });
  expect(shown.stderr).toContain(`no events table in the plangate store at ${store}`);
  expect(await cli(status, '--store', store, '--json')).toMatchObject({ code: 0, stdout: '' });
  expect((await cli(status, '--store', store)).stdout).toContain('No executions in this store');
  const audited = await cli(audit, 'query', '--store', store);
  expect(audited.code).toBe(1);
  expect(audited.stderr).toContain('no events table');

  expect(await tablesIn(store)).toEqual([]);
});

it('reading a store that does not exist creates nothing, not even its directory', async () => {
  const store = await tempStore();
  await expect(openStoreReader(storePaths(store))).rejects.toThrow(`no plangate store at ${store}`);
  expect((await cli(events, 'arn:aws:states:us-east-1:0:execution:p:x', '--store', store)).code).toBe(1);
  expect(await cli(status, '--store', store)).toMatchObject({ code: 0 });
  await expect(access(store)).rejects.toThrow();
});

it('reading a store with its tables reads and leaves the table list as it was', async () => {
  const store = await tempStore();
  const plane = await startLocalDataPlane({ dataDir: store });
  await plane.close();
  const before = await tablesIn(store);
  expect(before).toContain('plangate-events');

  const reader = await openStoreReader(storePaths(store));
  await reader.close();
  expect(await cli(status, '--store', store, '--json')).toMatchObject({ code: 0, stdout: '' });

  expect(await tablesIn(store)).toEqual(before);
});

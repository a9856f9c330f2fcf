import { spawn } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, expect, it } from 'vitest';
import { localClients } from '../../lib/local/clients.ts';
import { startLocalDynamo } from '../../lib/local/dynamo.ts';
import { LOG_FILE } from '../../lib/local/dynamo-store.ts';
import { startLocalDataPlane } from '../../lib/local/stack.ts';
import { Journal, readEvents, verifyChain } from '../../lib/runtime/journal/journal.ts';

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

const journalEvent = (executionId: string) => ({
  event: 'PLAN_CREATED' as const,
  planId: 'p',
  planVersion: 1,
  planDigest: 'sha256:1',
  executionId,
  details: { task_count: 1, dependencies: {} },
});

async function storeDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-dynamo-'));
  dirs.push(dir);
  return dir;
}

it('keeps every answered write after kill -9 mid-stream (the log is written before dynalite answers)', async () => {
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

it('drops a frame torn by a crash at the end of the log and keeps writing after it', async () => {
  const dir = await storeDir();
  const first = await startLocalDataPlane({ dataDir: dir });
  await new Journal({ dynamo: first.clients.doc, eventsTable: first.tableNames.events }).append(
    journalEvent('exec-torn'),
  );
  await first.close();
  const log = join(dir, 'dynamodb', LOG_FILE);
  const whole = (await stat(log)).size;
  // A frame that says 1,000 bytes follow, of which 3 made it to the disk.
  await appendFile(log, Buffer.from([0xe8, 0x03, 0, 0, 1, 2, 3]));

  const second = await startLocalDataPlane({ dataDir: dir });
  expect((await stat(log)).size).toBe(whole);
  await new Journal({ dynamo: second.clients.doc, eventsTable: second.tableNames.events }).append(
    journalEvent('exec-torn'),
  );
  const events = await readEvents(second.clients.doc, second.tableNames.events, 'exec-torn');
  await second.close();
  expect(events.map((e) => e.seq)).toEqual([1, 2]);
});

it('refuses a store another live process holds, and one this process already has open', async () => {
  const dir = await storeDir();
  const plane = await startLocalDataPlane({ dataDir: dir });
  await expect(startLocalDynamo({ dataDir: dir })).rejects.toThrow(/already open in this process/);
  await plane.close();

  // A live process that is not this one (the parent of this test runner) owns it.
  await writeFile(join(dir, 'dynamodb', 'owner.pid'), `${process.ppid}\n`);
  await expect(startLocalDynamo({ dataDir: dir })).rejects.toThrow(
    new RegExp(`in use by process ${process.ppid}`),
  );
  // A dead owner (a killed run) does not keep the store.
  await writeFile(join(dir, 'dynamodb', 'owner.pid'), '999999999\n');
  const reopened = await startLocalDynamo({ dataDir: dir });
  await reopened.close();
});

it('rewrites a log that grew past twice its live data, keeping the data', async () => {
  const dir = await storeDir();
  const first = await startLocalDataPlane({ dataDir: dir });
  const big = 'x'.repeat(200 * 1024);
  for (let i = 0; i < 60; i++)
    await first.clients.doc.send(
      new PutCommand({ TableName: first.tableNames.drafts, Item: { draftId: 'd', big, version: i } }),
    );
  await first.close();
  const log = join(dir, 'dynamodb', LOG_FILE);
  const grown = (await stat(log)).size;
  expect(grown).toBeGreaterThan(8 * 1024 * 1024);

  const second = await startLocalDataPlane({ dataDir: dir });
  const out = await second.clients.doc.send(
    new GetCommand({ TableName: second.tableNames.drafts, Key: { draftId: 'd' } }),
  );
  await second.close();
  expect(out.Item?.version).toBe(59);
  expect((await stat(log)).size).toBeLessThan(grown / 10);
});

it('copies a store an older plangate wrote with LevelDB into the log on first start', async () => {
  const dir = await storeDir();
  // dynalite on LevelDB, as lib/local/dynamo.ts ran it before: in a process of its own, where
  // nothing replaced dynalite's storage.
  const script = `
    const dynalite = require('dynalite');
    const { DynamoDBClient, CreateTableCommand, PutItemCommand } = require('@aws-sdk/client-dynamodb');
    const server = dynalite({ path: process.argv[1], createTableMs: 0 });
    server.listen(0, '127.0.0.1', async () => {
      const client = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:' + server.address().port,
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
      await client.send(new CreateTableCommand({ TableName: 'old', BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
      await client.send(new PutItemCommand({ TableName: 'old', Item: { id: { S: 'kept' }, n: { N: '7' } } }));
      client.destroy();
      server.close(() => process.exit(0));
    });`;
  await mkdir(join(dir, 'dynamodb'));
  const code = await new Promise((resolve) =>
    spawn(process.execPath, ['-e', script, join(dir, 'dynamodb')], { cwd: REPO, stdio: 'inherit' }).once(
      'exit',
      resolve,
    ),
  );
  expect(code).toBe(0);

  const dynamo = await startLocalDynamo({ dataDir: dir });
  const clients = localClients({ dynamoEndpoint: dynamo.endpoint, eventsEndpoint: dynamo.endpoint });
  const out = await clients.doc.send(new GetCommand({ TableName: 'old', Key: { id: 'kept' } }));
  clients.destroy();
  await dynamo.close();
  expect(out.Item).toEqual({ id: 'kept', n: 7 });
  expect((await stat(join(dir, 'dynamodb', LOG_FILE))).size).toBeGreaterThan(0);
}, 30_000);

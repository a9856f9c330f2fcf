import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { ConditionalCheckFailedException, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localClients } from '../../lib/aws-local/clients.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import type { BusEvent } from '../../lib/aws-local/eventbus.ts';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import {
  fromItem,
  GENESIS_HASH,
  hashEvent,
  indexAttributes,
  Journal,
  MAX_EVENT_BYTES,
  putNewEvent,
  queryEvents,
  readEvents,
  toItem,
} from '../../lib/runtime/journal/journal.ts';
import { ensureTables } from '../../lib/runtime/journal/tables.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { Redactor } from '../../lib/runtime/secrets/redact.ts';
import { EventTooLargeError, ExecutionEndedError } from '../../lib/runtime/shared/errors.ts';

const REPO = join(import.meta.dirname, '../..');
let dir: string;
let plane: LocalDataPlane;
let journal: Journal;
const published: BusEvent[] = [];

const base = { planId: 'deploy', planVersion: 1, planDigest: 'sha256:abc', executionId: 'exec-1' };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-journal-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  plane.bus.subscribe({ source: ['plangate'] }, (e) => {
    published.push(e);
  });
  journal = new Journal({
    dynamo: plane.clients.doc,
    eventsTable: plane.tableNames.events,
    events: plane.clients.events,
    redactor: new Redactor(['hunter2-db-password']),
  });
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

describe('tables', () => {
  it('creates the events table with its auditor indexes, and is idempotent', async () => {
    await ensureTables(plane.clients.dynamo, plane.tableNames);
    const out = await plane.clients.dynamo.send(
      new DescribeTableCommand({ TableName: plane.tableNames.events }),
    );
    expect(out.Table?.GlobalSecondaryIndexes?.map((i) => i.IndexName).sort()).toEqual([
      'byApprover',
      'byEventType',
      'byPlan',
      'byTask',
    ]);
  });
});

describe('Journal', () => {
  it('appends in sequence, chains by hash, publishes the same event, and verifies', async () => {
    await journal.append({
      ...base,
      event: 'GATE_APPROVAL_REQUESTED',
      details: { plan_id: 'deploy', gate: 'plan', round: 1 },
    });
    await journal.append({
      ...base,
      event: 'GATE_APPROVED',
      details: { gate: 'plan', approver: 'ana@example.com' },
    });
    const third = await journal.append({
      ...base,
      event: 'TASK_STARTED',
      task_id: 'build',
      task_name: 'Build',
      details: { attempt: 1, progress: '[Task 1/1]' },
    });
    expect(third.published).toBe(true);
    expect(third.stored.seq).toBe(3);
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-1');
    expect(events.map((e) => e.event)).toEqual(['GATE_APPROVAL_REQUESTED', 'GATE_APPROVED', 'TASK_STARTED']);
    expect(events[1]?.prevHash).toBe(events[0]?.hash);
    expect(verifyChain(events)).toEqual({ ok: true, count: 3 });
    await plane.bus.drain();
    expect(
      published
        .filter((e) => e.detail && (e.detail as JournalRecord).executionId === 'exec-1')
        .map((e) => e.detail),
    ).toEqual(events);
  });

  it('answers auditor queries by plan, event type, task and approver', async () => {
    const q = (index: 'byPlan' | 'byEventType' | 'byTask' | 'byApprover', value: string) =>
      queryEvents(plane.clients.doc, plane.tableNames.events, { index, value });
    expect((await q('byApprover', 'ana@example.com')).map((e) => e.event)).toEqual(['GATE_APPROVED']);
    expect((await q('byTask', 'deploy#build')).map((e) => e.event)).toEqual(['TASK_STARTED']);
    expect((await q('byEventType', 'TASK_STARTED')).length).toBeGreaterThanOrEqual(1);
    expect((await q('byPlan', 'deploy')).length).toBeGreaterThanOrEqual(3);
  });

  it("never overwrites a stored event: the journal's put of a taken key is refused and changes nothing", async () => {
    const [first] = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-1');
    if (!first) throw new Error('no event');
    const forged = { ...first, event: 'TASK_COMPLETED' as const };
    await expect(putNewEvent(plane.clients.doc, plane.tableNames.events, forged)).rejects.toBeInstanceOf(
      ConditionalCheckFailedException,
    );
    const [still] = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-1');
    expect(still).toEqual(first);
  });

  it('writes the events table only through the conditional put (no other put, update, delete or batch in lib/ or lambdas/)', async () => {
    // Single-item writes name their table first; batches and PartiQL name it elsewhere, so any is suspect.
    const itemWrite = /new (Put|Update|Delete)(Item)?Command\(\{\s*TableName:\s*([^,\n]+)/g;
    const batchWrite = /\b(BatchWrite|TransactWrite|ExecuteStatement|BatchExecuteStatement)\w*Command\b/;
    const offenders: string[] = [];
    for (const dir of ['lib', 'lambdas']) {
      for (const file of await readdir(join(REPO, dir), { recursive: true })) {
        if (!file.endsWith('.ts')) continue;
        const text = await readFile(join(REPO, dir, file), 'utf8');
        if (batchWrite.test(text)) offenders.push(`${dir}/${file}: a batch or PartiQL write`);
        // A table named `events…`, or one not named for what it is (a bare `table`), is looked at.
        for (const [, verb, , table] of text.matchAll(itemWrite))
          if (/events/i.test(table ?? '') || table === 'table')
            offenders.push(`${dir}/${file}: ${verb} on ${table}`);
      }
    }
    expect(offenders.sort()).toEqual([
      // putNewEvent: the conditional put.
      'lib/runtime/journal/journal.ts: Put on table',
      // storeOutput: its `table` is deps.tables.outputs.
      'lib/runtime/steps/outputs-table.ts: Put on table',
    ]);
  });

  it('keeps one unbroken chain when many writers append to one execution at once', async () => {
    const writers = Array.from(
      { length: 4 },
      () => new Journal({ dynamo: plane.clients.doc, eventsTable: plane.tableNames.events }),
    );
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        (writers[i % writers.length] as Journal).append({
          ...base,
          executionId: 'exec-concurrent',
          event: 'TASK_STARTED',
          task_id: `t${i}`,
          details: { attempt: i + 1, progress: `[Task ${i + 1}/24]` },
        }),
      ),
    );
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-concurrent');
    expect(events).toHaveLength(24);
    expect(new Set(events.map((e) => (e.details as { attempt: number }).attempt)).size).toBe(24);
    expect(verifyChain(events)).toEqual({ ok: true, count: 24 });
  });

  it('keeps one unbroken chain when writers in separate processes (separate clients) race for numbers', async () => {
    // Each Lambda container has its own client: appends of one container go in order, but
    // containers still race, and the conditional put must make the loser re-read the tail.
    const containers = Array.from({ length: 4 }, () =>
      localClients({ dynamoEndpoint: plane.dynamo.endpoint, eventsEndpoint: 'http://127.0.0.1:9' }),
    );
    try {
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          new Journal({
            dynamo: (containers[i % containers.length] as (typeof containers)[number]).doc,
            eventsTable: plane.tableNames.events,
          }).append({
            ...base,
            executionId: 'exec-containers',
            event: 'TASK_STARTED',
            task_id: `t${i}`,
            details: { attempt: i + 1, progress: `[Task ${i + 1}/24]` },
          }),
        ),
      );
    } finally {
      for (const c of containers) c.destroy();
    }
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-containers');
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(verifyChain(events)).toEqual({ ok: true, count: 24 });
  });

  it('stores every event when separate processes (Lambda containers) append to one execution at once', async () => {
    // In one process appends are queued; across processes only the conditional put and its retries
    // keep every event: 5 processes × 4 answers refused at the same moment (a 20-way race on one gate).
    const writers = Array.from({ length: 5 }, (_, w) =>
      spawn(
        process.execPath,
        [
          '--import',
          pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href,
          join(REPO, 'tests/support/contending-appender.ts'),
          plane.dynamo.endpoint,
          plane.tableNames.events,
          'exec-processes',
          `w${w}`,
          '4',
        ],
        { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, NODE_NO_WARNINGS: '1' } },
      ),
    );
    const exited = writers.map((child) => new Promise((r) => child.once('exit', r)));
    const said = writers.map((child) => {
      const lines: string[] = [];
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (l) => lines.push(l));
      return lines;
    });
    const saidAll = async (test: (line: string) => boolean) => {
      for (const deadline = Date.now() + 50_000; Date.now() < deadline; )
        if (said.every((lines) => lines.some(test))) return;
        else await new Promise((r) => setTimeout(r, 50));
      expect.fail(`the writers said only ${JSON.stringify(said)}`);
    };
    await saidAll((l) => l === 'ready');
    for (const child of writers) child.stdin?.write('go\n');
    await saidAll((l) => l === 'ok' || l.startsWith('error'));
    await Promise.all(exited);
    expect(said.map((lines) => lines.at(-1))).toEqual(writers.map(() => 'ok'));
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-processes');
    expect(events).toHaveLength(20);
    expect(new Set(events.map((e) => e.details.by)).size).toBe(20);
    expect(verifyChain(events)).toEqual({ ok: true, count: 20 });
    // Five tsx processes start slowly on a loaded machine; the race itself takes well under a second.
  }, 120_000);

  it('refuses any event for an execution after its EXECUTION_COMPLETE, from this writer or another', async () => {
    const ended = { ...base, executionId: 'exec-ended' };
    const failure = { ...ended, task_id: 'hang', task_name: 'Hang' };
    await journal.append({
      ...failure,
      event: 'TASK_STARTED',
      details: { attempt: 1, progress: '[Task 1/1] ▶ Hang' },
    });
    // Another container (another client) appends first, then ends the run: this journal's
    // remembered tail is stale and must not let it chain past the end.
    const other = localClients({
      dynamoEndpoint: plane.dynamo.endpoint,
      eventsEndpoint: 'http://127.0.0.1:9',
    });
    try {
      const late = new Journal({ dynamo: other.doc, eventsTable: plane.tableNames.events });
      await late.append({
        ...ended,
        event: 'EXECUTION_COMPLETE',
        details: { summary: { completed: 0, failed: 1, skipped: 0 }, succeeded: false },
      });
      await expect(
        late.append({
          ...failure,
          event: 'FAILURE_DETECTED',
          details: { error: 'States.Timeout', error_message: 'x', attempt: 3 },
        }),
      ).rejects.toThrow(ExecutionEndedError);
    } finally {
      other.destroy();
    }
    for (const writer of [
      journal,
      new Journal({ dynamo: plane.clients.doc, eventsTable: plane.tableNames.events }),
    ])
      await expect(
        writer.append({
          ...failure,
          event: 'FAILURE_CLASSIFIED',
          details: { failure_type: 'transient', error: 'Plangate.Transient' },
        }),
      ).rejects.toThrow(
        'FAILURE_CLASSIFIED not journaled: execution exec-ended has ended (EXECUTION_COMPLETE)',
      );
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-ended');
    expect(events.map((e) => e.event)).toEqual(['TASK_STARTED', 'EXECUTION_COMPLETE']);
    // Other executions are untouched.
    await journal.append({
      ...base,
      executionId: 'exec-after',
      event: 'TASK_STARTED',
      task_id: 'a',
      details: { attempt: 1, progress: 'p' },
    });
  });

  it('never goes back in time within a chain: a clock set back stamps the event at its predecessor', async () => {
    let now = new Date('2026-12-02T12:00:00.000Z');
    const clocked = new Journal({
      dynamo: plane.clients.doc,
      eventsTable: plane.tableNames.events,
      clock: () => now,
    });
    const run = { ...base, executionId: 'exec-clock-jumps' };
    const gate = { event: 'GATE_REMINDED' as const, details: { gate: 'plan', level: 1 } };
    await clocked.append({ ...run, ...gate });
    now = new Date('2026-12-02T10:00:00.000Z'); // set back two hours
    const back = await clocked.append({ ...run, ...gate });
    // A second writer (another process) whose clock is behind stamps after the tail it chains onto.
    const other = new Journal({
      dynamo: plane.clients.doc,
      eventsTable: plane.tableNames.events,
      clock: () => new Date('2026-12-01T00:00:00.000Z'),
    });
    const behind = await other.append({ ...run, ...gate });
    now = new Date('2026-12-03T14:00:00.000Z'); // then forward 26 hours
    const forward = await clocked.append({ ...run, ...gate });
    expect([back, behind, forward].map((a) => a.stored.timestamp)).toEqual([
      '2026-12-02T12:00:00.000Z',
      '2026-12-02T12:00:00.000Z',
      '2026-12-03T14:00:00.000Z',
    ]);
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, run.executionId);
    expect(verifyChain(events)).toEqual({ ok: true, count: 4 });
  });

  it('refuses an event larger than one record by name, and stores nothing', async () => {
    const facts = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`s${i}`, ['x'.repeat(200)]]));
    await expect(
      journal.append({
        ...base,
        executionId: 'exec-huge',
        event: 'PLAN_CREATED',
        details: { task_count: 3000, dependencies: facts },
      }),
    ).rejects.toThrow(EventTooLargeError);
    await expect(
      journal.append({
        ...base,
        executionId: 'exec-huge',
        event: 'PLAN_CREATED',
        details: { task_count: 3000, dependencies: facts },
      }),
    ).rejects.toThrow(
      new RegExp(
        `^PLAN_CREATED is \\d+ bytes; a journal record holds at most ${MAX_EVENT_BYTES} bytes \\(DynamoDB's item limit\\)$`,
      ),
    );
    expect(await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-huge')).toEqual([]);
  });

  it('redacts declared secrets and credential shapes before storing or publishing', async () => {
    const { stored } = await journal.append({
      ...base,
      executionId: 'exec-secret',
      event: 'TASK_FAILED',
      task_id: 'db',
      details: {
        error: 'Plangate.Permission',
        progress: '[Task 1/1]',
        error_message:
          'login failed for postgres://admin:hunter2-db-password@db:5432 with key AKIAABCDEFGHIJKLMNOP',
        request: { headers: { Authorization: 'Bearer abc.def.ghi-jkl' } },
      },
    });
    const text = JSON.stringify(stored);
    expect(text).not.toContain('hunter2-db-password');
    expect(text).not.toContain('AKIAABCDEFGHIJKLMNOP');
    expect(text).not.toContain('abc.def.ghi-jkl');
    await plane.bus.drain();
    expect(JSON.stringify(published)).not.toContain('hunter2-db-password');
  });

  it('rejects a malformed event with a located error and stores nothing', async () => {
    await expect(
      journal.append({ ...base, executionId: 'exec-bad', event: 'NOT_AN_EVENT' as never, details: {} }),
    ).rejects.toThrow(/event\.event/);
    await expect(
      journal.append({
        ...base,
        executionId: 'exec-bad',
        event: 'TASK_STARTED',
        details: { attempt: 'one' },
      }),
    ).rejects.toThrow(/event\.details\.attempt/);
    expect(await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-bad')).toEqual([]);
  });
});

describe('verifyChain', () => {
  const chain = (n: number): JournalRecord[] => {
    const events: JournalRecord[] = [];
    for (let i = 1; i <= n; i++) {
      const event = {
        timestamp: new Date(1_700_000_000_000 + i).toISOString(),
        event: 'TASK_STARTED' as const,
        ...base,
        details: { attempt: i, progress: `[Task ${i}/${n}]` },
      };
      const prevHash = events[i - 2]?.hash ?? GENESIS_HASH;
      events.push({ ...event, seq: i, prevHash, hash: hashEvent(prevHash, event) });
    }
    return events;
  };

  it('finds a deleted event, an edit, a re-hashed edit and a swap', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 12 }), fc.nat(), (n, pick) => {
        const events = chain(n);
        const i = pick % (n - 1);
        const deleted = events.filter((_, k) => k !== i);
        expect(verifyChain(deleted)).toMatchObject({ ok: false, problem: 'gap' });
        const edited = events.map((e, k) => (k === i ? { ...e, details: { attempt: -1 } } : e));
        expect(verifyChain(edited)).toMatchObject({ ok: false, index: i, problem: 'edited' });
        const rehashed = edited.map((e, k) => (k === i ? { ...e, hash: hashEvent(e.prevHash, e) } : e));
        expect(verifyChain(rehashed)).toMatchObject({ ok: false, index: i + 1, problem: 'broken-link' });
        const swapped = [...events];
        [swapped[i], swapped[i + 1]] = [swapped[i + 1] as JournalRecord, swapped[i] as JournalRecord];
        expect(verifyChain(swapped)).toMatchObject({ ok: false, index: i });
      }),
    );
  });
});

describe('toItem / fromItem', () => {
  it('adds the key and only the index attributes the record has a value for, and drops them again', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 ** 6 }),
        fc.option(fc.string({ minLength: 1 }), { nil: undefined }),
        fc.option(fc.oneof(fc.string(), fc.integer()), { nil: undefined }),
        (seq, taskId, approver) => {
          const record: JournalRecord = {
            ...base,
            timestamp: '2026-01-01T00:00:00.000Z',
            event: 'GATE_APPROVED',
            ...(taskId !== undefined ? { task_id: taskId } : {}),
            details: approver !== undefined ? { gate: 'plan', approver } : { gate: 'plan' },
            seq,
            prevHash: GENESIS_HASH,
            hash: GENESIS_HASH,
          };
          const item = toItem(record);
          expect(item.sk).toBe(String(seq).padStart(12, '0'));
          expect('planTask' in item).toBe(taskId !== undefined);
          if (taskId !== undefined) expect(item.planTask).toBe(`deploy#${taskId}`);
          const indexedApprover = typeof approver === 'string' && approver !== '';
          expect('approver' in item).toBe(indexedApprover);
          expect(indexAttributes(record)).toEqual({
            ...(taskId !== undefined ? { planTask: `deploy#${taskId}` } : {}),
            ...(indexedApprover ? { approver } : {}),
          });
          expect(fromItem(item)).toEqual(record);
        },
      ),
    );
  });
});

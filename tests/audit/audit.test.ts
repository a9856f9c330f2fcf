/**
 * The auditor's queries, exports and verification against a real dynalite through the real SDK
 * clients, on events the real Journal appended; tampering is done directly in DynamoDB.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CSV_COLUMNS, parseCsv } from '../../lib/audit/csv.ts';
import { checkExport, exportEvents } from '../../lib/audit/export.ts';
import { type AuditFilterInput, AuditFilterSchema } from '../../lib/audit/filter.ts';
import { auditEvents } from '../../lib/audit/query.ts';
import { type ExecutionVerdict, verifyExecution, verifyExecutions } from '../../lib/audit/verify.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { formatSeq, readEvents } from '../../lib/runtime/journal/journal.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { at, EXEC, HOSTILE, HOSTILE_TASK_NAME, seedRuns, seedVictim } from './seed.ts';

let dir: string;
let plane: LocalDataPlane;
let table: string;
/** Every DynamoDB operation the SDK client sent, by name: proves which requests served a query. */
const sent: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-audit-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  table = plane.tableNames.events;
  plane.clients.doc.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(String(context.commandName));
      return next(args);
    },
    { step: 'initialize', name: 'recordAuditCommands' },
  );
  await seedRuns(plane.clients.doc, table);
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

async function query(filter: AuditFilterInput, options: { limit?: number; pageSize?: number } = {}) {
  sent.length = 0;
  const events: JournalRecord[] = [];
  for await (const e of auditEvents(plane.clients.doc, table, AuditFilterSchema.parse(filter), options)) {
    events.push(e);
  }
  return { events, commands: [...new Set(sent)] };
}

const summary = (events: readonly JournalRecord[]) => events.map((e) => `${e.planId}:${e.seq}:${e.event}`);

describe('query', () => {
  it('by execution: the table key, in sequence order', async () => {
    const { events, commands } = await query({ execution: EXEC.billing });
    expect(commands).toEqual(['QueryCommand']);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(events.map((e) => e.executionId))).toEqual(new Set([EXEC.billing]));
    // What comes back is the record, not the item: no key or index attributes.
    expect(Object.keys(events[0]!)).not.toContain('sk');
    expect(events).toEqual(await readEvents(plane.clients.doc, table, EXEC.billing));
  });

  it('by plan: index byPlan, every execution of the plan in time order', async () => {
    const { events, commands } = await query({ plan: 'deploy' });
    expect(commands).toEqual(['QueryCommand']);
    expect(events).toHaveLength(12);
    expect(new Set(events.map((e) => e.executionId))).toEqual(new Set([EXEC.deploy1, EXEC.deploy2]));
    expect(events.map((e) => e.timestamp)).toEqual(events.map((e) => e.timestamp).sort());
  });

  it('by event type, by task and by approver: their indexes', async () => {
    const approved = await query({ type: 'GATE_APPROVED' });
    expect(approved.commands).toEqual(['QueryCommand']);
    expect(approved.events.map((e) => e.executionId)).toEqual([EXEC.deploy1, EXEC.billing, EXEC.deploy2]);

    const task = await query({ task: 'deploy#build' });
    expect(summary(task.events)).toEqual([
      'deploy:4:TASK_STARTED',
      'deploy:5:TASK_COMPLETED',
      'deploy:4:TASK_STARTED',
      'deploy:5:TASK_COMPLETED',
    ]);
    expect(task.events[0]!.task_name).toBe(HOSTILE_TASK_NAME);

    const ana = await query({ approver: 'ana@example.com' });
    expect(ana.events.map((e) => [e.executionId, e.event])).toEqual([
      [EXEC.deploy1, 'GATE_APPROVED'],
      [EXEC.deploy2, 'GATE_APPROVED'],
    ]);
    expect((await query({ approver: 'nobody@example.com' })).events).toEqual([]);
  });

  it('time ranges: inclusive bounds on an index sort key, and as a filter on the table', async () => {
    const between = await query({ type: 'TASK_STARTED', since: at(3), until: at(13) });
    expect(between.events.map((e) => e.executionId)).toEqual([EXEC.deploy1, EXEC.billing]);
    const after = await query({ type: 'TASK_STARTED', since: at(14) });
    expect(after.events.map((e) => e.executionId)).toEqual([EXEC.deploy2]);
    const before = await query({ plan: 'deploy', until: at(2) });
    expect(before.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    // A zone-less time is UTC; a date alone is its midnight.
    const zoneless = await query({ type: 'TASK_STARTED', since: '2025-03-01T10:00:14' });
    expect(zoneless.events.map((e) => e.executionId)).toEqual([EXEC.deploy2]);
    expect((await query({ type: 'TASK_STARTED', until: '2025-03-01' })).events).toEqual([]);

    const window = await query({ execution: EXEC.deploy2, since: at(21), until: at(22) });
    expect(window.commands).toEqual(['QueryCommand']);
    expect(window.events.map((e) => e.event)).toEqual(['GATE_APPROVAL_REQUESTED', 'GATE_APPROVED']);
  });

  it('several selectors: the most selective picks the index, the rest filter', async () => {
    const { events, commands } = await query({
      plan: 'deploy',
      type: 'GATE_APPROVED',
      approver: 'ana@example.com',
    });
    expect(commands).toEqual(['QueryCommand']);
    expect(events).toHaveLength(2);
    expect((await query({ plan: 'billing', approver: 'ana@example.com' })).events).toEqual([]);
  });

  it('paginates, and stops at --limit', async () => {
    const all = await query({ plan: 'deploy' }, { pageSize: 1 });
    expect(all.events).toHaveLength(12);
    expect(sent.length).toBeGreaterThanOrEqual(12);
    const limited = await query({ plan: 'deploy' }, { limit: 5, pageSize: 2 });
    expect(limited.events).toEqual(all.events.slice(0, 5));
    const filtered = await query({ plan: 'deploy', type: 'TASK_COMPLETED' }, { limit: 1, pageSize: 3 });
    expect(summary(filtered.events)).toEqual(['deploy:5:TASK_COMPLETED']);
  });

  it('scans only when no key or index applies', async () => {
    const { events, commands } = await query({ since: at(20) });
    expect(commands).toEqual(['ScanCommand']);
    expect(events).toHaveLength(6);
  });

  it('rejects bad filters with the offending option named', () => {
    const bad = AuditFilterSchema.safeParse({ task: 'no-hash', since: 'yesterday', type: 'NOPE' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues.map((i) => i.path[0]).sort()).toEqual(['since', 'task', 'type']);
    expect(AuditFilterSchema.safeParse({ since: at(5), until: at(1) }).success).toBe(false);
    expect(AuditFilterSchema.safeParse({ since: '2025-02-30' }).success).toBe(false);
  });
});

describe('export', () => {
  const everything = () => auditEvents(plane.clients.doc, table, AuditFilterSchema.parse({}));
  const byExecution = (records: readonly JournalRecord[]) =>
    [...records].sort((a, b) => a.executionId.localeCompare(b.executionId) || a.seq - b.seq);

  it.each(['jsonl', 'csv'] as const)(
    '%s: every event, a manifest whose digest and count check out, exact round-trip',
    async (format) => {
      const out = join(dir, `all.${format}`);
      const manifest = await exportEvents(everything(), { out, format, source: 'test', filter: {} });
      expect(manifest.count).toBe(18);
      const check = await checkExport(out);
      if (!check.ok) throw new Error(check.problem);
      expect(check.manifest).toEqual(manifest);
      const stored = [EXEC.deploy1, EXEC.billing, EXEC.deploy2].map((id) =>
        readEvents(plane.clients.doc, table, id),
      );
      expect(byExecution(check.records)).toEqual(byExecution((await Promise.all(stored)).flat()));
      const completed = check.records.find((r) => r.event === 'TASK_COMPLETED')!;
      expect((completed.details as { result: unknown }).result).toEqual(HOSTILE);
      expect(completed.task_name).toBe(HOSTILE_TASK_NAME);
    },
  );

  it('csv: no cell a spreadsheet would evaluate, and the header names the columns', async () => {
    const out = join(dir, 'guard.csv');
    await exportEvents(everything(), { out, format: 'csv', source: 'test', filter: {} });
    const rows = parseCsv(await readFile(out, 'utf8'));
    const header = rows[0] as (typeof CSV_COLUMNS)[number][];
    expect(header).toContain('task_name');
    const cells = rows.slice(1, -1).flat();
    expect(cells.filter((c) => /^[=+\-@\t\r]/.test(c))).toEqual([]);
    const taskNames = rows.slice(1, -1).map((r) => r[header.indexOf('task_name')]);
    expect(taskNames).toContain(`'${HOSTILE_TASK_NAME}`);
  });

  it('a filtered export holds exactly the query; an altered or truncated file fails its check', async () => {
    const out = join(dir, 'ana.jsonl');
    const manifest = await exportEvents(
      auditEvents(plane.clients.doc, table, AuditFilterSchema.parse({ approver: 'ana@example.com' })),
      { out, format: 'jsonl', source: 'test', filter: { approver: 'ana@example.com' } },
    );
    expect(manifest.count).toBe(2);
    const text = await readFile(out, 'utf8');
    await writeFile(out, text.replace('ana@example.com', 'eve@example.com'));
    expect(await checkExport(out)).toMatchObject({ ok: false, problem: expect.stringContaining('altered') });
    await writeFile(out, text.split('\n').slice(0, -2).join('\n'));
    expect(await checkExport(out)).toMatchObject({ ok: false, problem: expect.stringContaining('manifest') });
  });

  it('a failing source leaves no file behind', async () => {
    const out = join(dir, 'failed.jsonl');
    async function* failing(): AsyncGenerator<JournalRecord> {
      yield* everything();
      throw new Error('connection lost');
    }
    await expect(
      exportEvents(failing(), { out, format: 'jsonl', source: 'test', filter: {} }),
    ).rejects.toThrow('connection lost');
    await expect(readFile(out)).rejects.toThrow();
    await expect(readFile(`${out}.partial`)).rejects.toThrow();
  });
});

describe('verify', () => {
  const doc = () => plane.clients.doc;
  const item = async (executionId: string, seq: number) =>
    (await doc().send(new GetCommand({ TableName: table, Key: { executionId, sk: formatSeq(seq) } }))).Item!;
  const put = (i: Record<string, unknown>) => doc().send(new PutCommand({ TableName: table, Item: i }));
  const located = (v: ExecutionVerdict) => v.problems.map((p) => [p.executionId, p.seq, p.kind]);

  it('passes on an untouched table', async () => {
    const verdicts: ExecutionVerdict[] = [];
    for await (const v of verifyExecutions(doc(), table)) verdicts.push(v);
    expect(verdicts.map((v) => [v.executionId, v.count, v.problems.length])).toEqual(
      [EXEC.billing, EXEC.deploy1, EXEC.deploy2].map((id) => [id, 6, 0]),
    );
  });

  it('finds an edited detail, at its sequence number', async () => {
    const id = 'victim-edit';
    await seedVictim(doc(), table, id);
    await doc().send(
      new UpdateCommand({
        TableName: table,
        Key: { executionId: id, sk: formatSeq(5) },
        UpdateExpression: 'SET details.evidence.passed = :f',
        ExpressionAttributeValues: { ':f': false },
      }),
    );
    const verdict = await verifyExecution(doc(), table, id);
    expect(located(verdict)).toEqual([[id, 5, 'edited']]);
    expect(verdict.problems[0]!.message).toContain('TASK_COMPLETED');
  });

  it('finds a deleted event as a gap at the missing sequence number', async () => {
    const id = 'victim-delete';
    await seedVictim(doc(), table, id);
    await doc().send(new DeleteCommand({ TableName: table, Key: { executionId: id, sk: formatSeq(3) } }));
    expect(located(await verifyExecution(doc(), table, id))).toEqual([[id, 3, 'gap']]);
  });

  it('finds two events whose sequence numbers were swapped, both located', async () => {
    const id = 'victim-swap';
    await seedVictim(doc(), table, id);
    const [second, third] = [await item(id, 2), await item(id, 3)];
    await put({ ...second, sk: formatSeq(3), seq: 3 });
    await put({ ...third, sk: formatSeq(2), seq: 2 });
    const verdict = await verifyExecution(doc(), table, id);
    // Three links no longer hold: 2 and 3 point at each other's places, and 4 follows what is now at 2.
    expect(located(verdict)).toEqual([
      [id, 2, 'reordered'],
      [id, 3, 'reordered'],
      [id, 4, 'reordered'],
    ]);
    expect(verdict.problems[0]!.message).toContain('follows the event stored at seq 3, not seq 1');
    expect(verdict.problems[2]!.message).toContain('follows the event stored at seq 2, not seq 3');
  });

  it('finds a swapped seq attribute that left the keys in place', async () => {
    const id = 'victim-seq';
    await seedVictim(doc(), table, id);
    const [second, third] = [await item(id, 2), await item(id, 3)];
    await put({ ...second, seq: 3 });
    await put({ ...third, seq: 2 });
    expect(located(await verifyExecution(doc(), table, id))).toEqual([
      [id, 2, 'key-mismatch'],
      [id, 3, 'key-mismatch'],
    ]);
  });

  it("finds another execution's event copied in, and names where it came from", async () => {
    const id = 'victim-foreign';
    await seedVictim(doc(), table, id);
    const original = await item(EXEC.deploy1, 3);
    await put({ ...original, executionId: id, sk: formatSeq(7), seq: 7 });
    const verdict = await verifyExecution(doc(), table, id);
    expect(located(verdict)).toEqual([[id, 7, 'foreign']]);
    expect(verdict.problems[0]!.message).toContain(`${EXEC.deploy1}'s event seq 3`);
  });

  it('finds an index attribute changed to hide a decision from --approver', async () => {
    const id = 'victim-index';
    await seedVictim(doc(), table, id);
    await put({ ...(await item(id, 3)), approver: 'someone-else' });
    expect(located(await verifyExecution(doc(), table, id))).toEqual([[id, 3, 'index-mismatch']]);
  });

  it('--all reports the tampered executions only, each problem located', async () => {
    const broken = new Map<string, unknown[]>();
    for await (const v of verifyExecutions(doc(), table))
      if (v.problems.length > 0) broken.set(v.executionId, located(v));
    expect([...broken.keys()].sort()).toEqual([
      'victim-delete',
      'victim-edit',
      'victim-foreign',
      'victim-index',
      'victim-seq',
      'victim-swap',
    ]);
  });
});

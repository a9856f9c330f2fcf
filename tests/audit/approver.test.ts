/**
 * `--approver`: every vote of a person and every decision naming them, whether they decided alone
 * (index byApprover) or with others (a quorum's GATE_APPROVED, found by its `approvers`), on a
 * real dynalite through the real SDK clients, events appended by the real Journal.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditFilterInput, AuditFilterSchema, accessPlan } from '../../lib/audit/filter.ts';
import { auditEvents } from '../../lib/audit/query.ts';
import { readExecutionItems, verifyExecution } from '../../lib/audit/verify.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { Journal, type JournalEventInput } from '../../lib/runtime/journal/journal.ts';
import { at } from './seed.ts';

const EXEC = {
  /** alice and bob approve together (quorum 2). */
  quorum: 'arn:aws:states:us-east-1:000000000000:execution:plangate-run-deploy:quorum',
  /** alice alone (quorum 1). */
  alone: 'arn:aws:states:us-east-1:000000000000:execution:plangate-run-billing:alone',
  /** bob rejects. */
  rejected: 'arn:aws:states:us-east-1:000000000000:execution:plangate-run-deploy:rejected',
} as const;

let dir: string;
let plane: LocalDataPlane;
let table: string;

function gateEvents(executionId: string, planId: string, start: number): JournalEventInput[] {
  const plan = { executionId, planId, planVersion: 1, planDigest: `sha256:${planId}` };
  const event = (second: number, type: JournalEventInput['event'], details: Record<string, unknown>) => ({
    ...plan,
    event: type,
    timestamp: at(start + second),
    details,
  });
  const vote = (second: number, voter: string, decision = 'APPROVE') =>
    event(second, 'GATE_VOTE', { gate: 'plan', voter, decision, digest: plan.planDigest });
  switch (executionId) {
    case EXEC.quorum:
      return [
        vote(0, 'alice'),
        vote(1, 'bob'),
        event(2, 'GATE_APPROVED', {
          gate: 'plan',
          approver: 'alice, bob',
          approvers: ['alice', 'bob'],
          digest: plan.planDigest,
        }),
      ];
    case EXEC.alone:
      return [
        vote(0, 'alice'),
        event(1, 'GATE_APPROVED', {
          gate: 'plan',
          approver: 'alice',
          approvers: ['alice'],
          digest: plan.planDigest,
        }),
      ];
    default:
      return [
        vote(0, 'bob', 'REJECT'),
        event(1, 'GATE_REJECTED', { gate: 'plan', approver: 'bob', reason: 'not now' }),
      ];
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-audit-approver-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  table = plane.tableNames.events;
  const journal = new Journal({ dynamo: plane.clients.doc, eventsTable: table });
  for (const event of [
    ...gateEvents(EXEC.quorum, 'deploy', 0),
    ...gateEvents(EXEC.alone, 'billing', 10),
    ...gateEvents(EXEC.rejected, 'deploy', 20),
  ])
    await journal.append(event);
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

async function found(filter: AuditFilterInput, options: { limit?: number; pageSize?: number } = {}) {
  const events: string[] = [];
  for await (const e of auditEvents(plane.clients.doc, table, AuditFilterSchema.parse(filter), options))
    events.push(`${e.planId}:${e.event}:${e.timestamp.slice(17, 19)}`);
  return events;
}

describe('audit query --approver', () => {
  it('finds every vote of a person and every decision naming them, alone or with others, in time order', async () => {
    expect(await found({ approver: 'alice' })).toEqual([
      'deploy:GATE_VOTE:00',
      'deploy:GATE_APPROVED:02',
      'billing:GATE_VOTE:10',
      'billing:GATE_APPROVED:11',
    ]);
    expect(await found({ approver: 'bob' })).toEqual([
      'deploy:GATE_VOTE:01',
      'deploy:GATE_APPROVED:02',
      'deploy:GATE_VOTE:20',
      'deploy:GATE_REJECTED:21',
    ]);
    expect(await found({ approver: 'ali' })).toEqual([]);
    // A page of one item at a time and a limit: the same order, cut.
    expect(await found({ approver: 'alice' }, { pageSize: 1, limit: 3 })).toEqual([
      'deploy:GATE_VOTE:00',
      'deploy:GATE_APPROVED:02',
      'billing:GATE_VOTE:10',
    ]);
  });

  it('combines with the other selectors and the time range', async () => {
    expect(await found({ approver: 'alice', plan: 'deploy' })).toEqual([
      'deploy:GATE_VOTE:00',
      'deploy:GATE_APPROVED:02',
    ]);
    expect(await found({ approver: 'alice', type: 'GATE_VOTE' })).toEqual([
      'deploy:GATE_VOTE:00',
      'billing:GATE_VOTE:10',
    ]);
    expect(await found({ approver: 'alice', type: 'GATE_APPROVED' })).toEqual([
      'deploy:GATE_APPROVED:02',
      'billing:GATE_APPROVED:11',
    ]);
    expect(await found({ approver: 'alice', since: at(1), until: at(10) })).toEqual([
      'deploy:GATE_APPROVED:02',
      'billing:GATE_VOTE:10',
    ]);
    // With the execution as the key, the approver is a filter on both the index attribute and the list.
    expect(await found({ approver: 'bob', execution: EXEC.quorum })).toEqual([
      'deploy:GATE_VOTE:01',
      'deploy:GATE_APPROVED:02',
    ]);
  });

  it('says how it reads: index byApprover, and the shared decisions on index byEventType', () => {
    expect(accessPlan(table, AuditFilterSchema.parse({ approver: 'alice' })).explain).toBe(
      `Query of ${table} index byApprover (approver = "alice"); and Query of ${table} index byEventType (event = "GATE_APPROVED"), filtered on details.approvers containing "alice" with others, merged in time order`,
    );
    const votesOnly = accessPlan(table, AuditFilterSchema.parse({ approver: 'alice', type: 'GATE_VOTE' }));
    expect(votesOnly.kind === 'query' && votesOnly.shared).toBe(undefined);
  });

  it('indexes one person per item (none for a decision of several), and verify agrees', async () => {
    const items = await readExecutionItems(plane.clients.doc, table, EXEC.quorum);
    expect(items.map((i) => [i.event, i.approver])).toEqual([
      ['GATE_VOTE', 'alice'],
      ['GATE_VOTE', 'bob'],
      ['GATE_APPROVED', undefined],
    ]);
    for (const id of Object.values(EXEC))
      expect((await verifyExecution(plane.clients.doc, table, id)).problems).toEqual([]);
  });
});

/**
 * The gate Lambda invoked again with the same task token (Lambda or Step Functions retried it),
 * against dynalite and the local bus: one gate, one opening event, one notice. A first invocation
 * that stopped after storing the gate (its notice could not be handed on) is finished by the retry,
 * still once. The timeout ladder's rungs retried (a reminder, an escalation) likewise. The gate's id
 * is derived from the token, and nothing stored or handed out holds the token but the gate item.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import type { GateDeps } from '../../lib/runtime/gate/gate.ts';
import { type GateItem, gatesOfExecution } from '../../lib/runtime/gate/gate-item.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice, GateRequest } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';
import { type RecordingSfn, startRecordingSfn } from './recording-sfn.ts';

let dir: string;
let plane: LocalDataPlane;
let recorder: RecordingSfn;
const plan = { id: 'retried', version: 1, digest: 'sha256:feed' };
const approval = { approvers: ['ana', 'ben'], forbiddenApprovers: [], quorum: 1 };
const TOKEN = `AQ${'r'.repeat(200)}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-gate-retry-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  recorder = await startRecordingSfn();
});
afterAll(async () => {
  await recorder.close();
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

/** The gate Lambda's handler with real clients; `notify` records each notice (and may fail once). */
function gate(notices: ApprovalNotice[], failFirst = false) {
  let failed = !failFirst;
  const deps: GateDeps = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    tools: builtinRegistry(),
    sfn: recorder.client,
    signingKey: 'g'.repeat(32),
    notify: async (notice) => {
      if (!failed) {
        failed = true;
        throw new Error('TooManyRequestsException: Rate exceeded');
      }
      notices.push(notice);
    },
  };
  return makeGate(deps);
}

const request = (executionId: string, over: Partial<GateRequest> = {}): GateRequest => ({
  kind: 'plan',
  taskToken: `${TOKEN}-${executionId}`,
  plan,
  executionId,
  approval,
  round: 1,
  timeoutSeconds: 3600,
  ...over,
});

async function gatesOf(executionId: string): Promise<GateItem[]> {
  const out: GateItem[] = [];
  for await (const item of gatesOfExecution(plane.clients.doc, plane.tableNames.gates, executionId))
    out.push(item);
  return out;
}

const eventsOf = async (executionId: string) =>
  (await readEvents(plane.clients.doc, plane.tableNames.events, executionId)).map((e) => e.event);

it('opens one gate, journals one GATE_APPROVAL_REQUESTED and sends one notice when invoked twice with the same token', async () => {
  const notices: ApprovalNotice[] = [];
  const handler = gate(notices);
  const req = request('exec-twice');
  expect(await handler(req)).toEqual({});
  expect(await handler(req)).toEqual({});
  expect(await gatesOf('exec-twice')).toHaveLength(1);
  expect(await eventsOf('exec-twice')).toEqual(['GATE_APPROVAL_REQUESTED']);
  expect(notices).toHaveLength(1);
  // Its id is derived from the token, and reveals nothing of it.
  const [stored] = await gatesOf('exec-twice');
  expect(notices[0]?.approvalId.startsWith(`${stored?.approvalId}.`)).toBe(true);
  expect(stored?.approvalId).not.toContain(TOKEN.slice(0, 12));
  expect(stored?.announced).toBe('notified');
});

it('finishes, once, what a first invocation that failed after storing the gate left undone', async () => {
  const notices: ApprovalNotice[] = [];
  const handler = gate(notices, true);
  const req = request('exec-failed-notify');
  await expect(handler(req)).rejects.toThrow(/Rate exceeded/);
  expect(await eventsOf('exec-failed-notify')).toEqual(['GATE_APPROVAL_REQUESTED']);
  expect(notices).toEqual([]);
  // Lambda's retry: the same gate, the event not written again, the notice sent now.
  expect(await handler(req)).toEqual({});
  expect(await handler(req)).toEqual({});
  expect(await gatesOf('exec-failed-notify')).toHaveLength(1);
  expect(await eventsOf('exec-failed-notify')).toEqual(['GATE_APPROVAL_REQUESTED']);
  expect(notices).toHaveLength(1);
});

it('climbs each rung of the ladder once however often it is invoked: one reminder, one escalation', async () => {
  const notices: ApprovalNotice[] = [];
  const handler = gate(notices);
  const id = 'exec-ladder';
  await handler(request(id));
  const remind = request(id, { taskToken: `${TOKEN}-remind`, ladder: { stage: 'remind', level: 0 } });
  await handler(remind);
  await handler(remind);
  const escalate = request(id, {
    taskToken: `${TOKEN}-escalate`,
    ladder: { stage: 'escalate', level: 1 },
    approval: { approvers: ['ops'], forbiddenApprovers: [], quorum: 1 },
  });
  await handler(escalate);
  await handler(escalate);
  expect(await eventsOf(id)).toEqual(['GATE_APPROVAL_REQUESTED', 'GATE_REMINDED', 'GATE_ESCALATED']);
  expect(notices.map((n) => n.stage)).toEqual([undefined, 'reminder', 'escalation']);
  const gates = await gatesOf(id);
  expect(gates.map((g) => g.status).sort()).toEqual(['escalated', 'pending']);
  expect(gates.find((g) => g.status === 'pending')?.policy.approvers).toEqual(['ops']);
});

it('keeps the task token only in its gate item: not in an event, a notice or any other table', async () => {
  for (const table of Object.values(plane.tableNames).filter((t) => t !== plane.tableNames.gates)) {
    const items = (await plane.clients.doc.send(new ScanCommand({ TableName: table }))).Items ?? [];
    expect(JSON.stringify(items), table).not.toContain(TOKEN);
  }
  expect(
    JSON.stringify(await readEvents(plane.clients.doc, plane.tableNames.events, 'exec-twice')),
  ).not.toContain(TOKEN);
});

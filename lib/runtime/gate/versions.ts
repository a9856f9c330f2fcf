/**
 * One version at a time. Once a plan gate is open (its GATE_APPROVAL_REQUESTED written), every
 * waiting plan gate of an earlier version of the same plan is closed as superseded by the highest
 * version gated, and so is this gate when a later version was gated before it. The versions gated
 * are found through the events table's byPlan index, their gates through the gates table's
 * byExecution index.
 *
 * Each gate is closed by {@link Approvals.supersede}'s conditional update, the one an answer also
 * needs: of an answer and the closing, exactly one wins. When the answer wins, the version it
 * approved runs (it was approved before the later one was gated); otherwise the answer is refused
 * as superseded. Two versions gated at the same moment each write their request before looking
 * for the other, so at least one sees the other (as far as the index is up to date: DynamoDB's
 * global secondary indexes lag by a moment).
 *
 * Only plan gates are closed: a version already approved is running, and its step gates,
 * escalations and human steps belong to that approved run.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { fromItem, queryItems } from '../journal/journal.ts';
import type { TableNames } from '../journal/tables.ts';
import { EVENT_DETAILS, type PlanIdentity } from '../payloads/index.ts';
import type { Approvals } from './approvals.ts';
import { type GateItem, gatesOfExecution, type SupersededBy } from './gate-item.ts';
import type { LinkSigner } from './links.ts';

export interface VersionsDeps {
  readonly dynamo: DynamoDBDocumentClient;
  readonly tables: Pick<TableNames, 'events' | 'gates'>;
  readonly approvals: Approvals;
  readonly signer: LinkSigner;
}

/** A plan gate just opened: its execution, plan, and the shared link id it was created with. */
export interface OpenedPlanGate {
  readonly executionId: string;
  readonly plan: PlanIdentity;
  readonly linkId: string;
}

/** What the plan's journal says of one execution's plan gate. */
interface GatedExecution {
  readonly executionId: string;
  readonly version: number;
  readonly digest: string;
  /** When its plan gate was first requested (ties between executions of one version). */
  readonly requestedAt: string;
  /** Approved, superseded or complete: no plan gate of it can be waiting. */
  settled: boolean;
}

/**
 * Closes the waiting plan gates of every version below the highest one gated, `opened`'s own
 * included when a later version came first. Returns what superseded `opened`, if it was.
 */
export async function supersedeEarlierVersions(
  opened: OpenedPlanGate,
  deps: VersionsDeps,
): Promise<SupersededBy | undefined> {
  const executions = await gatedExecutions(opened, deps);
  let newest: GatedExecution | undefined;
  for (const execution of executions.values())
    if (
      !newest ||
      execution.version > newest.version ||
      // A tie goes to the gate just opened, then to the later request: same version, no supersession.
      (execution.version === newest.version &&
        newest.executionId !== opened.executionId &&
        (execution.executionId === opened.executionId || execution.requestedAt > newest.requestedAt))
    )
      newest = execution;
  if (!newest) return undefined;
  const linkId =
    newest.executionId === opened.executionId ? opened.linkId : await planGateLink(newest.executionId, deps);
  const by: SupersededBy = {
    version: newest.version,
    digest: newest.digest,
    executionId: newest.executionId,
    ...(linkId ? { linkId } : {}),
  };
  let openedSuperseded = false;
  for (const execution of executions.values()) {
    if (execution.settled || execution.version >= by.version) continue;
    for (const gate of await planGates(execution.executionId, deps)) {
      if (gate.status !== 'pending') continue;
      const closed = await deps.approvals.supersede(gate.approvalId, by);
      if (closed && execution.executionId === opened.executionId) openedSuperseded = true;
    }
  }
  return openedSuperseded ? by : undefined;
}

/**
 * Every execution of the plan whose plan gate was requested, read newest first from the byPlan
 * index, with whether it is settled; `opened` is included even before the index shows its request.
 */
async function gatedExecutions(
  opened: OpenedPlanGate,
  deps: VersionsDeps,
): Promise<Map<string, GatedExecution>> {
  const executions = new Map<string, GatedExecution>([
    [
      opened.executionId,
      {
        executionId: opened.executionId,
        version: opened.plan.version,
        digest: opened.plan.digest,
        requestedAt: new Date().toISOString(),
        settled: false,
      },
    ],
  ]);
  const settled = new Set<string>();
  for await (const item of queryItems(deps.dynamo, {
    TableName: deps.tables.events,
    IndexName: 'byPlan',
    KeyConditionExpression: 'planId = :plan',
    FilterExpression: '#event IN (:requested, :approved, :superseded, :complete)',
    ExpressionAttributeNames: { '#event': 'event' },
    ExpressionAttributeValues: {
      ':plan': opened.plan.id,
      ':requested': 'GATE_APPROVAL_REQUESTED',
      ':approved': 'GATE_APPROVED',
      ':superseded': 'GATE_SUPERSEDED',
      ':complete': 'EXECUTION_COMPLETE',
    },
    ScanIndexForward: false,
  })) {
    const record = fromItem(item);
    const gate = (record.details as { gate?: unknown }).gate;
    if (
      record.event === 'EXECUTION_COMPLETE' ||
      (record.event !== 'GATE_APPROVAL_REQUESTED' && gate === 'plan')
    ) {
      settled.add(record.executionId);
      continue;
    }
    const requested = EVENT_DETAILS.GATE_APPROVAL_REQUESTED.safeParse(record.details);
    if (!requested.success || requested.data.gate !== 'plan' || record.executionId === opened.executionId)
      continue;
    // Newest first: the last one read is the first request.
    executions.set(record.executionId, {
      executionId: record.executionId,
      version: record.planVersion,
      digest: record.planDigest,
      requestedAt: record.timestamp,
      settled: false,
    });
  }
  for (const id of settled) {
    const execution = executions.get(id);
    if (execution && id !== opened.executionId) execution.settled = true;
  }
  return executions;
}

/** The plan gates of an execution (the gates table's byExecution index), oldest first. */
async function planGates(executionId: string, deps: VersionsDeps): Promise<GateItem[]> {
  const gates: GateItem[] = [];
  for await (const item of gatesOfExecution(deps.dynamo, deps.tables.gates, executionId))
    if (item.kind === 'plan') gates.push(item);
  return gates;
}

/** The shared link id of an execution's current plan gate (the newest not escalated), if it has one. */
async function planGateLink(executionId: string, deps: VersionsDeps): Promise<string | undefined> {
  const current = (await planGates(executionId, deps))
    .filter((gate) => gate.status !== 'escalated')
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
    .at(-1);
  return current && deps.signer.shared(current.approvalId, current.expiresAtEpoch, current.planDigest);
}

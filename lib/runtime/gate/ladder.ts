/**
 * The later rungs of a plan or step gate's timeout ladder (compiled by lib/compiler/gate-ladder.ts).
 * Each rung arrives with a fresh task token, because the previous wait timed out and its token is
 * dead:
 * - `remind`: the waiting gate takes the new token and its approvers are told again (same link);
 * - `escalate`: the waiting gate is retired (its links stop working) and a new gate, with the
 *   group's policy, asks the next group;
 * - `expire`: the waiting gate is rejected with reason `timed out`. It never approves.
 * Escalation and rejection are shown wherever the gate was asked (its Slack messages), as a
 * person's decision is.
 * A decision that a person made between two rungs (its SendTaskSuccess met the dead token) is
 * stored with the gate; the rung hands it to the new token instead, so it is never lost. So is
 * the rejection of a gate a later version of its plan superseded (versions.ts).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { eventIdentity } from '../deps.ts';
import type { Journal } from '../journal/journal.ts';
import type { TableNames } from '../journal/tables.ts';
import {
  type ApprovalDecision,
  type ApprovalNotice,
  type GateRequest,
  TIMEOUT_DECIDER,
} from '../payloads/index.ts';
import { NotConfiguredError } from '../shared/errors.ts';
import type { Approvals } from './approvals.ts';
import { recordDecision } from './decision-events.ts';
import {
  type DecisionListener,
  type EscalationListener,
  type GateItem,
  gatesOfExecution,
  gateView,
} from './gate-item.ts';
import type { LinkSigner } from './links.ts';
import { gateOpened, noticeOf, noticeOfItem } from './notice.ts';
import { supersedeEarlierVersions } from './versions.ts';

export interface LadderDeps {
  readonly approvals: Approvals;
  readonly dynamo: DynamoDBDocumentClient;
  /** The gates, and the events a plan gate's later versions are found by. */
  readonly tables: Pick<TableNames, 'events' | 'gates'>;
  readonly sfn: SFNClient;
  readonly journal: Journal;
  readonly signer: LinkSigner;
  readonly notify: (notice: ApprovalNotice) => Promise<void>;
  /** Who submitted the plan: an escalated gate refuses their approval too. */
  readonly submittedBy: string | undefined;
  /** Told of the `timed out` rejection, as of any decision (e.g. to update the gate's Slack messages). */
  readonly onDecided?: DecisionListener;
  /** Told when the gate is handed to the next group. */
  readonly onEscalated?: EscalationListener;
}

export type LadderRequest = GateRequest & {
  readonly kind: 'plan' | 'step';
  readonly ladder: NonNullable<GateRequest['ladder']>;
};

const TIMED_OUT: ApprovalDecision = { decision: 'REJECT', by: TIMEOUT_DECIDER, reason: 'timed out' };

export async function climbLadder(req: LadderRequest, deps: LadderDeps): Promise<void> {
  const identity = eventIdentity(req, req.stepId ? { id: req.stepId } : undefined);
  for (;;) {
    const item = await waitingGate(req, deps);
    if (item.status === 'answered' || item.status === 'superseded') {
      await handOn(req.taskToken, item, deps);
      return;
    }
    try {
      switch (req.ladder.stage) {
        case 'remind':
          // This rung's token already waits on the gate: a retried invocation; its group was told.
          if (item.taskToken === req.taskToken) return;
          await update(deps, item, { set: 'taskToken = :token', values: { ':token': req.taskToken } });
          await deps.journal.append({
            ...identity,
            event: 'GATE_REMINDED',
            details: { gate: req.kind, level: req.ladder.level },
          });
          await deps.notify(
            noticeOfItem(
              item,
              deps.signer.shared(item.approvalId, item.expiresAtEpoch, item.planDigest),
              'reminder',
            ),
          );
          return;
        case 'escalate': {
          await update(deps, item, {
            set: '#status = :escalated',
            values: { ':escalated': 'escalated' },
            removeToken: true,
          });
          const at = new Date().toISOString();
          // The next group is shown what the first was, changes since the last version included.
          const created = await deps.approvals.create(req, {
            submittedBy: deps.submittedBy,
            changes: item.changes,
            stepGate: item.stepGate,
            approved: item.approved,
          });
          const notice = noticeOf(req, created.linkId, 'escalation', {
            submittedBy: deps.submittedBy,
            stepGate: item.stepGate,
            revision: item.approved,
            expiresAt: created.item.expiresAt,
          });
          await announceEscalation(req, created.item, notice, deps);
          // Like a decision listener's, its failure never undoes the escalation.
          await deps
            .onEscalated?.(
              { ...gateView(item), status: 'escalated' },
              { approvers: req.approval.approvers, at },
            )
            .catch(() => {});
          return;
        }
        case 'expire': {
          const decidedAt = new Date().toISOString();
          await update(deps, item, {
            set: '#status = :answered, decision = :decision, decidedAt = :at',
            values: { ':answered': 'answered', ':decision': TIMED_OUT, ':at': decidedAt },
            removeToken: true,
          });
          await recordDecision(deps.journal, item, TIMED_OUT, TIMEOUT_DECIDER);
          await deps.sfn.send(
            new SendTaskSuccessCommand({ taskToken: req.taskToken, output: JSON.stringify(TIMED_OUT) }),
          );
          // Told as any decision is (approvals.ts): its failure never undoes the rejection.
          await deps
            .onDecided?.({ ...gateView(item), status: 'answered', decision: TIMED_OUT, decidedAt }, TIMED_OUT)
            .catch(() => {});
          return;
        }
      }
    } catch (error) {
      // Someone answered or voted meanwhile: look again.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}

/**
 * The gate an escalation opened for the next group: GATE_ESCALATED (with the gate it opened), then,
 * unless a later version gated meanwhile closes it too (versions.ts), its notice; each once
 * (Approvals.announce), so a retried invocation of the rung does neither twice.
 */
export async function announceEscalation(
  req: LadderRequest,
  gate: GateItem,
  notice: ApprovalNotice,
  deps: LadderDeps,
): Promise<void> {
  await deps.approvals.announce(gate, {
    journal: async () => {
      await deps.journal.append({
        ...eventIdentity(req, req.stepId ? { id: req.stepId } : undefined),
        event: 'GATE_ESCALATED',
        details: {
          gate: req.kind,
          level: req.ladder.level,
          approvers: req.approval.approvers,
          opened: gateOpened(notice),
        },
      });
    },
    notify: async () => {
      const superseded =
        req.kind === 'plan' &&
        (await supersedeEarlierVersions(
          { executionId: req.executionId, plan: req.plan, linkId: notice.approvalId },
          deps,
        ));
      if (!superseded) await deps.notify(notice);
    },
  });
}

/** The gate this ladder climbs: the newest not escalated of its execution, kind, step and round. */
async function waitingGate(req: LadderRequest, deps: LadderDeps): Promise<GateItem> {
  let newest: GateItem | undefined;
  for await (const item of gatesOfExecution(deps.dynamo, deps.tables.gates, req.executionId)) {
    if (item.kind !== req.kind || item.stepId !== req.stepId || item.round !== req.round) continue;
    if (item.status === 'escalated') continue;
    if (!newest || item.createdAt > newest.createdAt) newest = item;
  }
  // The index is eventually consistent: read the gate itself before deciding on it.
  const out = newest
    ? await deps.dynamo.send(
        new GetCommand({
          TableName: deps.tables.gates,
          Key: { approvalId: newest.approvalId },
          ConsistentRead: true,
        }),
      )
    : undefined;
  if (!out?.Item)
    throw new NotConfiguredError(
      `no ${req.kind} gate of ${req.executionId} waits for this rung of its ladder`,
    );
  return out.Item as GateItem;
}

/** Passes a decision made between two rungs to the new wait. */
async function handOn(taskToken: string, item: GateItem, deps: LadderDeps): Promise<void> {
  await deps.sfn.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(item.decision) }));
}

/** A conditional update of a waiting gate: it must not have changed since it was read. */
async function update(
  deps: LadderDeps,
  item: GateItem,
  change: { set: string; values: Record<string, unknown>; removeToken?: boolean },
): Promise<void> {
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: deps.tables.gates,
      Key: { approvalId: item.approvalId },
      ConditionExpression: '#status = :pending AND #version = :version',
      UpdateExpression: `SET ${change.set}, #version = :next${change.removeToken ? ' REMOVE taskToken' : ''}`,
      ExpressionAttributeNames: { '#status': 'status', '#version': 'version' },
      ExpressionAttributeValues: {
        ...change.values,
        ':pending': 'pending',
        ':version': item.version,
        ':next': item.version + 1,
      },
    }),
  );
}

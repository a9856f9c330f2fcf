/** The journal events a gate's decision writes (seed 000: GATE_APPROVED, GATE_REJECTED, …). */
import { eventIdentity } from '../deps.ts';
import type { Journal } from '../journal/journal.ts';
import { type ApprovalDecision, ERROR_NAMES, type GateDecision } from '../payloads/index.ts';
import { recordFailure } from '../recovery/failure-events.ts';
import { contentDigest, type GateItem } from './gate-item.ts';

/** The identity of a gate's events: its execution and plan, and its step (with the step's name). */
/** The events a gate's answer is journaled as, wherever it was given ({@link recordDecision}). */
export const DECISION_EVENTS: ReadonlySet<string> = new Set([
  'GATE_APPROVED',
  'GATE_REJECTED',
  'GATE_CLARIFICATION_REQUESTED',
  'RECOVERY_ESCALATION',
  'HUMAN_TASK_ANSWERED',
]);

export function gateEventIdentity(item: GateItem): ReturnType<typeof eventIdentity> {
  return eventIdentity(
    {
      executionId: item.executionId,
      plan: { id: item.planId, version: item.planVersion, digest: item.planDigest },
    },
    item.stepId ? { id: item.stepId, name: item.description } : undefined,
  );
}

/**
 * GATE_VOTE: one accepted answer to a plan or step gate, by `by`, for the content digest the gate
 * showed (an answer for any other is refused before it gets here).
 */
export async function recordVote(
  journal: Journal,
  item: GateItem,
  decision: ApprovalDecision,
  by: string,
): Promise<void> {
  await journal.append({
    ...gateEventIdentity(item),
    event: 'GATE_VOTE',
    details: {
      gate: item.kind,
      voter: by,
      decision: decision.decision,
      digest: contentDigest(item),
      ...(decision.decision === 'APPROVE_WITH_MODIFICATIONS'
        ? { modifications: { skipSteps: decision.skipSteps, argOverrides: decision.argOverrides } }
        : {}),
      ...('comment' in decision && decision.comment !== undefined ? { comment: decision.comment } : {}),
    },
  });
}

/**
 * The event of a gate's final decision. `votes` are the approvals that made it (a plan or step
 * gate's quorum): GATE_APPROVED names each of them and the content digest they approved.
 */
export async function recordDecision(
  journal: Journal,
  item: GateItem,
  decision: GateDecision,
  by: string,
  votes: readonly { readonly by: string; readonly groups?: readonly string[] }[] = [],
  /** Plan gate: the hash of the definition the engine holds as it is approved (GATE_APPROVED binds it). */
  definitionHash?: string,
): Promise<void> {
  const identity = gateEventIdentity(item);
  // How long the gate waited is a metric (lib/runtime/telemetry), not part of the event.
  const opened = { gateOpenedAt: item.createdAt };
  const approved = () => ({
    gate: item.kind,
    approver: decision.by ?? by,
    approvers: votes.map((v) => v.by),
    ...approverGroups(votes),
    digest: contentDigest(item),
    ...(definitionHash !== undefined ? { definition_hash: definitionHash } : {}),
  });
  switch (decision.decision) {
    case 'DONE':
      await journal.append(
        {
          ...identity,
          event: 'HUMAN_TASK_ANSWERED',
          details: { decision: 'DONE', answered_by: by, outputs: Object.keys(decision.outputs) },
        },
        opened,
      );
      return;
    case 'FAILED':
      await journal.append(
        {
          ...identity,
          event: 'HUMAN_TASK_ANSWERED',
          details: { decision: 'FAILED', answered_by: by, reason: decision.reason },
        },
        opened,
      );
      {
        const message = `reported failed by ${by}: ${decision.reason}`;
        await recordFailure(journal, identity, {
          error: ERROR_NAMES.unrecoverable,
          message,
          attempt: item.human?.attempt ?? 1,
          failureClass: 'unrecoverable',
          taskFailed: {
            progress: `${item.human?.progress ?? '[Task]'} ✗ ${item.description ?? item.stepId}: ${message}`,
          },
        });
      }
      return;
    case 'APPROVE':
      await journal.append({ ...identity, event: 'GATE_APPROVED', details: approved() }, opened);
      return;
    case 'APPROVE_WITH_MODIFICATIONS':
      await journal.append(
        {
          ...identity,
          event: 'GATE_APPROVED',
          details: {
            ...approved(),
            modifications: { skipSteps: decision.skipSteps, argOverrides: decision.argOverrides },
          },
        },
        opened,
      );
      return;
    case 'REJECT':
      await journal.append(
        {
          ...identity,
          event: 'GATE_REJECTED',
          details: { gate: item.kind, approver: by, reason: decision.reason },
        },
        opened,
      );
      return;
    case 'ASK_FOR_CLARIFICATION':
      await journal.append(
        {
          ...identity,
          event: 'GATE_CLARIFICATION_REQUESTED',
          details: { gate: item.kind, question: decision.question, asked_by: by },
        },
        opened,
      );
      return;
    default:
      await journal.append(
        {
          ...identity,
          event: 'RECOVERY_ESCALATION',
          details: {
            reason: `answered by ${by}`,
            user_decision: decision.decision,
            decided_by: 'person',
            // The choice beside the model's suggestion, when the gate showed one.
            ...(item.recovery ? { suggestion: decision.acceptSuggestion ? 'accepted' : 'declined' } : {}),
          },
        },
        opened,
      );
  }
}

/** The groups each vote's verified request proved (GATE_APPROVED's `approver_groups`), when any did. */
function approverGroups(votes: readonly { readonly by: string; readonly groups?: readonly string[] }[]) {
  const proved = votes.flatMap((v) => (v.groups?.length ? [{ approver: v.by, groups: [...v.groups] }] : []));
  return proved.length > 0 ? { approver_groups: proved } : {};
}

/** The journal events a gate's decision writes (seed 000: GATE_APPROVED, GATE_REJECTED, …). */
import { eventIdentity } from '../deps.ts';
import type { Journal } from '../journal/journal.ts';
import { ERROR_NAMES, type GateDecision } from '../payloads/index.ts';
import { recordFailure } from '../recovery/failure-events.ts';
import type { GateItem } from './gate-item.ts';

export async function recordDecision(
  journal: Journal,
  item: GateItem,
  decision: GateDecision,
  by: string,
): Promise<void> {
  const identity = eventIdentity(
    {
      executionId: item.executionId,
      plan: { id: item.planId, version: item.planVersion, digest: item.planDigest },
    },
    item.stepId
      ? { id: item.stepId, ...(item.description !== undefined ? { name: item.description } : {}) }
      : undefined,
  );
  switch (decision.decision) {
    case 'DONE':
      await journal.append({
        ...identity,
        event: 'HUMAN_TASK_ANSWERED',
        details: { decision: 'DONE', answered_by: by, outputs: Object.keys(decision.outputs) },
      });
      return;
    case 'FAILED':
      await journal.append({
        ...identity,
        event: 'HUMAN_TASK_ANSWERED',
        details: { decision: 'FAILED', answered_by: by, reason: decision.reason },
      });
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
      await journal.append({
        ...identity,
        event: 'GATE_APPROVED',
        details: { gate: item.kind, approver: by },
      });
      return;
    case 'APPROVE_WITH_MODIFICATIONS':
      await journal.append({
        ...identity,
        event: 'GATE_APPROVED',
        details: {
          gate: item.kind,
          approver: by,
          modifications: { skipSteps: decision.skipSteps, argOverrides: decision.argOverrides },
        },
      });
      return;
    case 'REJECT':
      await journal.append({
        ...identity,
        event: 'GATE_REJECTED',
        details: { gate: item.kind, approver: by, reason: decision.reason },
      });
      return;
    case 'ASK_FOR_CLARIFICATION':
      await journal.append({
        ...identity,
        event: 'GATE_CLARIFICATION_REQUESTED',
        details: { gate: item.kind, question: decision.question },
      });
      return;
    default:
      await journal.append({
        ...identity,
        event: 'RECOVERY_ESCALATION',
        details: { reason: `answered by ${by}`, user_decision: decision.decision, decided_by: 'person' },
      });
  }
}

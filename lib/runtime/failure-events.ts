/**
 * Seed 000's recovery events, written the same way by every Lambda that meets a failure: the one
 * that detects it records TASK_FAILED (when it knows the step's progress line), FAILURE_DETECTED
 * and FAILURE_CLASSIFIED; RECOVERY_APPLIED {recipe_name, outcome} follows once the outcome is
 * known: `success` when a recipe's retry passed its contract, `escalated` when retries ran out.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type FailureClass, FailureClassSchema } from '../plan/schema.ts';
import { type Journal, type JournalEventInput, lastTaskEvent } from './journal.ts';

type Identity = Omit<JournalEventInput, 'event' | 'details'>;

export interface DetectedFailure {
  /** The error name thrown, e.g. `Plangate.Transient`. */
  readonly error: string;
  /** Redacted. */
  readonly message: string;
  readonly attempt: number;
  readonly failureClass: FailureClass;
  /** TASK_FAILED's details besides error and message: the `[Task N/M] ✗ …` line (and evidence). */
  readonly taskFailed?: { readonly progress: string; readonly evidence?: unknown };
}

export async function recordFailure(
  journal: Journal,
  identity: Identity,
  failure: DetectedFailure,
): Promise<void> {
  if (failure.taskFailed)
    await journal.append({
      ...identity,
      event: 'TASK_FAILED',
      details: { error: failure.error, error_message: failure.message, ...failure.taskFailed },
    });
  await journal.append({
    ...identity,
    event: 'FAILURE_DETECTED',
    details: { error: failure.error, error_message: failure.message, attempt: failure.attempt },
  });
  await journal.append({
    ...identity,
    event: 'FAILURE_CLASSIFIED',
    details: { failure_type: failure.failureClass, error: failure.error },
  });
}

/** The recipe a class's recovery ran: `retry_transient` when it retries, `escalate_permission` when it only asks. */
export function recipeName(failureClass: FailureClass, retries: number): string {
  return `${retries > 0 ? 'retry' : 'escalate'}_${failureClass}`;
}

/**
 * The class whose retry led to the attempt now passing: the step's last classified failure, if
 * nothing came after it (an escalation's RETRY is a person's decision, not a recipe's, and an
 * outcome already recorded is not recorded again).
 */
export async function retriedFailureClass(
  dynamo: DynamoDBDocumentClient,
  eventsTable: string,
  executionId: string,
  stepId: string,
): Promise<FailureClass | undefined> {
  const last = await lastTaskEvent(dynamo, eventsTable, executionId, stepId, [
    'FAILURE_CLASSIFIED',
    'RECOVERY_APPLIED',
    'RECOVERY_ESCALATION',
  ]);
  if (last?.event !== 'FAILURE_CLASSIFIED') return undefined;
  const parsed = FailureClassSchema.safeParse(last.details.failure_type);
  return parsed.success ? parsed.data : undefined;
}

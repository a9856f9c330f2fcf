/**
 * Seed 000's recovery events, written the same way by every Lambda that meets a failure: the one
 * that detects it records TASK_FAILED (when it knows the step's progress line), FAILURE_DETECTED
 * and FAILURE_CLASSIFIED; RECOVERY_APPLIED {recipe_name, outcome} follows once the outcome is
 * known: `success` when a recipe's retry (or a person's RETRY at the escalation, recipe
 * `escalation_retry`) passed its contract, `escalated` when retries ran out.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type FailureClass, FailureClassSchema } from '../../plan/schema.ts';
import { type Journal, type JournalEventInput, lastTaskEvent } from '../journal/journal.ts';
import type { AgentRun, Usage } from '../payloads/index.ts';

type Identity = Omit<JournalEventInput, 'event' | 'details'>;

export interface DetectedFailure {
  /** The error name thrown, e.g. `Plangate.Transient`. */
  readonly error: string;
  /** Redacted. */
  readonly message: string;
  readonly attempt: number;
  readonly failureClass: FailureClass;
  /**
   * TASK_FAILED's details besides error and message: the `[Task N/M] ✗ …` line (and evidence, and
   * what the attempt's agent used: spent all the same, so counted against the budget).
   */
  readonly taskFailed?: {
    readonly progress: string;
    readonly evidence?: unknown;
    readonly usage?: Usage;
    /** The worker that ran the attempt (`host:pid`), and what its agent ran and reported. */
    readonly worker?: string;
    readonly agent_run?: AgentRun;
  };
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

/** RECOVERY_APPLIED's recipe_name when a step a person sent back at its escalation (RETRY) then passes. */
export const ESCALATION_RETRY_RECIPE = 'escalation_retry';

/**
 * The recipe whose retry led to the attempt now passing, judged by the step's last recovery
 * event: a classified failure retried by its class's recipe (`retry_<class>`), or an escalation
 * a person answered RETRY ({@link ESCALATION_RETRY_RECIPE}). Undefined when an outcome was
 * already recorded (it is not recorded again) or the escalation is still open.
 */
export async function retriedRecipe(
  dynamo: DynamoDBDocumentClient,
  eventsTable: string,
  executionId: string,
  stepId: string,
): Promise<string | undefined> {
  const last = await lastTaskEvent(dynamo, eventsTable, executionId, stepId, [
    'FAILURE_CLASSIFIED',
    'RECOVERY_APPLIED',
    'RECOVERY_ESCALATION',
  ]);
  if (last?.event === 'RECOVERY_ESCALATION')
    return last.details.user_decision === 'RETRY' ? ESCALATION_RETRY_RECIPE : undefined;
  if (last?.event !== 'FAILURE_CLASSIFIED') return undefined;
  const parsed = FailureClassSchema.safeParse(last.details.failure_type);
  return parsed.success ? recipeName(parsed.data, 1) : undefined;
}

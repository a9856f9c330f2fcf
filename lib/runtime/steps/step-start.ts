/**
 * Whether a step runs at all: an approver may have skipped it (or nobody approved its gate in
 * time), or a dependency did not complete. Shared by the step runner and the human-step gate,
 * which answer such a step at once.
 */
import type { Journal, JournalEventInput } from '../journal/journal.ts';
import {
  type RunnerResult,
  type StepEntry,
  type StepGateRejection,
  TIMED_OUT_SKIP_REASON,
  TIMEOUT_DECIDER,
} from '../payloads/index.ts';

export interface StepStartFacts {
  readonly stepId: string;
  readonly attempt: number;
  readonly skip: boolean;
  /** The step gate's REJECT when that is why `skip`; absent or null: skipped at the plan gate. */
  readonly rejection?: StepGateRejection | null;
  readonly dependsOn: readonly string[];
  /** Ledger entries of the dependencies; a missing one counts as not completed. */
  readonly inputs: Readonly<Record<string, StepEntry>>;
}

/**
 * The `skipped` or `blocked` result (after writing TASK_SKIPPED / TASK_BLOCKED) when the step must
 * not run; undefined when it may.
 */
export async function skipOrBlock(
  facts: StepStartFacts,
  journal: Journal,
  identity: Omit<JournalEventInput, 'event' | 'details'>,
): Promise<RunnerResult | undefined> {
  const base = { stepId: facts.stepId, attempt: facts.attempt, durationMs: 0 };
  if (facts.skip) {
    await journal.append({
      ...identity,
      event: 'TASK_SKIPPED',
      details: { reason: skipReason(facts.rejection) },
    });
    return { ...base, status: 'skipped' };
  }
  const blockedBy = facts.dependsOn.filter((id) => facts.inputs[id]?.status !== 'completed');
  if (blockedBy.length === 0) return undefined;
  await journal.append({ ...identity, event: 'TASK_BLOCKED', details: { blocked_by: blockedBy } });
  return { ...base, status: 'blocked', blockedBy };
}

/** Who decided the step does not run: the plan gate's approver, the step gate's, or nobody in time. */
function skipReason(rejection: StepGateRejection | null | undefined): string {
  if (!rejection) return 'skipped by an approver at the plan gate';
  if (rejection.by === TIMEOUT_DECIDER) return TIMED_OUT_SKIP_REASON;
  return `skipped by an approver${rejection.by ? ` (${rejection.by})` : ''}: ${rejection.reason}`;
}

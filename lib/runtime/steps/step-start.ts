/**
 * Whether a step runs at all: an approver may have skipped it, or a dependency did not complete.
 * Shared by the step runner and the human-step gate, which answer such a step at once.
 */
import type { Journal, JournalEventInput } from '../journal/journal.ts';
import type { RunnerResult, StepEntry } from '../payloads/index.ts';

export interface StepStartFacts {
  readonly stepId: string;
  readonly attempt: number;
  readonly skip: boolean;
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
      details: { reason: 'skipped by an approver' },
    });
    return { ...base, status: 'skipped' };
  }
  const blockedBy = facts.dependsOn.filter((id) => facts.inputs[id]?.status !== 'completed');
  if (blockedBy.length === 0) return undefined;
  await journal.append({ ...identity, event: 'TASK_BLOCKED', details: { blocked_by: blockedBy } });
  return { ...base, status: 'blocked', blockedBy };
}

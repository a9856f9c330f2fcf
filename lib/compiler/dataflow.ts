/**
 * The JSONata expressions shared by the building blocks. The state flowing between states is
 * `{ steps: Ledger.steps, current?: {...} }`: `steps` holds finished steps' entries, `current`
 * the step in progress (attempt, gate decision, runner result, failure). Plan-wide values are
 * workflow variables assigned once in the top scope: `$plan`, `$executionId`, `$mods`,
 * `$recovery` (readable from every branch, never reassigned inside one).
 */
import { quote, quoteList } from './jsonata.ts';

export const STEPS = '$states.input.steps';
export const CURRENT = '$states.input.current';

/** The attempt of the step in progress (1 unless a loop-back retry raised it; `$max` drops a missing one). */
export const ATTEMPT = `$max([${CURRENT}.attempt, 1])`;

/**
 * The attempt a runner call is: the step's attempt plus the retries its Retry block made
 * (`State.RetryCount`, 0 on entry; `$sum` also covers an engine that leaves it out).
 */
export const RUN_ATTEMPT = `$sum([${ATTEMPT}, $states.context.State.RetryCount])`;

/**
 * The run-wide values a request reads, as JSONata: the workflow variables of a plan machine, or
 * (in a step machine, which has none) the execution input and literals.
 */
export interface RunValues {
  readonly plan: string;
  readonly executionId: string;
  readonly recovery: string;
  readonly approval: string;
}

export const WORKFLOW_VARIABLES: RunValues = {
  plan: '$plan',
  executionId: '$executionId',
  recovery: '$recovery',
  approval: '$approval',
};

/** Fields every harness request carries. */
export const EXECUTION_SCOPE = { plan: '{% $plan %}', executionId: '{% $executionId %}' } as const;

/** The ledger entries of `ids` (an object; `{}` when none is present). */
export function entriesOf(ids: readonly string[]): string {
  if (ids.length === 0) return '{}';
  return `$merge([{}, $sift(${STEPS}, function($v, $k) { $k in ${quoteList(ids)} })])`;
}

/** True when every id in `ids` is `completed` in the ledger (a missing entry is not). */
export function allCompleted(ids: readonly string[]): string {
  if (ids.length === 0) return 'true';
  return `$count(${quoteList(ids)}[$not($lookup(${STEPS}, $).status = "completed")]) = 0`;
}

/** The flowing state with `current` replaced by `currentExpression`. */
export function withCurrent(currentExpression: string): string {
  return `{"steps": ${STEPS}, "current": ${currentExpression}}`;
}

/**
 * The flowing state with `fields` merged into `current`. `current` is bound to `$c` once, and
 * `fields` may read it either way: each step repeats these expressions, so every byte counts.
 */
export function mergeCurrent(fields: string): string {
  return `($c := ${CURRENT}; ${withCurrent(`$merge([$c, ${fields.replaceAll(CURRENT, '$c')}])`)})`;
}

/** `"<id>" in $mods.skipSteps`: the approver skipped this step at the plan gate. */
export function skippedByApprover(stepId: string): string {
  return `${quote(stepId)} in $mods.skipSteps`;
}

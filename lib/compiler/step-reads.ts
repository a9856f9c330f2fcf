/**
 * What a step's Lambdas need from the run besides the step itself: the plan-wide `$context` and
 * `$secrets` only when the step's text references them, and the ledger entries of the earlier
 * steps it names. Deciding this at compile time keeps every payload as small as the step allows.
 */
import { referencesInValue } from '../plan/references.ts';
import type { Contract, Step } from '../plan/schema.ts';

export interface DataNeeds {
  readonly context: boolean;
  readonly secrets: boolean;
  /** Ids of other steps whose outputs are read, sorted. */
  readonly steps: readonly string[];
}

/** `steps.<id>` in a JSONata assertion: a plain name, a quoted or back-quoted one, or `$lookup(steps, "<id>")`. */
const ASSERTION_STEP =
  /\bsteps\s*\.\s*(?:`([^`]+)`|"([^"]+)"|([A-Za-z][A-Za-z0-9_]*))|\$lookup\(\s*steps\s*,\s*"([^"]+)"/g;
const ASSERTION_CONTEXT = /\bcontext\b/;

/** What the runner needs for the step's args (and agent task text). */
export function runnerNeeds(step: Step, stepIds: ReadonlySet<string>): DataNeeds {
  return needsOf([step.args, step.task ?? ''], step.id, stepIds);
}

/** What the checker needs for the step's contract. */
export function contractNeeds(
  contract: Contract | undefined,
  selfId: string,
  stepIds: ReadonlySet<string>,
): DataNeeds {
  if (!contract) return { context: false, secrets: false, steps: [] };
  const byReference = needsOf([contract], selfId, stepIds);
  if (contract.kind !== 'assert' && contract.kind !== 'lambda') return byReference;
  // Assertions and custom checkers see `context` and `steps` as data, not only through `${…}`.
  const text = contract.kind === 'assert' ? contract.expression : JSON.stringify(contract.payload);
  const named = new Set(byReference.steps);
  for (const m of text.matchAll(ASSERTION_STEP)) {
    const id = m[1] ?? m[2] ?? m[3] ?? m[4];
    if (id !== undefined && id !== selfId && stepIds.has(id)) named.add(id);
  }
  return {
    context: byReference.context || contract.kind === 'lambda' || ASSERTION_CONTEXT.test(text),
    secrets: byReference.secrets,
    steps: [...named].sort(),
  };
}

function needsOf(values: readonly unknown[], selfId: string, stepIds: ReadonlySet<string>): DataNeeds {
  let context = false;
  let secrets = false;
  const steps = new Set<string>();
  for (const ref of referencesInValue(values)) {
    if (ref.namespace === 'context') context = true;
    else if (ref.namespace === 'secrets') secrets = true;
    else if (ref.name !== selfId && stepIds.has(ref.name)) steps.add(ref.name);
  }
  return { context, secrets, steps: [...steps].sort() };
}

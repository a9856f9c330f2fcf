/**
 * The runtime's failure classifier. The rules themselves live in lib/plan/recovery.ts (seed 000's
 * defaults, `matchesDetection`, `classifyByDetection`); this adds only what the harness knows on top:
 * errors it already named (`Plangate.*`, its own error classes, a worker's) keep their class,
 * then the plan's recipes decide, then the defaults; an agent's failure no rule matched is its
 * work's (logic); anything else unmatched is `unknown`, which always asks a person.
 */
import {
  CLASSIFICATION_ORDER,
  classifyByDetection,
  DEFAULT_RECOVERY,
  type DetectionFacts,
  matchesDetection,
} from '../../plan/recovery.ts';
import type { FailureClass, RecoveryRecipe } from '../../plan/schema.ts';
import { POLICY_DENIED } from '../../policy/decisions.ts';
import { failureClassOfError } from '../payloads/index.ts';
import { type FailureFacts, OUTPUT_SHAPE_MISMATCH } from '../shared/errors.ts';

/** Recipes by class as a plan (or a classifier request) carries them; only `detect` matters here. */
export type RecipeDetections = Partial<
  Record<FailureClass, { readonly detect?: Partial<RecoveryRecipe['detect']> } | undefined>
>;

export interface Classification {
  readonly failureClass: FailureClass;
  /** Which rule set decided: a name the harness gave, the plan's recipe, seed 000's defaults, or none. */
  readonly source: 'named' | 'recipe' | 'default' | 'none';
}

/**
 * Error names whose class is known when raised: the runtime's own errors
 * (lib/runtime/shared/errors.ts) and what a worker answers (lib/worker/worker.ts, docs/workers.md).
 */
const HARNESS_ERROR_CLASSES: ReadonlyMap<string, FailureClass> = new Map([
  ['InvalidInput', 'invalid_input'],
  ['NotConfigured', 'invalid_input'],
  // The platform's policy refused the step's call: seed 000's Permission class (a person decides).
  [POLICY_DENIED, 'permission'],
  // The worker was stopped (SIGTERM) and handed the task back: nothing is wrong with the step.
  ['Worker.Stopped', 'transient'],
  // The agent finished without a declared output: its work is not done.
  ['Worker.MissingOutput', 'logic'],
  // A step (or a worker's agent) produced a value that does not fit its declared shape.
  [OUTPUT_SHAPE_MISMATCH, 'logic'],
]);

/**
 * Error names whose failure no rule matched still has a class: an agent that exited non-zero
 * (AgentFailedError, a worker's `AgentFailed`) did its work wrong, unless its exit code or
 * message says otherwise (126 permission, 127 unrecoverable, "ECONNRESET" transient, …).
 */
const UNMATCHED_CLASSES: ReadonlyMap<string, FailureClass> = new Map([['AgentFailed', 'logic']]);

export function classifyFailure(facts: FailureFacts, recipes: RecipeDetections = {}): Classification {
  const named = failureClassOfError(facts.name) ?? HARNESS_ERROR_CLASSES.get(facts.name);
  if (named && named !== 'unknown') return { failureClass: named, source: 'named' };
  const detection = detectionFacts(facts);
  const fromRecipe = CLASSIFICATION_ORDER.find((failureClass) => {
    const detect = recipes[failureClass]?.detect;
    return detect !== undefined && matchesDetection(completeDetection(detect), detection);
  });
  if (fromRecipe) return { failureClass: fromRecipe, source: 'recipe' };
  const fromDefaults = classifyByDetection(detection, DEFAULT_RECOVERY);
  if (fromDefaults !== 'unknown') return { failureClass: fromDefaults, source: 'default' };
  const unmatched = UNMATCHED_CLASSES.get(facts.name);
  return unmatched
    ? { failureClass: unmatched, source: 'default' }
    : { failureClass: 'unknown', source: 'none' };
}

/** A Node system error code (`ECONNRESET`, `EACCES`) leads the message, where seed 000's patterns look for it. */
function detectionFacts(facts: FailureFacts): DetectionFacts {
  return {
    errorName: facts.name,
    message: facts.code ? `${facts.code}: ${facts.message}` : facts.message,
    httpStatus: facts.httpStatus,
    exitCode: facts.exitCode,
  };
}

function completeDetection(detect: Partial<RecoveryRecipe['detect']>): RecoveryRecipe['detect'] {
  return {
    errorNames: detect.errorNames ?? [],
    messagePatterns: detect.messagePatterns ?? [],
    httpStatuses: detect.httpStatuses ?? [],
    exitCodes: detect.exitCodes ?? [],
  };
}

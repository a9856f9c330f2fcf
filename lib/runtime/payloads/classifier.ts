/** Classifier Lambda (`${ClassifierFunctionArn}`, lambda:invoke). */
import { z } from 'zod';
import { IdSchema } from '../../plan/schema.ts';
import { BudgetLimitsSchema } from './budget.ts';
import { ClassifiedFailureSchema } from './gate.ts';
import { ErrorOutputSchema, ExecutionScope, Progress, RecoverySummarySchema } from './shared.ts';

/**
 * Input of the classifier, called from a step's Catch after its Retry blocks gave up.
 * An error a harness Lambda named was already recorded (FAILURE_DETECTED, FAILURE_CLASSIFIED)
 * by that Lambda; any other error is recorded here. It decides what happens next:
 * - `error` is a class name (`Plangate.Transient`, …): the Retry block of that class already
 *   used the recipe's attempts → `ESCALATE`.
 * - `error` is `Plangate.ContractFailed`, or an error no Lambda named (`States.Timeout`,
 *   `Lambda.Unknown`, …) classified with `recovery` detection rules: `RETRY` (the whole step,
 *   attempt + 1) while `attempt <= retries`, where `retries` is `onFail.retries` when given, else
 *   the class recipe's `maxAttempts`; then `ESCALATE`.
 * An error recorded here gets TASK_FAILED too (with the step's "[Task N/M] ✗" line), like a
 * runner's. `RETRY` writes nothing more (the next attempt's TASK_STARTED and the checker's
 * RECOVERY_APPLIED `success` say how it went); `ESCALATE` writes RECOVERY_APPLIED {recipe_name, outcome:
 * `escalated`} and leads to the escalation gate, which applies the recipe's `escalation` policy.
 */
export const ClassifyRequestSchema = z.object({
  ...ExecutionScope,
  stepId: IdSchema,
  phase: z.enum(['run', 'check']),
  error: ErrorOutputSchema,
  attempt: z.number().int().min(1),
  /** Effective recipes of the plan (seed 000 defaults + plan overrides), by class. */
  recovery: RecoverySummarySchema,
  /** The step's description and "[Task N/M]", for the TASK_FAILED line of an error recorded here. */
  description: z.string().optional(),
  index: Progress.index.optional(),
  total: Progress.total.optional(),
  /**
   * Set for a human step: its gate's timeout. Its `States.Timeout` means nobody answered, which
   * no retry fixes: it is classified `unrecoverable` ("no answer within N s") and escalated to a
   * person (retry / skip / abort), whatever the recipes say.
   */
  humanTimeoutSeconds: z.number().int().positive().optional(),
  /**
   * The plan's budget, when it declares one: a failed attempt (one no harness Lambda recorded,
   * e.g. a worker's) that used it up is recorded as BudgetExceeded with BUDGET_EXCEEDED and
   * escalated once, never retried.
   */
  budget: BudgetLimitsSchema.optional(),
  /** The step's own `on_fail` (seed 004), overriding the recipe's retries and escalation. */
  onFail: z
    .object({ retries: z.number().int().min(0), escalation: z.enum(['ask', 'skip', 'abort']) })
    .optional(),
});
export type ClassifyRequest = z.infer<typeof ClassifyRequestSchema>;

export const ClassifyResultSchema = ClassifiedFailureSchema.extend({
  action: z.enum(['RETRY', 'ESCALATE']),
  /** The escalation policy that applies (recipe's, or `onFail`'s). */
  policy: z.enum(['ask', 'skip', 'abort']),
  /** The recipe applied, e.g. `retry_transient` or `escalate_permission` (RECOVERY_APPLIED {recipe_name}). */
  recipe: z.string(),
});
export type ClassifyResult = z.infer<typeof ClassifyResultSchema>;

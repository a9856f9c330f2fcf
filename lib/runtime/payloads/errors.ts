/** Error names: what Lambdas throw (Retry blocks match on them) and the machine's Fail-state errors. */
import { z } from 'zod';
import { FAILURE_CLASSES, FailureClassSchema } from '../../plan/schema.ts';

/** The named error a Lambda throws for each failure class; Retry blocks match on these. */
export const ERROR_NAMES = {
  transient: 'Plangate.Transient',
  permission: 'Plangate.Permission',
  invalid_input: 'Plangate.InvalidInput',
  logic: 'Plangate.Logic',
  unrecoverable: 'Plangate.Unrecoverable',
  unknown: 'Plangate.Unknown',
} as const satisfies Record<(typeof FAILURE_CLASSES)[number], string>;

/**
 * Thrown by the contract checker when the step's contract did not pass. Never retried by a
 * Retry block (re-checking the same work is pointless): it is caught, and the classifier
 * decides whether the whole step (runner → checker) runs again.
 */
export const CONTRACT_FAILED = 'Plangate.ContractFailed';

/**
 * Thrown by the step runner when the plan's budget does not cover the next step. Never retried:
 * the classifier escalates it to a person (continue with a raised budget, or abort).
 */
export const BUDGET_EXCEEDED = 'Plangate.BudgetExceeded';

/** Every error name a harness Lambda may throw on purpose. */
export const LAMBDA_ERROR_NAMES = [...Object.values(ERROR_NAMES), CONTRACT_FAILED, BUDGET_EXCEEDED] as const;
export type LambdaErrorName = (typeof LAMBDA_ERROR_NAMES)[number];

/** The failure class of a thrown error name, or undefined for names the harness did not throw. */
export function failureClassOfError(name: string): z.infer<typeof FailureClassSchema> | undefined {
  if (name === CONTRACT_FAILED) return 'logic';
  for (const failureClass of FAILURE_CLASSES) if (ERROR_NAMES[failureClass] === name) return failureClass;
  return undefined;
}

/**
 * Errors the compiled machine itself ends with (Fail states). An execution that fails with one
 * of these failed for a reason the plan or a person decided, not because the harness broke.
 */
export const MACHINE_ERRORS = {
  /** The plan gate was answered REJECT. */
  gateRejected: 'Plangate.GateRejected',
  /** No decision arrived within the approval policy's timeout (plan gate, step gate or escalation). */
  gateTimedOut: 'Plangate.GateTimedOut',
  /** A person (or a recipe with `escalation: abort`) aborted the run. */
  aborted: 'Plangate.Aborted',
  /** A critical step was skipped after failing; independent branches are stopped. */
  criticalStepSkipped: 'Plangate.CriticalStepSkipped',
  /** Every step is accounted for but a postcondition did not hold. */
  postconditionFailed: 'Plangate.PostconditionFailed',
  /** A rehearsed rollback (`--rehearse-rollback`) failed: the procedure needs fixing. */
  rollbackFailed: 'Plangate.RollbackFailed',
} as const;

/**
 * The run's own records contradict each other at its end (a step approved at its gate that never
 * ran, a step blocked by dependencies that all completed): the harness went wrong, so the run is
 * never reported a success. EXECUTION_COMPLETE says what is inconsistent; the machine fails with it.
 */
export const INCONSISTENT_RUN = 'Plangate.InconsistentRun';

/** What the `Cause` of a harness error holds (JSON-encoded). */
export const FailureCauseSchema = z.object({
  /** Human-readable, redacted, at most a few KiB. */
  message: z.string(),
  failureClass: FailureClassSchema.optional(),
  httpStatus: z.number().int().optional(),
  exitCode: z.number().int().optional(),
  /** A Node system error code such as `ECONNRESET`. */
  code: z.string().optional(),
  /** Where in the input the problem is, e.g. `args.url`. */
  location: z.string().optional(),
});
export type FailureCause = z.infer<typeof FailureCauseSchema>;

/** An error a Lambda throws so Step Functions sees `Error = name` and `Cause = JSON(cause)`. */
export class HarnessFailure extends Error {
  constructor(
    name: LambdaErrorName,
    readonly failureCause: FailureCause,
  ) {
    super(JSON.stringify(failureCause));
    this.name = name;
  }
}

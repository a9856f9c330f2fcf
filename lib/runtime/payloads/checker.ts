/** Contract-checker Lambda (`${ContractCheckerFunctionArn}`, lambda:invoke): evidence and the run's finalization. */
import { z } from 'zod';
import {
  AwsAccessSchema,
  ContractSchema,
  IdSchema,
  NetworkAccessSchema,
  OutputShapesSchema,
} from '../../plan/schema.ts';
import { RunnerResultSchema } from './runner.ts';
import {
  ErrorOutputSchema,
  ExecutionScope,
  LedgerSchema,
  PlanContextSchema,
  RecoverySummarySchema,
  SecretDeclarationsSchema,
  StepEntrySchema,
  StepScope,
} from './shared.ts';

/**
 * Input of the contract checker, the only thing that completes a step.
 * - `run.status` `skipped`/`blocked` → returns the same status (no contract is run).
 * - `run.status` `succeeded` → runs `contract` (if any) against `run.output`/`run.outputRef`;
 *   passes → writes TASK_COMPLETED with the evidence and returns `{ status: 'completed', … }`,
 *   preceded by RECOVERY_APPLIED {recipe_name: `retry_<class>`, outcome: `success`} when this
 *   attempt (or re-check) is what a recipe's retry of the step's last classified failure led to;
 *   fails → writes TASK_FAILED with the evidence, FAILURE_DETECTED and FAILURE_CLASSIFIED, and
 *   throws `Plangate.ContractFailed`. Infrastructure trouble while checking (e.g. a timeout
 *   reaching a URL) is thrown as the matching class error instead (e.g. `Plangate.Transient`).
 * A step with no contract completes when its runner succeeded (evidence `kind: 'none'`).
 * A step whose TASK_COMPLETED is journaled (a retry after a crash) gets the same completion back:
 * no contract is run and nothing is journaled (lib/runtime/steps/README.md, "A step runs once").
 */
export const CheckRequestSchema = z.object({
  ...StepScope,
  contract: ContractSchema.optional(),
  /** The step's AWS access (`step.aws`): its command contract's process gets the run's session too. */
  aws: AwsAccessSchema.optional(),
  /** The hosts the step's processes may reach (`step.network`), through the sandbox's proxy. */
  network: NetworkAccessSchema.optional(),
  /** `$context`, present when the contract may read it (assert, lambda, `${context.*}`). */
  context: PlanContextSchema.optional(),
  /** `$secrets`, present when the contract references `${secrets.*}`. */
  secrets: SecretDeclarationsSchema.default([]),
  /**
   * Ledger entries of the earlier steps the contract names (`${steps.<id>.*}`, or `steps.<id>`
   * in an assertion); the assertion sees their outputs as `steps`.
   */
  inputs: z.record(z.string(), StepEntrySchema).default({}),
  run: RunnerResultSchema,
  /** The step's `outputShapes`, when it declares any: its outputs must fit them before its contract runs. */
  outputShapes: OutputShapesSchema.optional(),
  attempt: z.number().int().min(1),
  /** How often this check was retried in place (`$states.context.State.RetryCount`). */
  checkRetries: z.number().int().min(0).default(0),
  /** The plan's own recipes, when it declares any; else seed 000's defaults classify. */
  recovery: RecoverySummarySchema.optional(),
});
export type CheckRequest = z.infer<typeof CheckRequestSchema>;

/** What a passing check proved; stored in the TASK_COMPLETED event, summarised here. */
export const EvidenceSchema = z.object({
  kind: z.enum(['command', 'http', 'assert', 'lambda', 'none']),
  passed: z.boolean(),
  /** One line, e.g. `exit 0`, `HTTP 200`, `assert true`. */
  summary: z.string(),
  /** Redacted excerpt of stdout / response body, at most a few KiB. */
  excerpt: z.string().optional(),
  checkedAt: z.string(),
});
export type Evidence = z.infer<typeof EvidenceSchema>;

/** The checker's answer: the step's ledger entry, plus the evidence when a contract ran. */
export const CheckResultSchema = StepEntrySchema.extend({ evidence: EvidenceSchema.optional() });
export type CheckResult = z.infer<typeof CheckResultSchema>;

/**
 * The contract checker's second job: the last state of every run. Checks each postcondition,
 * writes EXECUTION_COMPLETE {completed, failed, skipped} and returns the outcome.
 * `ledger` is absent when the run ended early (abort, critical skip): then `error` says why,
 * no postcondition is checked, and the counts come from the journal.
 * With `kind: 'postconditions'` it only checks the postconditions (a rehearsed rollback comes
 * next and would undo what they check); the later `finalize` gets `failedPostconditions`.
 */
export const FinalizeRequestSchema = z.object({
  kind: z.enum(['finalize', 'postconditions']),
  /** Postconditions already checked by a `postconditions` call: these did not hold. */
  failedPostconditions: z.array(IdSchema).optional(),
  ...ExecutionScope,
  postconditions: z.array(z.object({ id: IdSchema, description: z.string(), contract: ContractSchema })),
  /** `$context` and `$secrets`, for postconditions that reference them. */
  context: PlanContextSchema.default({}),
  secrets: SecretDeclarationsSchema.default([]),
  ledger: LedgerSchema.optional(),
  error: ErrorOutputSchema.optional(),
  /** Every step id of the plan (across child machines), to count what never ran. */
  stepIds: z.array(IdSchema),
});
export type FinalizeRequest = z.infer<typeof FinalizeRequestSchema>;

export const FinalizeResultSchema = z.object({
  /**
   * True only when every step is completed or legitimately skipped/blocked, every postcondition
   * holds, and the journal is consistent: a step approved at its gate ran, a blocked step had a
   * dependency that did not complete.
   */
  succeeded: z.boolean(),
  summary: z.object({
    completed: z.number().int().nonnegative(),
    failed: z.number().int().nonnegative(),
    /** Skipped plus blocked. */
    skipped: z.number().int().nonnegative(),
  }),
  /** Ids of postconditions that did not hold. */
  failedPostconditions: z.array(IdSchema),
  /**
   * Why a run that reached Finalize without an error still failed: its records are inconsistent
   * (`Plangate.InconsistentRun`). The machine then fails with this error.
   */
  error: ErrorOutputSchema.optional(),
});
export type FinalizeResult = z.infer<typeof FinalizeResultSchema>;

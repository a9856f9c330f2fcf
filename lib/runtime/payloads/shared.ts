/** Shapes every payload shares: plan identity, the ledger, output references, the plan's policy and recipes. */
import { z } from 'zod';
import {
  ApprovalPolicySchema,
  DetectionSchema,
  FailureClassSchema,
  IdSchema,
  SecretRefSchema,
} from '../../plan/schema.ts';

/** Which plan is running: the approval binds to this digest. */
export const PlanIdentitySchema = z.object({
  id: IdSchema,
  version: z.number().int().min(1),
  /** Content digest of the approved plan, e.g. `sha256:…`. */
  digest: z.string().min(1),
});
export type PlanIdentity = z.infer<typeof PlanIdentitySchema>;

/** A step output stored outside the state payload because it was larger than the inline limit. */
export const OutputRefSchema = z.object({
  /** Where the runner stored it, e.g. `s3://bucket/key` or `file:///…/.plangate/outputs/…`. */
  uri: z.string().min(1),
  bytes: z.number().int().nonnegative(),
  /** `sha256:<hex>` of the stored JSON, checked when it is read back. */
  sha256: z.string().min(1),
});
export type OutputRef = z.infer<typeof OutputRefSchema>;

/**
 * How a step ended, as the ledger records it. `failed` never appears: a failure is either
 * recovered (retry), skipped by a decision, or it ends the execution.
 * - `completed`: the contract checker passed it.
 * - `skipped`: a person decided not to run it (plan-gate modification, step-gate REJECT,
 *   escalation SKIP) or its recipe said `escalation: skip`.
 * - `blocked`: a dependency was skipped or blocked, so it did not run.
 */
export const StepStatusSchema = z.enum(['completed', 'skipped', 'blocked']);
export type StepStatus = z.infer<typeof StepStatusSchema>;

/** One step's record in the ledger. Holds either `output` (inline) or `outputRef`, never both. */
export const StepEntrySchema = z.object({
  status: StepStatusSchema,
  /** The step's captured outputs (the names in `step.outputs`), when small enough to inline. */
  output: z.record(z.string(), z.unknown()).optional(),
  outputRef: OutputRefSchema.optional(),
});
export type StepEntry = z.infer<typeof StepEntrySchema>;

/** The state that flows between states: every finished step's entry, by step id. */
export const LedgerSchema = z.object({ steps: z.record(z.string(), StepEntrySchema) });
export type Ledger = z.infer<typeof LedgerSchema>;

/** Arg overrides an approver made, by step id; merged shallowly over the step's args by the runner. */
export const ArgOverridesSchema = z.record(z.string(), z.record(z.string(), z.unknown()));
export type ArgOverrides = z.infer<typeof ArgOverridesSchema>;

/** A failure as Step Functions reports it to a Catch (`$states.errorOutput`). */
export const ErrorOutputSchema = z.object({
  Error: z.string(),
  Cause: z.string().optional(),
});
export type ErrorOutput = z.infer<typeof ErrorOutputSchema>;

/** Common to every request: the execution ARN (`$states.context.Execution.Id`) and the plan. */
export const ExecutionScope = {
  plan: PlanIdentitySchema,
  executionId: z.string().min(1),
};

/**
 * The plan's secret declarations (name, source, ref: where the value lives, never the value),
 * assigned once to `$secrets` at the start of a run and sent to the Lambdas that resolve
 * `${secrets.*}`: the runner (args), the checker (contracts, postconditions).
 */
export const SecretDeclarationsSchema = z.array(SecretRefSchema);

/** The plan's context (`$context`), for `${context.*}` references and contract assertions. */
export const PlanContextSchema = z.record(z.string(), z.unknown());

/** Who may answer the plan's gates (`$approval`): the plan's approval policy, minus what the machine itself enforces. */
export const GateApproversSchema = ApprovalPolicySchema.pick({
  approvers: true,
  forbiddenApprovers: true,
  quorum: true,
});
export type GateApprovers = z.infer<typeof GateApproversSchema>;

/** A recipe as the Lambdas need it (the rest of the recipe is compiled into Retry blocks). */
export const RecipeSummarySchema = z.object({
  /** Retries after the first attempt. */
  maxAttempts: z.number().int().min(0),
  escalation: z.enum(['ask', 'skip', 'abort']),
  /** The recipe's detection rules, to classify errors the Lambdas did not name. */
  detect: DetectionSchema.optional(),
});
export type RecipeSummary = z.infer<typeof RecipeSummarySchema>;

/**
 * The plan's recipes (`$recovery`), sent to the runner and the checker only when the plan declares
 * its own: they classify a failure when they detect it, and the class they record is final.
 */
export const RecoverySummarySchema = z.record(FailureClassSchema, RecipeSummarySchema);

/** "[Task N/M]": the step's 1-based position in the plan and the plan's step count. */
export const Progress = {
  index: z.number().int().min(1),
  total: z.number().int().min(1),
};

/** Common to the runner's and the checker's requests: which step, where in the plan, and its description (for progress lines). */
export const StepScope = {
  ...ExecutionScope,
  stepId: IdSchema,
  ...Progress,
  description: z.string(),
};

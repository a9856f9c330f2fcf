/** Step-runner Lambda (`${StepRunnerFunctionArn}`, lambda:invoke). */
import { z } from 'zod';
import { AwsAccessSchema, IdSchema, NetworkAccessSchema } from '../../plan/schema.ts';
import { NetworkRecordSchema } from '../sandbox/plan-process-call.ts';
import { BudgetLimitsSchema, RemainingBudgetSchema, UsageSchema } from './budget.ts';
import { StepGateRejectionSchema } from './gate.ts';
import {
  AgentRunSchema,
  HandoffInputsSchema,
  PreviousFailureSchema,
  WorkerEvidenceSchema,
} from './handoff.ts';
import {
  OutputRefSchema,
  PlanContextSchema,
  RecoverySummarySchema,
  SecretDeclarationsSchema,
  StepEntrySchema,
  StepScope,
} from './shared.ts';

/**
 * Input of the step runner. Args arrive as written in the plan: the runner resolves
 * `${steps.<id>.<name>}` from `inputs` (reading an {@link OutputRef} back when needed),
 * `${context.<key>}` from `context` and `${secrets.<name>}` at call time, then applies
 * `argOverrides` (shallow merge over the resolved args).
 *
 * What the runner does:
 * - `skip` true → writes TASK_SKIPPED (why: `rejection`), returns `{ status: 'skipped' }` without calling the tool.
 * - any entry of `inputs` not `completed` → writes TASK_BLOCKED, returns `{ status: 'blocked', blockedBy }`.
 * - otherwise writes TASK_STARTED ("[Task N/M] …"), calls the tool, returns `{ status: 'succeeded' }`
 *   with the captured outputs inline when their JSON is at most `inlineOutputLimitBytes`, else
 *   stored outside and returned as `outputRef`. On failure it writes TASK_FAILED,
 *   FAILURE_DETECTED and FAILURE_CLASSIFIED (the class is final) and throws a
 *   {@link HarnessFailure} named by the failure class, which the class's Retry block may retry.
 */
export const RunnerRequestSchema = z.object({
  ...StepScope,
  /** The tool to call; absent when `target` names an agent (seed 004), which runs the `agent` tool. */
  tool: z.string().optional(),
  target: z.string().optional(),
  task: z.string().optional(),
  subscriptions: z.array(z.string()).default([]),
  /** Args as written in the plan (references unresolved). */
  args: z.record(z.string(), z.unknown()),
  /** Approved modifications for this step (plan gate and step gate merged); `{}` when none. */
  argOverrides: z.record(z.string(), z.unknown()).default({}),
  /** The plan's context (`$context`), present only when the args or task reference `${context.*}`. */
  context: PlanContextSchema.optional(),
  /** The plan's secret declarations (`$secrets`), present only when the args reference `${secrets.*}`. */
  secrets: SecretDeclarationsSchema.default([]),
  /** The step's dependencies; one missing from `inputs` counts as not completed. */
  dependsOn: z.array(IdSchema).default([]),
  /** Ledger entries of the step's dependencies and of every step its args reference. */
  inputs: z.record(z.string(), StepEntrySchema),
  /** The step is skipped by an approver's decision (plan-gate modification or step-gate REJECT). */
  skip: z.boolean(),
  /**
   * Why `skip`, when the step's own gate rejected it: a person, or the timeout ladder when nobody
   * answered in time (TASK_SKIPPED then says "timed out"). Null: skipped at the plan gate, or not skipped.
   */
  rejection: StepGateRejectionSchema.nullish(),
  /**
   * 1-based, counting every run of the step: a Retry block's retry (the compiler adds
   * `$states.context.State.RetryCount`) and a loop-back (contract failure, escalation RETRY).
   */
  attempt: z.number().int().min(1),
  /** The plan's own recipes, when it declares any; else seed 000's defaults classify. */
  recovery: RecoverySummarySchema.optional(),
  /** Names of the values to capture (`step.outputs`). */
  outputs: z.array(IdSchema).default([]),
  /** The step's AWS access (`step.aws`): its processes get the plan AWS role's session for the run. */
  aws: AwsAccessSchema.optional(),
  /** The hosts the step's processes may reach (`step.network`), through the sandbox's proxy. */
  network: NetworkAccessSchema.optional(),
  timeoutSeconds: z.number().int().positive(),
  /** Above this many bytes of output JSON, store it outside the payload and return `outputRef`. */
  inlineOutputLimitBytes: z.number().int().positive(),
  /**
   * The plan's budget, when it declares one. Before the tool runs, the runner counts what the
   * journal says was used (wall clock since the plan was approved, the tokens and cost steps
   * reported); when a limit is reached it writes BUDGET_EXCEEDED and throws
   * `Plangate.BudgetExceeded`, which the classifier escalates to a person: RETRY continues with
   * the limit raised (BUDGET_EXCEEDED's `raised_to`), ABORT stops (and rolls back).
   */
  budget: BudgetLimitsSchema.optional(),
  /**
   * An agent step runs on a worker: the runner only starts it (skip, block, budget, TASK_STARTED)
   * and returns `dispatched` with the handoff's resolved `args` and its inputs' outputs, which
   * the activity Task after it queues for a worker (secrets are left unresolved: they never
   * enter the execution history).
   */
  dispatch: z.boolean().default(false),
  /**
   * With `dispatch`, on a retry: why the previous attempt failed, which the activity hands the
   * worker too; TASK_STARTED keeps it with the rest of the handoff.
   */
  previousFailure: PreviousFailureSchema.nullish(),
});
export type RunnerRequest = z.infer<typeof RunnerRequestSchema>;

export const RunnerResultSchema = z.object({
  stepId: IdSchema,
  status: z.enum(['succeeded', 'skipped', 'blocked', 'dispatched']),
  output: z.record(z.string(), z.unknown()).optional(),
  outputRef: OutputRefSchema.optional(),
  /** For `blocked`: the dependencies that were not completed. */
  blockedBy: z.array(IdSchema).optional(),
  attempt: z.number().int().min(1),
  durationMs: z.number().nonnegative(),
  /** What the step's agent said it used (its result's `usage`), counted against the budget. */
  usage: UsageSchema.optional(),
  /** What its processes asked of the network proxy (a step that declares `network`), refused or not. */
  network: z.array(NetworkRecordSchema).optional(),
  /** `dispatched`: what the worker's handoff needs that only the runner can read. */
  handoff: z
    .object({
      args: z.record(z.string(), z.unknown()),
      /** The step's task text, its references resolved (seed 004's `task`, for the agent). */
      task: z.string().optional(),
      inputs: HandoffInputsSchema,
      /** What is left of the plan's budget (`{}` when it declares none). */
      budget: RemainingBudgetSchema,
    })
    .optional(),
  /** A worker's result: the contract it ran in its workspace, and what that showed. */
  evidence: WorkerEvidenceSchema.optional(),
  /** A worker's result: which worker did it (host:pid). */
  worker: z.string().optional(),
  /** A worker's result: what its agent ran and said (bounded, redacted). */
  agentRun: AgentRunSchema.optional(),
  /** A human step's result: the person whose answer it is. */
  answeredBy: z.string().optional(),
  /** The runner stored this result whole, as its attempt's (steps/README.md, "A step runs once"). */
  stored: z.literal(true).optional(),
});
export type RunnerResult = z.infer<typeof RunnerResultSchema>;

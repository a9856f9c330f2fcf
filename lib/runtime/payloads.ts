/**
 * The payload contract between compiled state machines (lib/compiler) and the harness
 * Lambdas (lib/runtime + lambdas/): exactly what each Task state sends, what each Lambda
 * must return, the error names Lambdas throw (Retry/Catch match on them), the Fail-state
 * error names of the machine, and the journal event shape.
 *
 * Data flow in a compiled machine (JSONata query language):
 * - Every Lambda is called through `arn:aws:states:::lambda:invoke` (or `.waitForTaskToken`) with
 *   `Payload` = one of the `*Request` objects below; the ASL reads `$states.result.Payload`.
 * - The state that flows between steps is a {@link Ledger}: `{ steps: { <stepId>: StepEntry } }`.
 *   Parallel branches each return their ledger; the Parallel merges them. Nothing else is kept
 *   in the payload, and large step outputs are {@link OutputRef}s, so 256 KiB is never reached.
 * - Lambdas write the journal events themselves (see {@link JournalEvent}); the ASL has no
 *   event-writing states on the happy path.
 * - A thrown error reaches Step Functions as `{ Error: error.name, Cause: error.message }`.
 *   Lambdas throw {@link HarnessFailure}s whose `name` is one of {@link ERROR_NAMES}; the `Cause`
 *   is JSON of {@link FailureCause} (never a secret, never a task token).
 */
import { z } from 'zod';
import {
  ContractSchema,
  DetectionSchema,
  FAILURE_CLASSES,
  FailureClassSchema,
  IdSchema,
  ApprovalPolicySchema as PlanApprovalPolicySchema,
  SecretRefSchema,
} from '../plan/schema.ts';

// ---------------------------------------------------------------------------------------------
// Error names
// ---------------------------------------------------------------------------------------------

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

/** Every error name a harness Lambda may throw on purpose. */
export const LAMBDA_ERROR_NAMES = [...Object.values(ERROR_NAMES), CONTRACT_FAILED] as const;
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
} as const;

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

// ---------------------------------------------------------------------------------------------
// Shared shapes
// ---------------------------------------------------------------------------------------------

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
const ExecutionScope = {
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
export const ApprovalPolicySchema = PlanApprovalPolicySchema.pick({
  approvers: true,
  forbiddenApprovers: true,
  quorum: true,
});
export type ApprovalPolicy = z.infer<typeof ApprovalPolicySchema>;

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
const Progress = {
  index: z.number().int().min(1),
  total: z.number().int().min(1),
};

/** Common to the runner's and the checker's requests: which step, where in the plan, and its description (for progress lines). */
const StepScope = {
  ...ExecutionScope,
  stepId: IdSchema,
  ...Progress,
  description: z.string(),
};

// ---------------------------------------------------------------------------------------------
// Gate Lambda (`${GateFunctionArn}`, lambda:invoke.waitForTaskToken)
// ---------------------------------------------------------------------------------------------

/** `human`: a step with `requiresHuman` (seed 003) waits for a person to do it and report its outputs. */
export const GATE_KINDS = ['plan', 'step', 'escalation', 'human'] as const;
export const GateKindSchema = z.enum(GATE_KINDS);
export type GateKind = z.infer<typeof GateKindSchema>;

/** Decisions of the plan gate and of a step gate (a step with `requiresApproval`). */
export const ApprovalDecisionSchema = z.discriminatedUnion('decision', [
  z.object({ decision: z.literal('APPROVE'), by: z.string().optional(), comment: z.string().optional() }),
  z.object({
    decision: z.literal('APPROVE_WITH_MODIFICATIONS'),
    by: z.string().optional(),
    comment: z.string().optional(),
    /** Steps not to run; they end `skipped`, their dependents `blocked`. Plan gate only. */
    skipSteps: z.array(IdSchema).default([]),
    /** New arg values by step id. At a step gate only that step's entry is used. */
    argOverrides: ArgOverridesSchema.default({}),
  }),
  /** The gate asks again (same kind, `round + 1`) with the question attached. */
  z.object({
    decision: z.literal('ASK_FOR_CLARIFICATION'),
    by: z.string().optional(),
    question: z.string().min(1),
  }),
  /**
   * Plan gate: the execution fails with `Plangate.GateRejected`.
   * Step gate: that step ends `skipped` (seed 001: "approval denied"), its dependents `blocked`.
   */
  z.object({ decision: z.literal('REJECT'), by: z.string().optional(), reason: z.string().min(1) }),
]);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/** Decisions of an escalation gate (a step failed and its retries are exhausted). */
export const EscalationDecisionSchema = z.discriminatedUnion('decision', [
  /** Run the step again (runner → checker), attempt + 1, e.g. after credentials were fixed. */
  z.object({ decision: z.literal('RETRY'), by: z.string().optional(), comment: z.string().optional() }),
  /**
   * The step ends `skipped`, its dependents `blocked`. If the step is critical the execution
   * then fails with `Plangate.CriticalStepSkipped`; otherwise independent branches go on.
   */
  z.object({ decision: z.literal('SKIP'), by: z.string().optional(), comment: z.string().optional() }),
  /** The execution fails with `Plangate.Aborted`. */
  z.object({ decision: z.literal('ABORT'), by: z.string().optional(), reason: z.string().optional() }),
]);
export type EscalationDecision = z.infer<typeof EscalationDecisionSchema>;

/**
 * A person's answer to a human step. DONE carries the captured values, exactly the step's
 * declared outputs; the gate turns it into the step's {@link RunnerResult} and the contract
 * checker then checks it like any step. FAILED fails the step as `Plangate.Unrecoverable`
 * (the escalation asks what next: retry, skip or abort).
 */
export const HumanDecisionSchema = z.discriminatedUnion('decision', [
  z.object({
    decision: z.literal('DONE'),
    by: z.string().optional(),
    outputs: z.record(z.string(), z.unknown()).default({}),
    comment: z.string().optional(),
  }),
  z.object({ decision: z.literal('FAILED'), by: z.string().optional(), reason: z.string().min(1) }),
]);
export type HumanDecision = z.infer<typeof HumanDecisionSchema>;

/** Any decision a gate can receive, by kind. */
export type GateDecision = ApprovalDecision | EscalationDecision | HumanDecision;

/** The schema of the decisions a gate of `kind` takes. */
export function decisionSchemaOf(
  kind: GateKind,
): typeof ApprovalDecisionSchema | typeof EscalationDecisionSchema | typeof HumanDecisionSchema {
  return kind === 'escalation'
    ? EscalationDecisionSchema
    : kind === 'human'
      ? HumanDecisionSchema
      : ApprovalDecisionSchema;
}

/** What a human step's gate needs besides the common gate fields (the runner's view of the step). */
export const HumanTaskSchema = z.object({
  /** What to do: the step's task text, or its description. */
  instructions: z.string(),
  /** The values the person must report (`step.outputs`). */
  outputs: z.array(IdSchema),
  /** Skipped by an approver: answered `skipped` at once, nobody is asked. */
  skip: z.boolean(),
  dependsOn: z.array(IdSchema),
  /** Ledger entries of the dependencies; one not `completed` answers `blocked` at once. */
  inputs: z.record(z.string(), StepEntrySchema),
  inlineOutputLimitBytes: z.number().int().positive(),
});
export type HumanTask = z.infer<typeof HumanTaskSchema>;

/** The classified failure an escalation gate asks about. */
export const ClassifiedFailureSchema = z.object({
  failureClass: FailureClassSchema,
  /** The error name as thrown, e.g. `Plangate.Permission` or `States.Timeout`. */
  error: z.string(),
  /** Redacted message, at most a few KiB. */
  message: z.string(),
  /** Which task failed: the step runner or the contract checker. */
  phase: z.enum(['run', 'check']),
});
export type ClassifiedFailure = z.infer<typeof ClassifiedFailureSchema>;

/**
 * Input of the gate Lambda. It stores `taskToken` server-side (never in a link, log, event or
 * message), writes GATE_APPROVAL_REQUESTED (plan/step), RECOVERY_ESCALATION (escalation) or
 * TASK_STARTED (human) and sends the request through the notifier. Whoever answers calls
 * SendTaskSuccess with an {@link ApprovalDecision} (plan, step), an {@link EscalationDecision}
 * (escalation) or, for a human step, the step's {@link RunnerResult} built from a
 * {@link HumanDecision}, after writing GATE_APPROVED / GATE_REJECTED /
 * RECOVERY_ESCALATION{user_decision} / HUMAN_TASK_ANSWERED.
 *
 * When `kind` is `escalation` and `policy` is `skip` or `abort`, no person is asked: the gate
 * Lambda answers SKIP or ABORT itself at once and records that the recipe decided. A human step
 * that is skipped or blocked is answered at once too (TASK_SKIPPED / TASK_BLOCKED).
 * The Lambda's own return value is ignored.
 */
export const GateRequestSchema = z.object({
  kind: GateKindSchema,
  /** `$states.context.Task.Token`. Secret: store it, never print it. */
  taskToken: z.string().min(1),
  ...ExecutionScope,
  /** The step gated (kind `step`), that failed (`escalation`) or to do (`human`). Absent for the plan gate. */
  stepId: IdSchema.optional(),
  /** That step's description, to show the person. */
  description: z.string().optional(),
  /** Kind `plan`: what the plan is for and how many steps it has, to show the approver. */
  summary: z.object({ objective: z.string(), steps: z.number().int().min(1) }).optional(),
  /** Who may answer (`$approval`): checked on every answer. */
  approval: ApprovalPolicySchema,
  /** 1 for the first request; +1 after each ASK_FOR_CLARIFICATION (or each escalation of the step). */
  round: z.number().int().min(1),
  /** The question from the previous round's ASK_FOR_CLARIFICATION, to show the approver; null on round 1. */
  question: z.string().nullish(),
  /** How long the gate waits (the Task's TimeoutSeconds); after it the machine fails `Plangate.GateTimedOut`. */
  timeoutSeconds: z.number().int().positive(),
  /** Kind `escalation`: what failed. */
  failure: ClassifiedFailureSchema.optional(),
  /** Kind `escalation`: the step's attempt that failed; kind `human`: the attempt asked for (1-based). */
  attempt: z.number().int().min(1).optional(),
  /** Kind `human`: "[Task N/M]". */
  index: Progress.index.optional(),
  total: Progress.total.optional(),
  /** Kind `human`: the work asked of the person. */
  human: HumanTaskSchema.optional(),
  /** Kind `escalation`: whether skipping fails the run (critical) or lets independent branches go on. */
  critical: z.boolean().optional(),
  /** Kind `escalation`: the recipe's escalation; `skip`/`abort` are answered by the Lambda itself. */
  policy: z.enum(['ask', 'skip', 'abort']).optional(),
});
export type GateRequest = z.infer<typeof GateRequestSchema>;

/**
 * What the gate hands the notifier (`PLANGATE_NOTIFIER_FUNCTION`, invoked asynchronously): enough
 * to ask a person, and the approval id for the link. Never the task token.
 */
export const ApprovalNoticeSchema = z.object({
  /** Opaque, signed, expiring, single-use; the only thing links and buttons carry. */
  approvalId: z.string().min(1),
  kind: GateKindSchema,
  executionId: z.string().min(1),
  plan: PlanIdentitySchema,
  stepId: IdSchema.optional(),
  /** The step's description (step, escalation and human gates). */
  description: z.string().optional(),
  /** Plan gate: the plan's objective and step count. */
  summary: z.object({ objective: z.string(), steps: z.number().int().min(1) }).optional(),
  round: z.number().int().min(1),
  question: z.string().optional(),
  failure: ClassifiedFailureSchema.optional(),
  /** Human step: what to do and which values to report. */
  human: z.object({ instructions: z.string(), outputs: z.array(IdSchema) }).optional(),
  expiresAt: z.string(),
  policy: ApprovalPolicySchema,
});
export type ApprovalNotice = z.infer<typeof ApprovalNoticeSchema>;

// ---------------------------------------------------------------------------------------------
// Step-runner Lambda (`${StepRunnerFunctionArn}`, lambda:invoke)
// ---------------------------------------------------------------------------------------------

/**
 * Input of the step runner. Args arrive as written in the plan: the runner resolves
 * `${steps.<id>.<name>}` from `inputs` (reading an {@link OutputRef} back when needed),
 * `${context.<key>}` from `context` and `${secrets.<name>}` at call time, then applies
 * `argOverrides` (shallow merge over the resolved args).
 *
 * What the runner does:
 * - `skip` true → writes TASK_SKIPPED, returns `{ status: 'skipped' }` without calling the tool.
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
  /** The plan's context (`$context`), present only when the args reference `${context.*}`. */
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
   * 1-based, counting every run of the step: a Retry block's retry (the compiler adds
   * `$states.context.State.RetryCount`) and a loop-back (contract failure, escalation RETRY).
   */
  attempt: z.number().int().min(1),
  /** The plan's own recipes, when it declares any; else seed 000's defaults classify. */
  recovery: RecoverySummarySchema.optional(),
  /** Names of the values to capture (`step.outputs`). */
  outputs: z.array(IdSchema).default([]),
  timeoutSeconds: z.number().int().positive(),
  /** Above this many bytes of output JSON, store it outside the payload and return `outputRef`. */
  inlineOutputLimitBytes: z.number().int().positive(),
});
export type RunnerRequest = z.infer<typeof RunnerRequestSchema>;

export const RunnerResultSchema = z.object({
  stepId: IdSchema,
  status: z.enum(['succeeded', 'skipped', 'blocked']),
  output: z.record(z.string(), z.unknown()).optional(),
  outputRef: OutputRefSchema.optional(),
  /** For `blocked`: the dependencies that were not completed. */
  blockedBy: z.array(IdSchema).optional(),
  attempt: z.number().int().min(1),
  durationMs: z.number().nonnegative(),
});
export type RunnerResult = z.infer<typeof RunnerResultSchema>;

// ---------------------------------------------------------------------------------------------
// Contract-checker Lambda (`${ContractCheckerFunctionArn}`, lambda:invoke)
// ---------------------------------------------------------------------------------------------

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
 */
export const CheckRequestSchema = z.object({
  ...StepScope,
  contract: ContractSchema.optional(),
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
 */
export const FinalizeRequestSchema = z.object({
  kind: z.literal('finalize'),
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
  /** True only when every step is completed or legitimately skipped/blocked and every postcondition holds. */
  succeeded: z.boolean(),
  summary: z.object({
    completed: z.number().int().nonnegative(),
    failed: z.number().int().nonnegative(),
    /** Skipped plus blocked. */
    skipped: z.number().int().nonnegative(),
  }),
  /** Ids of postconditions that did not hold. */
  failedPostconditions: z.array(IdSchema),
});
export type FinalizeResult = z.infer<typeof FinalizeResultSchema>;

// ---------------------------------------------------------------------------------------------
// Classifier Lambda (`${ClassifierFunctionArn}`, lambda:invoke)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Join Lambda (`${JoinFunctionArn}`): exact joins across Parallel branches
// ---------------------------------------------------------------------------------------------

/**
 * A step whose dependencies are not all on its own branch waits on a join
 * (`lambda:invoke.waitForTaskToken`, action `wait`) for the dependencies on other branches;
 * each of those, after its checker (or skip), signals (`lambda:invoke`, action `signal`).
 * Signals may arrive before the wait registers: the Lambda stores both and, when every
 * predecessor has signalled and the token is registered, calls SendTaskSuccess once with a
 * {@link JoinReleaseSchema} output. Keyed by (executionId, stepId): idempotent on redelivery.
 */
export const JoinWaitRequestSchema = z.object({
  action: z.literal('wait'),
  ...ExecutionScope,
  /** The waiting step. */
  stepId: IdSchema,
  /** The predecessors it waits for (on other branches). */
  predecessors: z.array(IdSchema).min(1),
  /** `$states.context.Task.Token`. Secret: store it, never print it. */
  taskToken: z.string().min(1),
});
export type JoinWaitRequest = z.infer<typeof JoinWaitRequestSchema>;

export const JoinSignalRequestSchema = z.object({
  action: z.literal('signal'),
  ...ExecutionScope,
  /** The step that just finished. */
  stepId: IdSchema,
  entry: StepEntrySchema,
  /**
   * Entries of the step's transitive dependencies (those in its ledger): released with `entry`,
   * so the waiting step, and every step after it on its branch, can read any ancestor.
   */
  carried: z.record(z.string(), StepEntrySchema).default({}),
  /** The waiting steps this signal counts for. */
  successors: z.array(IdSchema).min(1),
});
export type JoinSignalRequest = z.infer<typeof JoinSignalRequestSchema>;

export const JoinRequestSchema = z.discriminatedUnion('action', [
  JoinWaitRequestSchema,
  JoinSignalRequestSchema,
]);
export type JoinRequest = z.infer<typeof JoinRequestSchema>;

/** SendTaskSuccess output that releases a join: the predecessors' entries. */
export const JoinReleaseSchema = z.object({ entries: z.record(z.string(), StepEntrySchema) });
export type JoinRelease = z.infer<typeof JoinReleaseSchema>;

/** The signal call's return value (informational). */
export const JoinSignalResultSchema = z.object({ released: z.array(IdSchema) });
export type JoinSignalResult = z.infer<typeof JoinSignalResultSchema>;

// ---------------------------------------------------------------------------------------------
// Child state machines (split plans)
// ---------------------------------------------------------------------------------------------

/**
 * Input of a child state machine (started with `states:startExecution.sync:2`): the parent's
 * plan identity and modifications, and the ledger entries the child's steps depend on. The
 * child's output is its {@link Ledger} (its own steps only). Children have no plan gate: the
 * parent's approval covers them (same digest).
 */
export const ChildInputSchema = z.object({
  plan: PlanIdentitySchema,
  /** The parent execution's ARN; journal events use it so one run has one event stream. */
  executionId: z.string().min(1),
  skipSteps: z.array(IdSchema),
  argOverrides: ArgOverridesSchema,
  steps: z.record(z.string(), StepEntrySchema),
});
export type ChildInput = z.infer<typeof ChildInputSchema>;

// ---------------------------------------------------------------------------------------------
// Journal events
// ---------------------------------------------------------------------------------------------

/** Seed 000's event names, plus the few the harness needs to say what else happened. */
export const EVENT_TYPES = [
  'PLAN_CREATED',
  'GATE_APPROVAL_REQUESTED',
  'GATE_APPROVED',
  'GATE_REJECTED',
  /** The approver asked a question instead of deciding (seed 000's ASK_FOR_CLARIFICATION). */
  'GATE_CLARIFICATION_REQUESTED',
  'TASK_STARTED',
  'TASK_COMPLETED',
  'TASK_FAILED',
  /** An approver decided not to run the step. */
  'TASK_SKIPPED',
  /** A dependency was skipped or blocked, so the step did not run. */
  'TASK_BLOCKED',
  'FAILURE_DETECTED',
  'FAILURE_CLASSIFIED',
  'RECOVERY_APPLIED',
  'RECOVERY_ESCALATION',
  /** Seed 000's permission recipe: credentials must be fixed out of band before RETRY. */
  'PERMISSION_REQUIRED',
  /** A person answered a human step (seed 003): done with its outputs, or failed. */
  'HUMAN_TASK_ANSWERED',
  'POSTCONDITION_CHECKED',
  'EXECUTION_COMPLETE',
] as const;
export const EventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventTypeSchema>;

/** Details per event type (seed 000's fields, snake_case as the seed writes them). */
export const EVENT_DETAILS = {
  PLAN_CREATED: z.object({
    task_count: z.number().int(),
    dependencies: z.record(z.string(), z.array(z.string())),
    /** Who submitted the plan (Plans API: the IAM caller, or local mode's header). */
    submitted_by: z.string().optional(),
  }),
  GATE_APPROVAL_REQUESTED: z.object({ plan_id: z.string(), gate: GateKindSchema, round: z.number().int() }),
  GATE_APPROVED: z.object({
    gate: GateKindSchema,
    approver: z.string().optional(),
    modifications: z.object({ skipSteps: z.array(z.string()), argOverrides: ArgOverridesSchema }).optional(),
  }),
  GATE_REJECTED: z.object({ gate: GateKindSchema, approver: z.string().optional(), reason: z.string() }),
  GATE_CLARIFICATION_REQUESTED: z.object({ gate: GateKindSchema, question: z.string() }),
  TASK_STARTED: z.object({ attempt: z.number().int(), progress: z.string() }),
  TASK_COMPLETED: z.object({ result: z.unknown(), evidence: EvidenceSchema, progress: z.string() }),
  TASK_FAILED: z.object({ error: z.string(), error_message: z.string(), progress: z.string() }),
  TASK_SKIPPED: z.object({ reason: z.string() }),
  TASK_BLOCKED: z.object({ blocked_by: z.array(z.string()) }),
  FAILURE_DETECTED: z.object({ error: z.string(), error_message: z.string(), attempt: z.number().int() }),
  FAILURE_CLASSIFIED: z.object({ failure_type: FailureClassSchema, error: z.string() }),
  RECOVERY_APPLIED: z.object({ recipe_name: z.string(), outcome: z.string() }),
  RECOVERY_ESCALATION: z.object({
    reason: z.string(),
    user_decision: z.enum(['RETRY', 'SKIP', 'ABORT']).optional(),
    decided_by: z.enum(['person', 'recipe']).optional(),
  }),
  PERMISSION_REQUIRED: z.object({ message: z.string() }),
  HUMAN_TASK_ANSWERED: z.object({
    decision: z.enum(['DONE', 'FAILED']),
    answered_by: z.string(),
    /** The names of the reported outputs (their values go to the checker, not the journal). */
    outputs: z.array(z.string()).optional(),
    reason: z.string().optional(),
  }),
  POSTCONDITION_CHECKED: z.object({
    postcondition_id: z.string(),
    passed: z.boolean(),
    evidence: EvidenceSchema,
  }),
  EXECUTION_COMPLETE: z.object({
    summary: z.object({ completed: z.number().int(), failed: z.number().int(), skipped: z.number().int() }),
    succeeded: z.boolean(),
    error: z.string().optional(),
    /** Why the run stopped early, e.g. the plan gate's rejection reason. */
    reason: z.string().optional(),
  }),
} as const satisfies Record<EventType, z.ZodType>;

/**
 * One journal event, as a Lambda appends it. The journal stores it in the events table (with
 * `seq`, `prevHash`, `hash` added: ordered per execution, hash-chained, never updated) and puts
 * it on the event bus. Never contains a secret value or a task token.
 */
export const JournalEventSchema = z.object({
  /** ISO 8601 UTC. */
  timestamp: z.string(),
  event: EventTypeSchema,
  executionId: z.string().min(1),
  planId: IdSchema,
  planVersion: z.number().int().min(1),
  planDigest: z.string().min(1),
  /** Step id (seed 000's task_id); absent for plan-level events. */
  task_id: z.string().optional(),
  /** Step description (seed 000's task_name). */
  task_name: z.string().optional(),
  details: z.record(z.string(), z.unknown()),
});
export type JournalEvent = z.infer<typeof JournalEventSchema>;

/** A stored journal event: position in the execution's stream and the hash chain. */
export const JournalRecordSchema = JournalEventSchema.extend({
  /** 1-based, gapless per execution. */
  seq: z.number().int().min(1),
  /** `hash` of the previous record (`sha256:` + 64 zeros for seq 1). */
  prevHash: z.string(),
  /** sha256 over prevHash + the canonical JSON of the event. */
  hash: z.string(),
});
export type JournalRecord = z.infer<typeof JournalRecordSchema>;

/** Parses a journal event and checks its details against its type's schema. */
export function parseJournalEvent(value: unknown): JournalEvent {
  const event = JournalEventSchema.parse(value);
  EVENT_DETAILS[event.event].parse(event.details);
  return event;
}

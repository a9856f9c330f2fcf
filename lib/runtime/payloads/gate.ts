/** Gate Lambda (`${GateFunctionArn}`, lambda:invoke.waitForTaskToken): requests, decisions, notices. */
import { z } from 'zod';
import { FailureClassSchema, IdSchema, OutputShapesSchema } from '../../plan/schema.ts';
import { PolicyDenialSchema } from './policy.ts';
import { type RecoveryAdvice, RecoveryAdviceSchema } from './recovery-advice.ts';
import {
  ArgOverridesSchema,
  ExecutionScope,
  GateApproversSchema,
  PlanContextSchema,
  PlanIdentitySchema,
  Progress,
  StepEntrySchema,
} from './shared.ts';

/** `human`: a step with `requiresHuman` (seed 003) waits for a person to do it and report its outputs. */
export const GATE_KINDS = ['plan', 'step', 'escalation', 'human'] as const;
export const GateKindSchema = z.enum(GATE_KINDS);
export type GateKind = z.infer<typeof GateKindSchema>;

/**
 * One step as the plan gate shows it: enough to draw the dependency graph and to tell what
 * changed since a previous version, without the step's body. Fingerprints are hex SHA-256 of
 * canonical JSON, cut to 128 bits: two different bodies never look alike, not even by design.
 */
export const StepSketchSchema = z.object({
  id: IdSchema,
  /** The step's description on one line, shortened. */
  name: z.string(),
  /** Omitted when the step waits for nothing. */
  dependsOn: z.array(IdSchema).optional(),
  /** The tool the runner calls; `agent` for a step that names an agent target. */
  tool: z.string(),
  /** Fingerprint of what the tool is given: args, and an agent's target, task and subscriptions. */
  args: z.string(),
  /** Fingerprint of the contract; omitted when the step has none. */
  contract: z.string().optional(),
  /** Fingerprint of everything else (approval, retries, timeout, outputs, rollback, …). */
  settings: z.string(),
});
export type StepSketch = z.infer<typeof StepSketchSchema>;

/**
 * A `${steps.<id>.<output>}` reference in what a step, rollback or contract is given: the text
 * shown keeps it as written, and the view says it is filled at run time from that step.
 */
export const RunTimeReferenceSchema = z.object({
  /** As written, e.g. `${steps.build.image}`. */
  raw: z.string(),
  step: IdSchema,
  output: z.string(),
});
export type RunTimeReference = z.infer<typeof RunTimeReferenceSchema>;

/** A labelled part of a call besides its main text, e.g. `cwd`, `headers`, `body`. */
export const CallDetailSchema = z.object({
  label: z.string(),
  value: z.string(),
  /** Shown as code (a body, a payload): exact text, whitespace kept. */
  code: z.boolean().optional(),
});
export type CallDetail = z.infer<typeof CallDetailSchema>;

/**
 * What the harness will execute, rendered for people: a step's tool call, a rollback's call, a
 * contract or a postcondition's check. `text` is exact (no shortening, no redaction): the shell
 * command, `METHOD URL`, the Lambda function, an agent's task, an assertion, the seconds waited,
 * the message echoed, or, for any other tool, the args as canonical JSON.
 */
export const ShownCallSchema = z.object({
  form: z.enum(['command', 'request', 'function', 'task', 'assert', 'wait', 'message', 'json']),
  text: z.string(),
  /** What passes (contracts): `exit 0`, `HTTP 200`, `stdout matches …`. */
  expect: z.string().optional(),
  details: z.array(CallDetailSchema).optional(),
  /** Its `${steps.x.y}` references, each filled at run time from step x. */
  references: z.array(RunTimeReferenceSchema).optional(),
});
export type ShownCall = z.infer<typeof ShownCallSchema>;

/**
 * Risk marks the harness computes (lib/plan/risks.ts), never taken from the plan's author: why
 * each command is destructive, why the effect of what it runs is unknown (absent: every call of
 * the step is proven read-only or destructive), what it sends away (absent: nothing), where its
 * contract or rollback reaches outside the workspace (absent: nowhere), and whether the step has
 * its own gate.
 */
export const StepRiskMarksSchema = z.object({
  destructive: z.array(z.string()),
  contract: z.array(z.string()),
  rollback: z.array(z.string()),
  /** "Effect unknown": the call's reasons as they are, the others led by `contract: `, `rollback: `, `rollback contract: `. */
  unknown: z.array(z.string()).optional(),
  /** Uploads, pipes into network clients, reads of credential files; led by place as `unknown`. */
  exfiltration: z.array(z.string()).optional(),
  /** e.g. `contract: \`cat /etc/passwd\` uses /etc/passwd, outside the workspace`; absent when none. */
  outsideWorkspace: z.array(z.string()).optional(),
  ownGate: z.boolean(),
});
export type StepRiskMarks = z.infer<typeof StepRiskMarksSchema>;

/** Whether a step carries any risk mark besides its gate: something destructive, unknown, sent away, or outside the workspace. */
export function hasRiskMarks(risks: StepRiskMarks): boolean {
  return (
    risks.destructive.length + risks.contract.length + risks.rollback.length > 0 ||
    (risks.unknown?.length ?? 0) + (risks.exfiltration?.length ?? 0) > 0 ||
    (risks.outsideWorkspace?.length ?? 0) > 0
  );
}

/** Whether a step's unknown or exfiltration reason is its contract's or rollback's (led by that place), not its own call's. */
export function isCheckReason(reason: string): boolean {
  return /^(?:contract|rollback|rollback contract): /.test(reason);
}

/**
 * Whether the step's own call is marked (destructive or of unknown effect): what the step as a
 * whole is marked by. A destructive contract or rollback marks that contract or rollback only.
 */
export function ownCallMarked(risks: StepRiskMarks): boolean {
  return risks.destructive.length > 0 || (risks.unknown ?? []).some((reason) => !isCheckReason(reason));
}

/**
 * An agent step as its approvers see it: who runs the agent and with which command, where it
 * works, what it may reach, and what bounds it. The compiler fills what the plan says; the gate
 * adds what is known where it opens (the run's own workers, their command and workspace).
 */
export const AgentStepViewSchema = z.object({
  /** A worker of the target's activity (`plangate worker`, or `plangate run`'s own), or the step runner's `agent` tool. */
  runsOn: z.enum(['worker', 'runner']),
  /** Who runs it, in words, e.g. "the worker taking target coder (its --agent-command, in its --workspace)". */
  runs: z.string(),
  /** The agent command that will run: the step's own, or the one the gate knows its workers run; absent: not known at the gate. */
  command: z.string().optional(),
  /** The directory it works in; absent: not known at the gate (the worker's --workspace). */
  workspace: z.string().optional(),
  /** What it may reach (file system, network) as its sandbox allows; "not known at this gate" where the gate cannot tell. */
  reach: z.string(),
  /** How long it may run: the step's timeout, or the plan's wall clock when shorter. */
  timeLimitSeconds: z.number().int().positive(),
  /** The plan's budget that bounds it (tokens and cost of the whole plan, commands per agent); absent: none. */
  budget: z
    .object({
      tokens: z.number().optional(),
      costUsd: z.number().optional(),
      maxCommands: z.number().optional(),
    })
    .optional(),
});
export type AgentStepView = z.infer<typeof AgentStepViewSchema>;

/** The recovery in force for some failure classes of a step (the effective recipe, lib/plan/recovery.ts). */
export const RecoveryLineSchema = z.object({
  classes: z.array(FailureClassSchema).min(1),
  retries: z.number().int().min(0),
  /** What happens once retries are exhausted: ask a person, skip the step, abort the run. */
  escalation: z.enum(['ask', 'skip', 'abort']),
});
export type RecoveryLine = z.infer<typeof RecoveryLineSchema>;

/**
 * One step as its approvers see it: everything that decides what it does. `call`, `contract`,
 * `rollback` and `recovery` are omitted only when the view was cut to fit (see
 * {@link ApprovalViewSchema} `truncated`): id, description, tool and risks are always there.
 */
export const StepViewSchema = z.object({
  id: IdSchema,
  description: z.string(),
  /** The tool the runner calls; `agent` for an agent target. */
  tool: z.string(),
  /** Agent steps: the agent target (worker queue). */
  target: z.string().optional(),
  /** Agent steps: what runs, where, what it may reach and what bounds it. */
  agent: AgentStepViewSchema.optional(),
  risks: StepRiskMarksSchema,
  call: ShownCallSchema.optional(),
  contract: ShownCallSchema.optional(),
  rollback: z
    .object({ tool: z.string(), call: ShownCallSchema, contract: ShownCallSchema.optional() })
    .optional(),
  timeoutSeconds: z.number().int().positive().optional(),
  recovery: z.array(RecoveryLineSchema).optional(),
  requiresApproval: z.boolean(),
  requiresHuman: z.boolean(),
  /** A skipped critical step fails the run; a non-critical one lets independent branches go on. */
  critical: z.boolean(),
  outputs: z.array(IdSchema),
  /** What some outputs must look like (the step's `outputShapes`), when it declares any. */
  outputShapes: OutputShapesSchema.optional(),
  /**
   * The AWS its processes may use (the step's `aws`: the plan AWS role, assumed for this run with
   * these grants as session policy), one line per grant; absent: no AWS credentials at all.
   */
  aws: z.array(z.string()).optional(),
  /** The hosts its processes may reach, through the harness's proxy (the step's `network.hosts`); absent: no network. */
  network: z.array(z.string()).optional(),
  dependsOn: z.array(IdSchema),
  /** Its call, contract, rollback and recovery were left out to fit: `plangate render <plan> --format yaml` shows them. */
  detailsOmitted: z.literal(true).optional(),
  /**
   * What a revision (an approval with modifications) did to the step: the call it replaced (the
   * step's `call` and risk marks are then the revision's), or that it skips the step.
   */
  revised: z
    .object({
      revision: z.number().int().min(1),
      by: z.string(),
      replaces: ShownCallSchema.optional(),
      skipped: z.literal(true).optional(),
    })
    .optional(),
});
export type StepView = z.infer<typeof StepViewSchema>;

/**
 * One entry of the plan's `context` as approvers see it: what `${context.<key>}` is. Part of the
 * plan and so of its digest: a changed value is a new plan that needs a new approval.
 */
export const ContextEntrySchema = z.object({
  key: z.string(),
  /** The value as text: a string as is, anything else as canonical JSON; cut when longer than the view keeps. */
  value: z.string(),
  /** `value` was cut (the marks below are of the whole value): `plangate render <plan> --format yaml` shows it. */
  cut: z.literal(true).optional(),
  /** Where it reaches outside the workspace, were it used as a path (lib/plan/risks.ts `valueReach`); absent: nowhere. */
  outsideWorkspace: z.array(z.string()).optional(),
});
export type ContextEntry = z.infer<typeof ContextEntrySchema>;

/**
 * What an approval covers, built once by the compiler from the plan (lib/runtime/gate/approval-view.ts)
 * and compiled into the plan gate's summary, so what approvers see is bound to what runs (same
 * digest). Every channel (page, email, Slack, terminal, the gate JSON) renders this one view.
 */
export const ApprovalViewSchema = z.object({
  steps: z.array(StepViewSchema),
  postconditions: z.array(
    z.object({
      id: IdSchema,
      description: z.string(),
      contract: ShownCallSchema.optional(),
      /** Why its check is destructive (empty: not destructive). */
      risks: z.array(z.string()),
      /** Why its check's effect is unknown; absent: it only reads. */
      unknown: z.array(z.string()).optional(),
      /** What its check sends away or reads of credentials; absent: nothing. */
      exfiltration: z.array(z.string()).optional(),
    }),
  ),
  /** The plan's budget, when it declares one. */
  budget: z
    .object({
      wallClockSeconds: z.number().optional(),
      costUsd: z.number().optional(),
      tokens: z.number().optional(),
      maxCommands: z.number().optional(),
    })
    .optional(),
  /** Names of the secrets the plan declares or references: never a value. */
  secrets: z.array(z.string()),
  /** The plan's context, key by key in the order written; absent when it has none. */
  context: z.array(ContextEntrySchema).optional(),
  /**
   * The view was cut to fit the gate request (Step Functions' 256 KiB state payload): `shown`
   * steps keep their commands, `listed` steps are listed at all, of `total`. The full plan is
   * `plangate render <plan> --format yaml`.
   */
  truncated: z
    .object({
      shown: z.number().int().min(0),
      listed: z.number().int().min(0),
      total: z.number().int().min(1),
    })
    .optional(),
});
export type ApprovalView = z.infer<typeof ApprovalViewSchema>;

/** A step that already completed, as its step gate shows it: its evidence (redacted). */
export const CompletedStepSchema = z.object({
  id: IdSchema,
  /** The progress line of its TASK_COMPLETED, e.g. `[Task 1/3] ✔ build`. */
  progress: z.string().optional(),
  evidence: z
    .object({ kind: z.string(), passed: z.boolean(), summary: z.string(), excerpt: z.string().optional() })
    .optional(),
});
export type CompletedStep = z.infer<typeof CompletedStepSchema>;

/** A value a gated step will consume: a `${steps.x.y}` reference and its value now (redacted JSON). */
export const ConsumedValueSchema = RunTimeReferenceSchema.extend({
  /** The value as JSON, redacted and shortened; absent when the step has not produced it. */
  value: z.string().optional(),
});
export type ConsumedValue = z.infer<typeof ConsumedValueSchema>;

/** What a step gate shows: the step's view (compiled with it), what already ran and the values it will consume. */
export const StepGateViewSchema = z.object({
  step: StepViewSchema,
  /** The latest completed steps, in the order they completed. */
  completed: z.array(CompletedStepSchema).optional(),
  /** How many earlier completed steps are not listed. */
  completedNotListed: z.number().int().min(1).optional(),
  consumes: z.array(ConsumedValueSchema).optional(),
});
export type StepGateView = z.infer<typeof StepGateViewSchema>;

/** What a plan gate shows of the plan: its objective, its size, and the step ids a modification may name. */
export const PlanSummarySchema = z.object({
  objective: z.string(),
  steps: z.number().int().min(1),
  /** Every step id: an answer that skips or overrides a step the plan does not have is refused. */
  stepIds: z.array(IdSchema).optional(),
  /** Every step, in plan order, for the graph and the changes since the previous version. Omitted when too large to send. */
  graph: z.array(StepSketchSchema).optional(),
  /** What the approval covers, step by step: what every channel shows. */
  view: ApprovalViewSchema.optional(),
});
export type PlanSummary = z.infer<typeof PlanSummarySchema>;

/** Decisions of the plan gate and of a step gate (a step with `requiresApproval`). */
export const ApprovalDecisionSchema = z.discriminatedUnion('decision', [
  z.object({
    decision: z.literal('APPROVE'),
    by: z.string().optional(),
    comment: z.string().optional(),
    /**
     * Releases the soft-mandatory policies that would keep this gate waiting (or refuse this
     * answer), given by a member of their override group, with why: journaled, shown at the gate.
     */
    override: z.object({ reason: z.string().min(1).max(500) }).optional(),
  }),
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
   * Step gate: that step ends `skipped` (seed 001: "approval denied"), its dependents `blocked`;
   * by {@link TIMEOUT_DECIDER} (nobody approved in time), a critical step stops the run instead
   * (`Plangate.CriticalStepSkipped`).
   */
  z.object({ decision: z.literal('REJECT'), by: z.string().optional(), reason: z.string().min(1) }),
]);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/** Who rejects a plan or step gate that nobody answered in time (the last rung of its timeout ladder). */
export const TIMEOUT_DECIDER = 'plangate-timeout';

/** TASK_SKIPPED's reason for a step whose gate nobody answered in time; never "skipped by an approver". */
export const TIMED_OUT_SKIP_REASON = 'timed out: nobody approved in time';

/**
 * A step gate's REJECT, as the runner (or a human step's gate) gets it with `skip`: who rejected
 * ({@link TIMEOUT_DECIDER} when nobody answered in time) and why, for the TASK_SKIPPED it writes.
 */
export const StepGateRejectionSchema = z.object({ by: z.string().optional(), reason: z.string() });
export type StepGateRejection = z.infer<typeof StepGateRejectionSchema>;
/** The decisions a plan or step gate takes: what a vote (GATE_VOTE) can be. */
export const APPROVAL_DECISIONS = [
  'APPROVE',
  'APPROVE_WITH_MODIFICATIONS',
  'ASK_FOR_CLARIFICATION',
  'REJECT',
] as const satisfies readonly ApprovalDecision['decision'][];

/**
 * A revision of a plan or step gate's content: an approval with modifications made it, and it
 * needs the gate's full quorum again. Modifications accumulate: each revision holds every change
 * made so far. `digest` is `sha256:` + hex SHA-256 of the canonical JSON of
 * `{ base: <plan digest>, skipSteps (sorted), argOverrides }`.
 */
export const GateRevisionSchema = z.object({
  /** 1, 2, … per gate. */
  number: z.number().int().min(1),
  digest: z.string(),
  skipSteps: z.array(IdSchema),
  argOverrides: ArgOverridesSchema,
  /** Who modified it (their modification is not an approval of it). */
  by: z.string(),
  /** When (ISO 8601). */
  at: z.string(),
});
export type GateRevision = z.infer<typeof GateRevisionSchema>;

/** Decisions of an escalation gate (a step failed and its retries are exhausted). */
/** The person took the model's recovery suggestion (journaled; the machine ignores it). */
const AcceptedSuggestion = { acceptSuggestion: z.literal(true).optional() };

export const EscalationDecisionSchema = z.discriminatedUnion('decision', [
  /** Run the step again (runner → checker), attempt + 1, e.g. after credentials were fixed. */
  z.object({
    decision: z.literal('RETRY'),
    by: z.string().optional(),
    comment: z.string().optional(),
    ...AcceptedSuggestion,
  }),
  /**
   * The step ends `skipped`, its dependents `blocked`. If the step is critical the execution
   * then fails with `Plangate.CriticalStepSkipped`; otherwise independent branches go on.
   */
  z.object({
    decision: z.literal('SKIP'),
    by: z.string().optional(),
    comment: z.string().optional(),
    ...AcceptedSuggestion,
  }),
  /** The execution fails with `Plangate.Aborted`. */
  z.object({
    decision: z.literal('ABORT'),
    by: z.string().optional(),
    reason: z.string().optional(),
    ...AcceptedSuggestion,
  }),
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
  /** What to do: the step's task text (references unresolved until the gate opens), or its description. */
  instructions: z.string(),
  /** The values the person must report (`step.outputs`). */
  outputs: z.array(IdSchema),
  /** The step's `outputShapes`: a reported value that does not fit is refused. */
  outputShapes: OutputShapesSchema.optional(),
  /** Skipped by an approver: answered `skipped` at once, nobody is asked. */
  skip: z.boolean(),
  /** Why `skip`, when the step's own gate rejected it (null: skipped at the plan gate, or not skipped). */
  rejection: StepGateRejectionSchema.nullish(),
  dependsOn: z.array(IdSchema),
  /**
   * Ledger entries of the dependencies (one not `completed` answers `blocked` at once) and of the
   * steps the instructions reference.
   */
  inputs: z.record(z.string(), StepEntrySchema),
  /** The plan's context, present only when the instructions reference `${context.*}`. */
  context: PlanContextSchema.optional(),
  inlineOutputLimitBytes: z.number().int().positive(),
});
export type HumanTask = z.infer<typeof HumanTaskSchema>;

/** A reference of a call and what fills it now. */
export const FilledValueSchema = z.object({
  /** As written, e.g. `${steps.mk.dir}`. */
  raw: z.string(),
  /** The value as text (a string as is, else JSON); absent for a secret (never shown) or a value not produced. */
  value: z.string().optional(),
  /** A secret: shown by its reference, never its value. */
  secret: z.literal(true).optional(),
});
export type FilledValue = z.infer<typeof FilledValueSchema>;

/**
 * A rollback an escalation's ABORT will run: the step it undoes and the procedure's call, in the
 * order they run (the most recently completed step first).
 */
export const AbortRollbackSchema = z.object({
  stepId: IdSchema,
  tool: z.string(),
  /** The procedure's call as recorded (shortened when long); absent when the plan was too large to record. */
  call: ShownCallSchema.optional(),
  /**
   * The call with its values filled in, as it will run: each `${steps…}` and `${context…}` replaced
   * by its value now (from the journal's TASK_COMPLETED results and the plan's context), a
   * `${secrets…}` kept as its reference. Absent when the call was not recorded whole.
   */
  filled: ShownCallSchema.optional(),
  /** The references of the call, each with its value now, in the order written. */
  values: z.array(FilledValueSchema).optional(),
  /** Risk marks of the filled call: why it is destructive, where it reaches outside the workspace. */
  risks: z.object({ destructive: z.array(z.string()), outsideWorkspace: z.array(z.string()) }).optional(),
});
export type AbortRollback = z.infer<typeof AbortRollbackSchema>;

/** The classified failure an escalation gate asks about. */
export const ClassifiedFailureSchema = z.object({
  failureClass: FailureClassSchema,
  /** The error name as thrown, e.g. `Plangate.Permission` or `States.Timeout`. */
  error: z.string(),
  /** Redacted message, at most a few KiB. */
  message: z.string(),
  /** Which task failed: the step runner or the contract checker. */
  phase: z.enum(['run', 'check']),
  /**
   * The platform's policy refused the call (the attempt's POLICY_DECISION), added by the gate:
   * no credential is missing, and a retry makes the same call. Absent: not a policy denial.
   */
  policyDenial: PolicyDenialSchema.optional(),
});
export type ClassifiedFailure = z.infer<typeof ClassifiedFailureSchema>;

/** What the run's recovery advisor is told: the plan (by identity: the host holds it), the step and its failure. */
export const RecoveryAdviceRequestSchema = z.object({
  plan: PlanIdentitySchema,
  executionId: z.string(),
  stepId: IdSchema,
  failure: ClassifiedFailureSchema,
  attempt: z.number().int().min(1),
});
export type RecoveryAdviceRequest = z.infer<typeof RecoveryAdviceRequestSchema>;

/** The model could not be asked, or its answer was refused: the person decides without it. */
export interface RecoveryAdviceRefused {
  readonly refused: string;
  readonly provider: string;
  readonly model: string;
}

/** Asks the run's planner for a suggestion (lib/planner/recovery.ts, wired by the host). */
export type RecoveryAdvisor = (
  request: RecoveryAdviceRequest,
) => Promise<RecoveryAdvice | RecoveryAdviceRefused>;

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
  /** Kind `step`: the step as its approvers see it, compiled with it (lib/runtime/gate/approval-view.ts). */
  view: StepViewSchema.optional(),
  /** Kind `step`: ledger entries of the steps whose outputs it reads, to show the values it will consume. */
  inputs: z.record(z.string(), StepEntrySchema).optional(),
  /** Kind `plan`: what the plan is for and how many steps it has, to show the approver. */
  summary: PlanSummarySchema.optional(),
  /** Who may answer (`$approval`): checked on every answer. */
  approval: GateApproversSchema,
  /** 1 for the first request; +1 after each ASK_FOR_CLARIFICATION (or each escalation of the step). */
  round: z.number().int().min(1),
  /** The question from the previous round's ASK_FOR_CLARIFICATION, to show the approver; null on round 1. */
  question: z.string().nullish(),
  /**
   * How long the gate's link is valid. A plan or step gate then climbs its timeout ladder (see
   * `ladder`); an escalation gate or a human step fails `Plangate.GateTimedOut`.
   */
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
  /**
   * A later rung of the timeout ladder of a plan or step gate (absent: the first request). The
   * gate already waiting keeps its link: `remind` hands it this wait's token and reminds its
   * group; `escalate` retires it and asks group `level` (`approval`) instead; `expire` rejects it
   * (`timed out`). A decision that arrived between two rungs is handed on, never lost.
   */
  ladder: z
    .object({ stage: z.enum(['remind', 'escalate', 'expire']), level: z.number().int().min(0) })
    .optional(),
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
  /** Plan gate: the plan's objective, step count and view (not its graph, which only the page shows). */
  summary: PlanSummarySchema.omit({ graph: true }).optional(),
  /** Step gate: the step, what already ran and the values it will consume. */
  stepGate: StepGateViewSchema.optional(),
  /** Who submitted the plan: they may not approve it. */
  submittedBy: z.string().optional(),
  /** How the plan's processes run: sandboxed, or "steps run unsandboxed as <user> (why)". */
  runsAs: z.string().optional(),
  /** Who has voted so far toward the quorum (a reminder's notice). */
  votes: z.array(z.object({ by: z.string(), decision: z.string() })).optional(),
  round: z.number().int().min(1),
  question: z.string().optional(),
  failure: ClassifiedFailureSchema.optional(),
  /** Escalation: the rollbacks an ABORT runs, as of when it was asked (none: nothing to undo). */
  abortRollsBack: z.array(AbortRollbackSchema).optional(),
  /** Escalation of an unknown failure in a run with a planner: what the model suggests. */
  recovery: RecoveryAdviceSchema.optional(),
  /** Human step: what to do and which values to report. */
  human: z.object({ instructions: z.string(), outputs: z.array(IdSchema) }).optional(),
  expiresAt: z.string(),
  policy: GateApproversSchema,
  /**
   * A reminder or the gate escalated to this group (later rungs of the timeout ladder), or a new
   * revision of what is asked (an approver modified it; every approver reviews it again).
   * @default - the first request
   */
  stage: z.enum(['reminder', 'escalation', 'revision']).optional(),
  /** The revision now asked about (the link and `plan.digest` stay the plan's). */
  revision: GateRevisionSchema.optional(),
});
export type ApprovalNotice = z.infer<typeof ApprovalNoticeSchema>;

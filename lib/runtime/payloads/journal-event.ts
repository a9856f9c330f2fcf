/** Journal events: the seed-000 event types and the shape every stored event has. */
import { z } from 'zod';
import { FailureClassSchema, IdSchema } from '../../plan/schema.ts';
import { NetworkRecordSchema } from '../sandbox/plan-process-call.ts';
import { UsageSchema } from './budget.ts';
import { CallSchema } from './call.ts';
import { EvidenceSchema } from './checker.ts';
import { APPROVAL_DECISIONS, GateKindSchema, StepSketchSchema } from './gate.ts';
import { AgentRunSchema, HandoffStartSchema } from './handoff.ts';
import { IntegrityMismatchDetailsSchema, IntegrityPinSchema, Sha256Schema } from './integrity.ts';
import { PlanFactsSchema, PolicyDecisionDetailsSchema, PolicyOverrideSchema } from './policy.ts';
import { RECOVERY_STRATEGIES } from './recovery-advice.ts';
import { ArgOverridesSchema, GateApproversSchema } from './shared.ts';

/** Seed 000's event names, plus the few the harness needs to say what else happened. */
export const EVENT_TYPES = [
  'PLAN_CREATED',
  /** A start a crash cut short (PLAN_CREATED journaled, the engine not asked) was made at the next start-up, or the plan closed. */
  'PLAN_START_RECOVERED',
  'GATE_APPROVAL_REQUESTED',
  /** One approver's answer to a plan or step gate, for the content (digest) they saw. */
  'GATE_VOTE',
  /** An approval with modifications made a new revision of the gated content: the quorum starts again. */
  'GATE_PLAN_MODIFIED',
  'GATE_APPROVED',
  'GATE_REJECTED',
  /** The approver asked a question instead of deciding (seed 000's ASK_FOR_CLARIFICATION). */
  'GATE_CLARIFICATION_REQUESTED',
  'GATE_ANSWER_REFUSED',
  /** Timeout ladder: nobody answered yet, so the gate's approvers were reminded. */
  'GATE_REMINDED',
  /** Timeout ladder: nobody answered in time, so the gate was handed to the next approver group. */
  'GATE_ESCALATED',
  /** A later version of the plan was gated, so this version's waiting plan gate was closed (rejected). */
  'GATE_SUPERSEDED',
  /** The notifier could tell nobody of a gate: no channel configured, nobody to send to, or every send failed. */
  'GATE_NOTICE_UNDELIVERED',
  /** A decision a crash cut short was finished: journaled as it lacked, and told to the machine. */
  'GATE_DECISION_RECOVERED',
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
  /** Seed 001's third strategy: the model suggested how to recover from a failure no recipe covers. */
  'RECOVERY_SUGGESTED',
  /** The model could not be asked, or what it answered was refused; the person decides without it. */
  'RECOVERY_SUGGESTION_REFUSED',
  /**
   * Seed 000's permission recipe: credentials must be fixed out of band before RETRY; or, when the
   * platform's policy denied the call, what would allow it (a retry is denied again).
   */
  'PERMISSION_REQUIRED',
  /** A person answered a human step (seed 003): done with its outputs, or failed. */
  'HUMAN_TASK_ANSWERED',
  'POSTCONDITION_CHECKED',
  /** Seed 003 rollback: a completed step's rollback procedure started (on abort, or rehearsed). */
  'ROLLBACK_STARTED',
  /** The rollback ran and its contract proved the undo. */
  'ROLLBACK_COMPLETED',
  /** The rollback's tool failed or its contract did not pass; the earlier steps stay as they are. */
  'ROLLBACK_FAILED',
  /** Seed 004 §7: what remains of the plan's budget does not cover the next step; a person decides. */
  'BUDGET_EXCEEDED',
  /** The platform's policy (Cedar) decided something that changed an outcome: which rules, for whom. */
  'POLICY_DECISION',
  /** The definition the engine runs, or the policy set in force, is not the one pinned at submission: refused. */
  'INTEGRITY_MISMATCH',
  'EXECUTION_COMPLETE',
] as const;
export const EventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventTypeSchema>;

/**
 * A step as PLAN_CREATED records it, so a later version's gate can show what changed, old → new:
 * its tool, and what it is given and its contract as canonical JSON, each shortened.
 */
export const RecordedStepSchema = z.object({
  tool: z.string(),
  args: z.string(),
  contract: z.string().optional(),
  /** Its rollback, `{tool, args}` as canonical JSON, whole (within the record's limit): what an abort would run. */
  rollback: z.string().optional(),
});
export type RecordedStep = z.infer<typeof RecordedStepSchema>;

/** What an approval with modifications changes: steps not to run, new arg values by step id. */
const ModificationsSchema = z.object({ skipSteps: z.array(z.string()), argOverrides: ArgOverridesSchema });

/**
 * A gate as it opened (the event that opens it carries this): what `GET /plans/{id}` shows of it
 * while it waits. The shared link id is what Slack and the page carry (its page asks the reader to
 * sign in); never the task token, nor an emailed recipient's own link.
 */
export const GateOpenedSchema = z.object({
  /** The gate's shared link id. */
  link_id: z.string().min(1),
  /** Its deadline (ISO 8601 UTC): the link expires and the gate's timeout ladder climbs. */
  expires_at: z.string(),
  /** Who may answer it: approvers (empty: anyone), who never may, how many approvals decide. */
  policy: GateApproversSchema,
  /** What it asks, in one line (lib/runtime/gate/notice.ts: `gateAsks`). */
  asks: z.string(),
  /** The previous round's question (ASK_FOR_CLARIFICATION), when there was one. */
  question: z.string().optional(),
});
export type GateOpened = z.infer<typeof GateOpenedSchema>;

/** Why a gate's notice reached nobody (GATE_NOTICE_UNDELIVERED). */
export const NoticeUndeliveredReasonSchema = z
  .enum(['no-channel', 'no-recipient', 'send-failed'])
  .describe(
    "no-channel: neither email (an SES sender) nor Slack is configured; no-recipient: only email is, and none of the gate's approvers is an email address; send-failed: nothing could be sent (when every channel failed, the notifier tries again)",
  );

/** Details per event type (seed 000's fields, snake_case as the seed writes them). */
export const EVENT_DETAILS = {
  PLAN_CREATED: z.object({
    task_count: z.number().int(),
    dependencies: z.record(z.string(), z.array(z.string())),
    /** Each step's tool, args and contract (recordedSteps); omitted for a plan too large to record. */
    steps: z.record(z.string(), RecordedStepSchema).optional(),
    /**
     * The plan's context (it is part of the digest), for what an escalation shows an abort will
     * run; omitted when empty or too large to record.
     */
    context: z.record(z.string(), z.unknown()).optional(),
    /** Who submitted the plan (Plans API: the IAM caller, or local mode's header). */
    submitted_by: z.string().optional(),
    /** The IAM principal that signed, when the policy's people file names the person it is (submitted_by). */
    submitted_by_principal: z.string().optional(),
    /** `plangate run`: the identity that launched it (in canonical form) and the OS user it ran as. */
    launched_by: z.string().optional(),
    os_user: z.string().optional(),
    /** `plangate run --solo`: no submitter is recorded, so the launcher may approve their own plan. */
    solo: z.boolean().optional(),
    /** A plan a model drafted from a goal (lib/planner): how, and what it cost. */
    planner: z
      .object({
        goal: z.string(),
        provider: z.string(),
        model: z.string(),
        rounds: z.number().int(),
        input_tokens: z.number().int(),
        output_tokens: z.number().int(),
        /** A revision: the digest of the version it replaces, and what the person asked for. */
        revision_of: z.string().optional(),
        feedback: z.string().optional(),
      })
      .optional(),
    /** The execution's input asks for the rollback rehearsal (`--rehearse-rollback`): a start made again after a crash asks it too. */
    rehearse_rollback: z.boolean().optional(),
    /** What the harness computed about the plan for the platform's policy (lib/policy): every later decision judges these. */
    policy_facts: PlanFactsSchema.optional(),
    /** The policies that permitted the submission (SubmitPlan). */
    permitted_by: z.array(z.string()).optional(),
    /** Soft-mandatory policies the submitter overrode to submit it, and why (docs/policy.md#enforcement-levels). */
    policy_override: PolicyOverrideSchema.optional(),
    /** Advisory policies that matched the submission: they would have refused it, and did not. */
    policy_advisory: z.array(z.string()).optional(),
    /** The compiled definition and the policy set the execution is pinned to (absent: submitted before pinning). */
    integrity: IntegrityPinSchema.optional(),
  }),
  /**
   * The execution PLAN_CREATED announced was not started (a crash between the two writes): the
   * next start-up started it as launched (`started`: it waits at its gate), or could not and
   * closed the plan (`closed`, with why).
   */
  PLAN_START_RECOVERED: z.discriminatedUnion('outcome', [
    z.object({ outcome: z.literal('started') }),
    z.object({ outcome: z.literal('closed'), reason: z.string() }),
  ]),
  GATE_APPROVAL_REQUESTED: z.object({
    plan_id: z.string(),
    gate: GateKindSchema,
    round: z.number().int(),
    /** Plan gate, first round: the steps shown, so a later version's gate can say what changed. */
    graph: z.array(StepSketchSchema).optional(),
    /** The gate that opened (absent in events journaled before it was recorded). */
    opened: GateOpenedSchema.optional(),
  }),
  GATE_VOTE: z.object({
    gate: GateKindSchema,
    voter: z.string(),
    decision: z.enum(APPROVAL_DECISIONS),
    /** The content digest the voter saw: the plan digest, or a revision's. */
    digest: z.string(),
    /** APPROVE_WITH_MODIFICATIONS: what the voter changed (a new revision follows). */
    modifications: ModificationsSchema.optional(),
    comment: z.string().optional(),
  }),
  GATE_PLAN_MODIFIED: z.object({
    gate: GateKindSchema,
    by: z.string(),
    /** The digest the modification was made to, and the new revision's. */
    from: z.string(),
    to: z.string(),
    revision: z.number().int().min(1),
    /** Everything the revision changes, accumulated over the gate's modifications so far. */
    skipSteps: z.array(z.string()),
    argOverrides: ArgOverridesSchema,
  }),
  GATE_APPROVED: z.object({
    gate: GateKindSchema,
    /** Every approver, joined with ", " (as the decision's `by`). */
    approver: z.string().optional(),
    /** Every approval that counted toward the quorum, in order. */
    approvers: z.array(z.string()).optional(),
    /**
     * The groups a verified request proved for each approver (JWT claims; policy adds its groups
     * file's): the step runner judges the gate's completion again with them when the call as it
     * runs does more than the gate approved. Approvers without proven groups are absent.
     */
    approver_groups: z.array(z.object({ approver: z.string(), groups: z.array(z.string()) })).optional(),
    /** The content approved: the plan digest, or the revision's. */
    digest: z.string().optional(),
    /** Plan gate: the hash of the definition the engine held when the gate was approved. */
    definition_hash: Sha256Schema.optional(),
    modifications: ModificationsSchema.optional(),
  }),
  GATE_REJECTED: z.object({ gate: GateKindSchema, approver: z.string().optional(), reason: z.string() }),
  GATE_CLARIFICATION_REQUESTED: z.object({
    gate: GateKindSchema,
    question: z.string(),
    asked_by: z.string().optional(),
  }),
  /** An answer the gate refused (expired, already answered, wrong approver, other digest, bad decision); nothing else changed. */
  GATE_ANSWER_REFUSED: z.object({
    gate: GateKindSchema,
    reason: z.string(),
    message: z.string(),
    by: z.string().optional(),
    /** An answer refused before anyone was verified (no identity, plan code): where it came from. */
    source: z.string().optional(),
    /**
     * The gate's execution, when it had already ended: the refusal is then in a stream of its own
     * (`answer-refused:<uuid>`), since nothing follows an execution's EXECUTION_COMPLETE.
     */
    execution: z.string().optional(),
  }),
  GATE_REMINDED: z.object({ gate: GateKindSchema, level: z.number().int() }),
  GATE_ESCALATED: z.object({
    gate: GateKindSchema,
    level: z.number().int(),
    approvers: z.array(z.string()),
    /** The gate that asks the next group (absent in events journaled before it was recorded). */
    opened: GateOpenedSchema.optional(),
  }),
  /** The version, digest and execution whose gate closed this one. */
  GATE_SUPERSEDED: z.object({
    gate: GateKindSchema,
    by_version: z.number().int(),
    by_digest: z.string(),
    by_execution: z.string(),
  }),
  GATE_NOTICE_UNDELIVERED: z.object({
    gate: GateKindSchema,
    /** The shared link id of the gate the notice was about. */
    link_id: z.string(),
    /** What the notice was: absent for the gate's first request. */
    stage: z.enum(['reminder', 'escalation', 'revision']).optional(),
    reason: NoticeUndeliveredReasonSchema,
    /** Why, in words: what to configure, or each channel's error. */
    message: z.string(),
  }),
  /**
   * A decision a crash cut short (recorded on the gate, the machine not told) was finished at the
   * next answer or at a restart: the journal got what it lacked, the machine the decision.
   */
  GATE_DECISION_RECOVERED: z.object({
    gate: GateKindSchema,
    link_id: z.string(),
    decision: z.string(),
  }),
  TASK_STARTED: z.object({
    attempt: z.number().int(),
    progress: z.string(),
    /** An agent's or a person's step: the handoff as it was when the step started (seed 003's handoff.md). */
    handoff: HandoffStartSchema.optional(),
    /** A person's step: the gate that asks them (absent in events journaled before it was recorded). */
    opened: GateOpenedSchema.optional(),
    /** The call as it was made: tool, run-time values (secrets redacted), what the tool received. Absent for a person's step, and when the call could not be resolved. */
    call: CallSchema.optional(),
  }),
  TASK_COMPLETED: z.object({
    /** The attempt completed, whose whole result the outputs table keeps (steps/README.md). */
    attempt: z.number().int().min(1).optional(),
    result: z.unknown(),
    evidence: EvidenceSchema,
    progress: z.string(),
    /** Tokens and cost the step's agent reported, counted against the plan's budget. */
    usage: UsageSchema.optional(),
    /** The worker that ran the attempt (`host:pid`), for an agent step. */
    worker: z.string().optional(),
    /** What the worker's agent ran and reported. */
    agent_run: AgentRunSchema.optional(),
    /** What the step's tool and contract asked of the network proxy, refused or not (a step that declares `network`). */
    network: z.array(NetworkRecordSchema).optional(),
  }),
  TASK_FAILED: z.object({
    error: z.string(),
    error_message: z.string(),
    progress: z.string(),
    /** Tokens and cost the failed attempt's agent reported: spent all the same, counted against the budget. */
    usage: UsageSchema.optional(),
    /** The worker that ran the attempt (`host:pid`), when it answered. */
    worker: z.string().optional(),
    /** What the worker's agent ran and reported, when it answered. */
    agent_run: AgentRunSchema.optional(),
    /** What the step's tool and contract asked of the network proxy, refused or not. */
    network: z.array(NetworkRecordSchema).optional(),
  }),
  TASK_SKIPPED: z.object({ reason: z.string() }),
  TASK_BLOCKED: z.object({ blocked_by: z.array(z.string()) }),
  FAILURE_DETECTED: z.object({ error: z.string(), error_message: z.string(), attempt: z.number().int() }),
  FAILURE_CLASSIFIED: z.object({ failure_type: FailureClassSchema, error: z.string() }),
  RECOVERY_APPLIED: z.object({ recipe_name: z.string(), outcome: z.string() }),
  RECOVERY_ESCALATION: z.object({
    reason: z.string(),
    user_decision: z.enum(['RETRY', 'SKIP', 'ABORT']).optional(),
    decided_by: z.enum(['person', 'recipe']).optional(),
    /** The gate showed the model's suggestion: whether the person took it. */
    suggestion: z.enum(['accepted', 'declined']).optional(),
    /** A person is asked (no decision yet): the gate that asks them. */
    opened: GateOpenedSchema.optional(),
  }),
  RECOVERY_SUGGESTED: z.object({
    strategy: z.enum(RECOVERY_STRATEGIES),
    reasons: z.string(),
    provider: z.string(),
    model: z.string(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    /** retry_with_args: the changed args; insert_steps: the new steps' ids. */
    args: z.record(z.string(), z.unknown()).optional(),
    steps: z.array(z.string()).optional(),
    /** A revising suggestion: the plan version it makes, if the person accepts it. */
    revision: z.object({ version: z.number().int(), digest: z.string() }).optional(),
  }),
  RECOVERY_SUGGESTION_REFUSED: z.object({ reason: z.string(), provider: z.string(), model: z.string() }),
  PERMISSION_REQUIRED: z.object({
    message: z.string(),
    /** The platform's policy denied the call (these policies decided): no credential is missing. */
    policies: z.array(z.string()).optional(),
  }),
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
  ROLLBACK_STARTED: z.object({
    tool: z.string(),
    /** True when the run succeeded and the rollback only proves the procedure works. */
    rehearsal: z.boolean(),
    /** Counted from 1; a later attempt follows one that was cut short and whose contract did not hold. */
    attempt: z.number().int().positive().optional(),
    /** The undo as it was made (as TASK_STARTED's); absent when it could not be resolved. */
    call: CallSchema.optional(),
  }),
  ROLLBACK_COMPLETED: z.object({
    evidence: EvidenceSchema,
    rehearsal: z.boolean(),
    /** The attempt was cut short (the engine stopped) and its contract proved the undo already done. */
    after_interruption: z.boolean().optional(),
  }),
  ROLLBACK_FAILED: z.object({
    error: z.string(),
    error_message: z.string(),
    evidence: EvidenceSchema.optional(),
    rehearsal: z.boolean(),
  }),
  BUDGET_EXCEEDED: z.object({
    /** What ran out: `wallClockSeconds`, `costUsd` or `tokens`. */
    limit: z.enum(['wallClockSeconds', 'costUsd', 'tokens']),
    budget: z.number(),
    used: z.number(),
    /** What the limit becomes if the person answers RETRY (continue): the used amount plus the plan's original budget. */
    raised_to: z.number(),
  }),
  POLICY_DECISION: PolicyDecisionDetailsSchema,
  INTEGRITY_MISMATCH: IntegrityMismatchDetailsSchema,
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

/** Why a journal event was refused: the first issue and where it is (`event…` or `event.details…`). */
export interface JournalEventIssue {
  readonly location: string;
  readonly message: string;
}

/**
 * Parses a journal event and checks its details against its type's schema: the event, or the
 * first issue found and where it is.
 */
export function safeParseJournalEvent(
  value: unknown,
):
  | { readonly success: true; readonly data: JournalEvent }
  | { readonly success: false; readonly issue: JournalEventIssue } {
  const parsed = JournalEventSchema.safeParse(value);
  if (!parsed.success) return { success: false, issue: locatedIssue('event', parsed.error.issues[0]) };
  const details = EVENT_DETAILS[parsed.data.event].safeParse(parsed.data.details);
  if (!details.success)
    return { success: false, issue: locatedIssue('event.details', details.error.issues[0]) };
  return { success: true, data: parsed.data };
}

function locatedIssue(where: string, issue: z.core.$ZodIssue | undefined): JournalEventIssue {
  const path = issue?.path.length ? `.${issue.path.join('.')}` : '';
  return { location: `${where}${path}`, message: issue?.message ?? 'invalid event' };
}

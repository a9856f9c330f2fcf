/**
 * What the HTTP API answers, as zod schemas: the handlers' response types are inferred from them
 * and the OpenAPI document (openapi.ts) is generated from them, so the two cannot disagree.
 */
import { z } from 'zod';
import { FORM_TOKEN_FIELD, OUTPUT_FIELD_PREFIX } from '../runtime/gate/approval-page.ts';
import { argFieldName, SKIP_FIELD } from '../runtime/gate/modifications.ts';
import {
  AbortRollbackSchema,
  ApprovalDecisionSchema,
  ApprovalViewSchema,
  ClassifiedFailureSchema,
  EscalationDecisionSchema,
  GateApproversSchema,
  GateKindSchema,
  GateRevisionSchema,
  HumanDecisionSchema,
  JournalRecordSchema,
  NoticeUndeliveredReasonSchema,
  PlanIdentitySchema,
  PlanSummarySchema,
  RecoveryAdviceSchema,
  StepGateViewSchema,
} from '../runtime/payloads/index.ts';

export const ProblemSchema = z.object({
  severity: z.enum(['error', 'warning']),
  code: z.string(),
  message: z.string(),
  location: z.object({
    file: z.string(),
    line: z.number().int().optional(),
    column: z.number().int().optional(),
    pointer: z
      .string()
      .optional()
      .describe('JSON Pointer of the value in the plan document (or in the answer, for a modification)'),
  }),
});

/**
 * Every refusal, whoever answers it: the handlers, and API Gateway itself (a missing or wrong
 * SigV4 signature 403, a missing or invalid JWT 401, a body over its 10 MB quota 413, a handler
 * that failed 500), whose bodies are `{"message": …}` and nothing else.
 */
export const ErrorResponseSchema = z
  .object({
    message: z.string().describe('What went wrong, and what to do about it'),
    error: z
      .string()
      .optional()
      .describe(
        'A short title, e.g. "invalid plan", "plan too large" (absent in the gateway\'s own answers)',
      ),
    problems: z
      .array(ProblemSchema)
      .optional()
      .describe(
        "An invalid plan: every problem, located (the validator's and Step Functions' quotas'); a refused modification at a gate: every problem of the plan it makes, located in the answer (`file: answer`, a JSON pointer such as `/argOverrides/<step>/<arg>`)",
      ),
    policies: z
      .array(z.string())
      .optional()
      .describe(
        "Denied by the platform's policy: the ids of the policies that decided (empty: no policy permits it)",
      ),
  })
  .describe('A refusal: `message` always; `error` and `problems` when the handler answered');
export type ErrorResponse = z.infer<typeof ErrorResponseSchema>;

export const SubmitResponseSchema = z.object({
  executionArn: z.string(),
  plan: PlanIdentitySchema,
  stateMachineVersionArn: z.string(),
  /** Warnings the validator reported (errors refuse the plan). */
  warnings: z.array(ProblemSchema),
});
export type SubmitResponse = z.infer<typeof SubmitResponseSchema>;

/** Per step: the last thing the journal says about it. */
export const StepStatusEntrySchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  status: z.enum(['pending', 'running', 'waiting', 'completed', 'failed', 'skipped', 'blocked']),
  /** The latest "[Task N/M] …" line. */
  progress: z.string().optional(),
});
export type StepStatusEntry = z.infer<typeof StepStatusEntrySchema>;

/** What a waiting gate does next if nobody answers (lib/runtime/gate/waiting-gates.ts: `nextRung`). */
export const GateNextRungSchema = z.object({
  action: z
    .enum(['remind', 'escalate', 'reject', 'fail'])
    .describe(
      'remind: its approvers are told again (same link); escalate: the next group is asked (a new link); reject: rejected `timed out` (a gate never approves itself); fail: the escalation or human step fails `Plangate.GateTimedOut`',
    ),
  at: z.string().describe('When, ISO 8601 UTC'),
  approvers: z.array(z.string()).optional().describe('escalate: the group asked next'),
  quorum: z.number().int().optional().describe('escalate: how many of them must approve'),
});

/** A gate of the execution waiting for a person, from its journal. */
export const WaitingGateSchema = z.object({
  kind: GateKindSchema.describe(
    'plan: the plan gate; step: a step with requiresApproval; escalation: a step failed and its retries are exhausted; human: a step a person does',
  ),
  stepId: z.string().optional().describe('The step gated, failed or to do (absent for the plan gate)'),
  stepName: z.string().optional().describe("That step's description"),
  round: z.number().int().optional().describe('Plan and step gates: 1, then +1 after each question'),
  asks: z.string().describe('What the gate asks, in one line, as its messages title it'),
  question: z.string().optional().describe("The previous round's question (ASK_FOR_CLARIFICATION)"),
  mayAnswer: z
    .string()
    .describe(
      'Who may answer, in words, as the gate shows it: the approvers (or anyone), and who never may (the forbidden, and for a plan or step gate its submitter)',
    ),
  awaiting: z
    .array(z.string())
    .describe(
      'The approvers named who may still answer (not the forbidden, not the submitter of a plan or step gate, not who approved already); empty when anyone may',
    ),
  quorum: z
    .object({
      needed: z.number().int().describe('How many approvals decide'),
      approvals: z.number().int().describe('How many were given to the content as it is now'),
    })
    .optional()
    .describe('Plan and step gates'),
  deadline: z.string().describe('ISO 8601 UTC: the link expires and the timeout ladder climbs'),
  next: GateNextRungSchema.optional().describe(
    "What happens next if nobody answers (absent when the plan's ladder is not known)",
  ),
  link: z
    .string()
    .describe(
      "The gate's shared approval page, the one its Slack message carries: it carries no credential, and the page asks the reader to sign in to answer",
    ),
  undelivered: z
    .object({
      reason: NoticeUndeliveredReasonSchema,
      message: z.string().describe('Why, in words'),
      at: z.string().describe('ISO 8601 UTC'),
    })
    .optional()
    .describe('The latest notice about this gate reached nobody (GATE_NOTICE_UNDELIVERED): pass its link on'),
});
export type WaitingGate = z.infer<typeof WaitingGateSchema>;

export const StatusResponseSchema = z.object({
  executionArn: z.string(),
  /** Step Functions' execution status: RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED… */
  status: z.string(),
  plan: PlanIdentitySchema.optional(),
  steps: z.array(StepStatusEntrySchema),
  gates: z
    .array(WaitingGateSchema)
    .describe('The gates waiting for a person while the execution runs, in the order they opened'),
  progress: z.array(z.string()),
  summary: z.unknown().optional(),
  /** How many journal events the execution has. */
  events: z.number().int(),
});
export type StatusResponse = z.infer<typeof StatusResponseSchema>;

export const EventsResponseSchema = z.object({
  executionArn: z.string(),
  events: z.array(JournalRecordSchema),
});
export type EventsResponse = z.infer<typeof EventsResponseSchema>;

/** What every JSON answer carries beside its decision's own fields. */
const AnswerFields = {
  digest: z
    .string()
    .min(1)
    .describe(
      "The content digest reviewed: the plan's (`planDigest`), or the gate's latest `revision.digest`",
    ),
  [FORM_TOKEN_FIELD]: z
    .string()
    .optional()
    .describe("A page session's form token: required when `{approvalId}` is a page's handle"),
};

/** One decision's fields, as an answer gives them: who answers is the caller, never a field. */
function answerOf(decision: z.ZodObject): z.ZodObject {
  const { by: _caller, ...fields } = decision.shape;
  return z.object({ ...fields, ...AnswerFields });
}

/** Every decision a gate of any kind takes, one option each. */
const DECISION_OPTIONS: readonly z.ZodObject[] = [
  ...ApprovalDecisionSchema.options,
  ...EscalationDecisionSchema.options,
  ...HumanDecisionSchema.options,
];

/**
 * An answer given as JSON: the digest reviewed and one decision with the fields it requires. Which
 * decisions a gate takes depends on its `kind` (the gate JSON says it): a plan or step gate APPROVE,
 * APPROVE_WITH_MODIFICATIONS, ASK_FOR_CLARIFICATION or REJECT; an escalation (a step failed, its
 * retries exhausted) RETRY, SKIP or ABORT; a human step DONE (with its outputs) or FAILED. Any
 * other decision for the gate's kind is refused (400) and recorded nowhere. A description of the
 * wire format only: Approvals parses each answer with its gate kind's schema.
 */
export const JsonAnswerSchema = z
  .discriminatedUnion(
    'decision',
    DECISION_OPTIONS.map(answerOf) as unknown as [z.ZodObject<{ decision: z.ZodLiteral<string> }>],
  )
  .describe("An answer: the digest reviewed and one of the gate kind's decisions, with its fields");

/** A field of the approval page's form, with its description. */
const formField = (description: string) => z.string().describe(description);

/**
 * The approval page's form (`application/x-www-form-urlencoded`): the same answers, field by field;
 * a plan or step gate's modifications as the page shows them (lib/runtime/gate/modifications.ts).
 */
export const FormAnswerSchema = z
  .looseObject({
    digest: AnswerFields.digest,
    decision: z.enum(DECISION_OPTIONS.map((o) => (o.shape.decision as z.ZodLiteral<string>).value)),
    [FORM_TOKEN_FIELD]: formField("The page session's form token (a hidden field of the page)").optional(),
    question: formField('ASK_FOR_CLARIFICATION: the question (required)').optional(),
    reason: formField('REJECT, FAILED: why').optional(),
    [SKIP_FIELD]: formField(
      'APPROVE_WITH_MODIFICATIONS at a plan gate: a step to skip (repeat the field for each)',
    ).optional(),
  })
  .describe(
    `The page's form: also \`${argFieldName('<stepId>', '<name>')}\` (a step's argument as shown or edited: APPROVE_WITH_MODIFICATIONS sends what changed) and \`${OUTPUT_FIELD_PREFIX}<name>\` (DONE: each of the human step's outputs)`,
  );

/** Any decision a gate recorded, as stored: a plan or step gate's, an escalation's, a human step's. */
export const GateDecisionSchema = z.union([
  ApprovalDecisionSchema,
  EscalationDecisionSchema,
  HumanDecisionSchema,
]);

/** A note a host adds to a recorded answer (`plangate run --goal`: a question sends the plan back to the planner). */
const AnswerNote = {
  note: z
    .string()
    .optional()
    .describe('What the host did with the answer, e.g. a question sent back to the planner'),
};

/**
 * What answering a gate did: decided it, recorded one vote of a quorum still short, or (an
 * approval with modifications) made a new revision that the full quorum must approve again.
 */
export const AnswerOutcomeSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('decided'), decision: GateDecisionSchema, ...AnswerNote }),
  z.object({
    status: z.literal('pending'),
    votes: z.number().int().describe('Approvals recorded so far, toward the quorum'),
    ...AnswerNote,
  }),
  z.object({
    status: z.literal('modified'),
    revision: z.number().int().describe('The revision number the modification made'),
    digest: z.string().describe("The revision's digest: the next answers carry it"),
    ...AnswerNote,
  }),
]);

/**
 * A gate as the approval API shows it to a script (Accept: application/json): what the page
 * shows, as data. A plan gate's `view` is every step's exact call, contract, rollback, recovery and
 * risk marks, then the postconditions, budget and secret names; a step gate's `stepGate` is the
 * step's view, what already ran with its evidence and the values it will consume.
 */
export const GateViewSchema = z
  .looseObject({
    approvalId: z.string().describe('The link id or page handle this gate was read through'),
    kind: GateKindSchema.describe(
      'plan: the plan gate; step: a step with requiresApproval; escalation: a step failed and its retries are exhausted; human: a step a person does',
    ),
    executionId: z.string().describe("The execution's ARN"),
    planId: z.string(),
    planVersion: z.number().int(),
    planDigest: z.string().describe('The digest of the plan as compiled: what an approval binds to'),
    stepId: z.string().optional().describe('The step gated, failed or to do (absent for the plan gate)'),
    description: z.string().optional().describe("That step's description"),
    round: z
      .number()
      .int()
      .describe('1, then +1 after each ASK_FOR_CLARIFICATION (or escalation of the step)'),
    question: z.string().optional().describe("The previous round's question"),
    status: z.enum(['pending', 'answered', 'escalated', 'superseded']),
    summary: PlanSummarySchema.omit({ view: true })
      .optional()
      .describe('Plan gate: the objective, the step count, the step ids and the graph'),
    view: ApprovalViewSchema.optional().describe(
      "Plan gate: what the approval covers, step by step: each step's exact call, contract, rollback, recovery and risk marks, the postconditions, the budget and the secrets' names",
    ),
    stepGate: StepGateViewSchema.optional().describe(
      "Step gate: the step's view, the steps already completed with their evidence, the values it will consume",
    ),
    changes: z
      .looseObject({
        since: PlanIdentitySchema.pick({ version: true, digest: true }),
        added: z.array(z.looseObject({ id: z.string(), name: z.string() })),
        removed: z.array(z.looseObject({ id: z.string(), name: z.string() })),
        changed: z.array(z.looseObject({ id: z.string(), name: z.string() })),
      })
      .optional()
      .describe('Plan gate: what changed since the latest earlier version of the plan that was gated'),
    failure: ClassifiedFailureSchema.optional().describe('Escalation: the classified failure'),
    abortRollsBack: z
      .array(AbortRollbackSchema)
      .optional()
      .describe('Escalation: the rollbacks an ABORT runs, in order, as of when it was asked'),
    recovery: RecoveryAdviceSchema.optional().describe(
      "Escalation of an unknown failure in a run with a planner: the model's suggestion, beside the person's choices",
    ),
    human: z
      .looseObject({ instructions: z.string(), outputs: z.array(z.string()) })
      .optional()
      .describe('Human step: what to do, and the outputs DONE must report'),
    policy: GateApproversSchema.describe(
      'Who may answer: approvers (empty: anyone), who never may, and how many approvals decide',
    ),
    submittedBy: z.string().optional().describe('Who submitted the plan: they may not approve it'),
    votes: z.number().int().describe('How many approvals were recorded so far'),
    voters: z.array(z.object({ by: z.string(), decision: z.string() })).describe('Who voted so far, and how'),
    createdAt: z.string().describe('ISO 8601 UTC'),
    expiresAt: z.string().describe('The deadline, ISO 8601 UTC'),
    revision: GateRevisionSchema.optional().describe(
      'The content as approvers modified it: answers must carry its digest',
    ),
    decision: GateDecisionSchema.optional().describe('The decision, once the gate is answered'),
    decidedAt: z.string().optional().describe('When it was decided, ISO 8601 UTC'),
  })
  .describe('A gate, as its page shows it');
export type GateJson = z.infer<typeof GateViewSchema>;

/** `POST /plans` with a goal instead of a plan: a planner drafts the plan (lib/launch/plan-drafts.ts). */
export const GoalRequestSchema = z.strictObject({
  goal: z.string().trim().min(1).max(4000),
  /** More about the goal: constraints, conventions, what exists. */
  context: z
    .string()
    .max(64 * 1024)
    .optional(),
});
export type GoalRequest = z.infer<typeof GoalRequestSchema>;

/** One planning round: what the model proposed and the validator's located problems with it. */
export const DraftRoundSchema = z.object({
  round: z.number().int(),
  steps: z.array(z.string()).optional(),
  /** The round's problems as `file:line:col code message` lines (at most 20). */
  problems: z.array(z.string()),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
});

/** A plan being drafted from a goal, and where that ended: an execution at the gate, or why not. */
export const DraftResponseSchema = z.object({
  draftId: z.string(),
  /** `planning` until the planner is done; `launched` (the plan is at its gate) or `failed`. */
  status: z.enum(['planning', 'launching', 'launched', 'failed']),
  goal: z.string(),
  submittedBy: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  provider: z.string().optional(),
  model: z.string().optional(),
  rounds: z.array(DraftRoundSchema),
  /** converged, max-rounds, token-budget or time-budget. */
  outcome: z.string().optional(),
  executionArn: z.string().optional(),
  plan: PlanIdentitySchema.optional(),
  /** The problems still open when no valid plan came out (at most 50). */
  problems: z.array(ProblemSchema).optional(),
  /** Why planning stopped short of a plan (a provider error), in one line. */
  error: z.string().optional(),
});
export type DraftResponse = z.infer<typeof DraftResponseSchema>;

/** What `POST /plans {goal}` answers (202): where to follow the draft. */
export const DraftAcceptedSchema = z.object({
  draftId: z.string(),
  status: z.literal('planning'),
  /** `GET` it for the draft's progress and, once launched, its execution. */
  location: z.string(),
});
export type DraftAccepted = z.infer<typeof DraftAcceptedSchema>;

/**
 * What the HTTP API answers, as zod schemas: the handlers' response types are inferred from them
 * and the OpenAPI document (openapi.ts) is generated from them, so the two cannot disagree.
 */
import { z } from 'zod';
import {
  ApprovalDecisionSchema,
  ApprovalPolicySchema,
  ApprovalViewSchema,
  GateRevisionSchema,
  JournalRecordSchema,
  PlanIdentitySchema,
  PlanSummarySchema,
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
    pointer: z.string().optional(),
  }),
});

export const ErrorResponseSchema = z.object({
  error: z.string(),
  message: z.string().optional(),
  /** A 403 `denied by policy`: the ids of the policies that decided (empty: no policy permits it). */
  policies: z.array(z.string()).optional(),
});

export const InvalidPlanResponseSchema = z.object({
  error: z.literal('invalid plan'),
  problems: z.array(ProblemSchema),
});

export const SubmitResponseSchema = z.object({
  executionArn: z.string(),
  plan: PlanIdentitySchema,
  stateMachineVersionArn: z.string(),
  /** Warnings the validator reported (errors refuse the plan). */
  warnings: z.array(ProblemSchema),
});
export type SubmitResponse = z.infer<typeof SubmitResponseSchema>;

/** Per step: the last thing the journal says about it. */
export const StepProgressSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  status: z.enum(['pending', 'running', 'waiting', 'completed', 'failed', 'skipped', 'blocked']),
  /** The latest "[Task N/M] …" line. */
  progress: z.string().optional(),
});
export type StepProgress = z.infer<typeof StepProgressSchema>;

export const StatusResponseSchema = z.object({
  executionArn: z.string(),
  /** Step Functions' execution status: RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED… */
  status: z.string(),
  plan: PlanIdentitySchema.optional(),
  steps: z.array(StepProgressSchema),
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

/** An answer given as JSON: the plan digest reviewed and the decision's fields. */
export const JsonAnswerSchema = z.looseObject({ digest: z.string().min(1), decision: z.string() });

/**
 * What answering a gate did: decided it, recorded one vote of a quorum still short, or (an
 * approval with modifications) made a new revision that the full quorum must approve again.
 */
export const AnswerOutcomeSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('decided'), decision: z.looseObject({ decision: z.string() }) }),
  z.object({ status: z.literal('pending'), votes: z.number().int() }),
  z.object({ status: z.literal('modified'), revision: z.number().int(), digest: z.string() }),
]);

/**
 * A gate as the approval API shows it to a script (Accept: application/json): what the page
 * shows, as data. A plan gate's `view` is every step's exact call, contract, rollback, recovery and
 * risk marks, then the postconditions, budget and secret names; a step gate's `stepGate` is the
 * step's view, what already ran with its evidence and the values it will consume.
 */
export const GateViewSchema = z.looseObject({
  approvalId: z.string(),
  kind: z.enum(['plan', 'step', 'escalation', 'human']),
  executionId: z.string(),
  planId: z.string(),
  planVersion: z.number().int(),
  planDigest: z.string(),
  stepId: z.string().optional(),
  description: z.string().optional(),
  round: z.number().int(),
  question: z.string().optional(),
  status: z.enum(['pending', 'answered', 'escalated']),
  /** Plan gate: objective, step count, step ids and graph. */
  summary: PlanSummarySchema.omit({ view: true }).optional(),
  view: ApprovalViewSchema.optional(),
  stepGate: StepGateViewSchema.optional(),
  /** Who may answer: approvers (empty: anyone), who never may, and how many approvals decide. */
  policy: ApprovalPolicySchema,
  /** Who submitted the plan: they may not approve it. */
  submittedBy: z.string().optional(),
  /** How many approvals were recorded so far. */
  votes: z.number().int(),
  /** Who voted so far, and how. */
  voters: z.array(z.object({ by: z.string(), decision: z.string() })),
  createdAt: z.string(),
  /** The deadline, ISO 8601 UTC. */
  expiresAt: z.string(),
  /** The content as approvers modified it: answers must carry its digest. */
  revision: GateRevisionSchema.optional(),
  decision: ApprovalDecisionSchema.or(z.looseObject({ decision: z.string() })).optional(),
});
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

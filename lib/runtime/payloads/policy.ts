/**
 * What the platform's policy (Cedar, lib/policy) is told about a plan and what it decided, as the
 * journal records them: the plan's facts (PLAN_CREATED {policy_facts}), computed by the harness
 * when the plan is launched so every later decision (a vote, a gate's completion, a step's run)
 * judges the same plan; and each decision that changed an outcome (POLICY_DECISION).
 */
import { z } from 'zod';

/** Why a fact is unknown in facts journaled before it was computed. */
const NOT_RECORDED = 'not recorded when the plan was launched';

/** What the harness computed about one step (never the author's word): its call, where it reaches, its risk. */
export const StepFactsSchema = z.object({
  /** The tool the step calls (`agent` for an agent target); empty for a person's step. */
  tool: z.string(),
  /** The agent target (seed 004); empty when none. */
  target: z.string(),
  /** Hosts the step's call and contract reach (URLs in its args, an http contract's URL). */
  hosts: z.array(z.string()),
  /** Why the step's own call is destructive (lib/plan/risks.ts); empty: not destructive. */
  destructive: z.array(z.string()),
  /**
   * Why the effect of its call, contract or rollback is unknown, and what they send away
   * (lib/plan/risks.ts): not proven read-only. Absent in facts journaled before they were computed.
   */
  unknown: z.array(z.string()).default([]),
  exfiltration: z.array(z.string()).default([]),
  /** The step has its own gate (`requiresApproval`). */
  ownGate: z.boolean(),
  /** The hosts its processes may reach through the harness's proxy (`network.hosts`); empty: no network. */
  networkHosts: z.array(z.string()).default([]),
  /**
   * Where its call, contract and rollback go (lib/plan/destinations.ts). Facts journaled before
   * these were computed read as knowing nothing: every program and destination unknown.
   */
  programs: z.array(z.string()).default([]),
  unknownPrograms: z.array(z.string()).default([NOT_RECORDED]),
  unknownDestinations: z.array(z.string()).default([NOT_RECORDED]),
  awsServices: z.array(z.string()).default([]),
  lambdaFunctions: z.array(z.string()).default([]),
});
export type StepFacts = z.infer<typeof StepFactsSchema>;

/** Where a set of calls goes (lib/plan/destinations.ts `CallDestinations`). */
export const DestinationFactsSchema = z.object({
  programs: z.array(z.string()),
  unknownPrograms: z.array(z.string()),
  hosts: z.array(z.string()),
  unknownDestinations: z.array(z.string()),
  awsServices: z.array(z.string()),
  lambdaFunctions: z.array(z.string()),
});

/** A plan as policy sees it: what it calls, where it reaches, how risky it is and what its own approval block asks. */
export const PlanFactsSchema = z.object({
  tools: z.array(z.string()),
  targets: z.array(z.string()),
  hosts: z.array(z.string()),
  /** Every host a step declares its processes may reach (`network.hosts`), sorted. */
  networkHosts: z.array(z.string()).default([]),
  stepCount: z.number().int(),
  steps: z.record(z.string(), StepFactsSchema),
  /** Where the postconditions' checks go; absent in facts journaled before: nothing known. */
  postconditions: DestinationFactsSchema.default({
    programs: [],
    unknownPrograms: [NOT_RECORDED],
    hosts: [],
    unknownDestinations: [NOT_RECORDED],
    awsServices: [],
    lambdaFunctions: [],
  }),
  /** The plan's own approval block: it can only narrow what policy allows. */
  approval: z.object({
    approvers: z.array(z.string()),
    quorum: z.number().int(),
    forbiddenApprovers: z.array(z.string()),
    timeoutSeconds: z.number().int(),
    allowAutoApprove: z.boolean(),
    /** The timeout ladder's later rungs (`escalateTo`), each with its own approvers and quorum. */
    escalateTo: z.array(z.object({ approvers: z.array(z.string()), quorum: z.number().int() })).default([]),
  }),
  /** A model drafted the plan (lib/planner). */
  planned: z.boolean(),
});
export type PlanFacts = z.infer<typeof PlanFactsSchema>;

/** The actions of plangate's Cedar schema (lib/policy/schema.ts), one per decision the platform makes. */
export const POLICY_ACTIONS = [
  'SubmitPlan',
  'ApprovePlanGate',
  'ModifyPlanGate',
  'ApproveStepGate',
  'Reject',
  'Ask',
  'AnswerEscalation',
  'AnswerHumanStep',
  'CompleteGate',
  'AutoApprove',
  'RunStep',
  'ReadExecution',
  'ReadDraft',
  'ReadAudit',
] as const;
export const PolicyActionSchema = z.enum(POLICY_ACTIONS);
export type PolicyAction = z.infer<typeof PolicyActionSchema>;

/**
 * POLICY_DECISION: a policy decision that changed an outcome (a refusal, or a gate completed or
 * auto-approved by what policy permits). Names the rule, never a secret value.
 */
/** Soft-mandatory policies a person overrode: who, why, which (docs/policy.md#enforcement-levels). */
export const PolicyOverrideSchema = z.object({
  by: z.string(),
  reason: z.string(),
  policies: z.array(z.string()),
});
export type PolicyOverride = z.infer<typeof PolicyOverrideSchema>;

export const PolicyDecisionDetailsSchema = z.object({
  action: PolicyActionSchema,
  principal: z.string(),
  /** The Cedar entity decided about, e.g. `Step::"deploy"`. */
  resource: z.string(),
  decision: z.enum(['allow', 'deny']),
  /** The ids of the policies that decided (`@id` annotations, else `file:line`); empty: no policy permits it. */
  policies: z.array(z.string()),
  /** What the decision did, e.g. "the vote was refused", "the step did not run". */
  outcome: z.string(),
  /** Policies that could not be evaluated (they count as not applying), by id and message. */
  errors: z.array(z.string()).optional(),
  /** The decision in one sentence: who, what, on what, and why (the policies and what they say). */
  reason: z.string().optional(),
  /** What the deciding policies say of themselves (`@reason`, other annotations); absent: none is annotated. */
  reasons: z
    .array(
      z.object({
        policy: z.string(),
        reason: z.string().optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      }),
    )
    .optional(),
  /**
   * RunStep: the call as it would have run, its values filled in (secret values redacted, long
   * strings shortened): the tool and its resolved args.
   */
  call: z.object({ tool: z.string(), args: z.record(z.string(), z.unknown()) }).optional(),
  /** The enforcement level that decided a denial (docs/policy.md#enforcement-levels). */
  level: z.enum(['soft-mandatory', 'hard-mandatory']).optional(),
  /** A soft-mandatory denial: the policies a member of `by`'s groups may override with a reason. */
  overridable: z.object({ policies: z.array(z.string()), by: z.array(z.string()) }).optional(),
  /** Advisory policies that matched: they would have denied, and did not. */
  advisory: z.array(z.string()).optional(),
  /** Soft-mandatory policies a person overrode, who and why: the allow this records. */
  overridden: PolicyOverrideSchema.optional(),
});
export type PolicyDecisionDetails = z.infer<typeof PolicyDecisionDetailsSchema>;

/**
 * A call the platform's policy refused, as a person deciding what next reads it: the policies
 * that decided and what they say, and what would allow it (never a retry: it is denied again).
 */
export const PolicyDenialSchema = z.object({
  /** The ids of the policies that decided; empty: no policy permits it. */
  policies: z.array(z.string()),
  /** The denial in one sentence, naming the policies and what they say of themselves. */
  reason: z.string(),
  /** What would allow it, and that a retry would not. */
  advice: z.string(),
});
export type PolicyDenial = z.infer<typeof PolicyDenialSchema>;

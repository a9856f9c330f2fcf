/**
 * plangate's Cedar schema, generated from its own model: who asks (a User, in Groups), what they
 * ask to do (one action per decision the platform makes, POLICY_ACTIONS) and what about (a Plan
 * with the facts the harness computed, a Step with its call and risk marks, a Gate being
 * completed, an Execution, a Draft, the audit trail). Policies are validated against it
 * (`plangate policy validate`), and every request is checked against it before it is decided.
 *
 * Entity types have no namespace, so policies read `Action::"SubmitPlan"`, `Group::"sre"`.
 */
import type { PolicyAction } from '../runtime/payloads/index.ts';

type CedarType =
  | { type: 'String' }
  | { type: 'Long' }
  | { type: 'Boolean' }
  | { type: 'Set'; element: CedarType }
  | { type: 'Record'; attributes: Record<string, CedarType & { required?: boolean }> }
  | { type: 'Entity'; name: string };

const STRING: CedarType = { type: 'String' };
const LONG: CedarType = { type: 'Long' };
const BOOL: CedarType = { type: 'Boolean' };
const STRINGS: CedarType = { type: 'Set', element: STRING };
const record = (attributes: Record<string, CedarType>): CedarType => ({ type: 'Record', attributes });

/** A Plan: what the harness computed about it (entities.ts `planEntity`). */
const PLAN_SHAPE = record({
  id: STRING,
  version: LONG,
  digest: STRING,
  /** Who submitted it ("" when nobody was recorded, e.g. a local run without --submitted-by). */
  submitter: STRING,
  tools: STRINGS,
  targets: STRINGS,
  hosts: STRINGS,
  /** Hosts its steps declare their processes may reach (`network.hosts`), through the harness's proxy. */
  networkHosts: STRINGS,
  stepCount: LONG,
  steps: STRINGS,
  destructiveSteps: LONG,
  destructiveStepIds: STRINGS,
  /** Destructive steps without their own gate (the validator refuses them; policy may too). */
  ungatedDestructiveSteps: LONG,
  /** Steps whose call, contract or rollback is not proven read-only (effect unknown) or sends data away. */
  unprovenSteps: LONG,
  /** Of those, the steps without their own gate. */
  ungatedUnprovenSteps: LONG,
  /** Steps with their own gate (`requiresApproval`). */
  gatedSteps: STRINGS,
  planned: BOOL,
  /** The plan's own approval block (it can only narrow what policy allows). */
  approval: record({
    approvers: STRINGS,
    quorum: LONG,
    forbiddenApprovers: STRINGS,
    timeoutSeconds: LONG,
    allowAutoApprove: BOOL,
  }),
});

/** A Step: its call and risk marks; tagged with its args as strings (resolved ones at RunStep). */
const STEP_SHAPE = record({
  id: STRING,
  planId: STRING,
  submitter: STRING,
  tool: STRING,
  target: STRING,
  hosts: STRINGS,
  /** Hosts the step declares its processes may reach (`network.hosts`); empty: no network. */
  networkHosts: STRINGS,
  destructive: BOOL,
  destructiveReasons: STRINGS,
  /** Its call, contract or rollback is not proven read-only, or sends data away. */
  unproven: BOOL,
  unknownReasons: STRINGS,
  exfiltration: STRINGS,
  ownGate: BOOL,
});

/** A gate being completed: who approved so far and the risk of what it gates; tagged with approvals per group. */
const GATE_SHAPE = record({
  kind: STRING,
  planId: STRING,
  /** The step of a step gate; "" at the plan gate. */
  step: STRING,
  submitter: STRING,
  approvers: STRINGS,
  approverGroups: STRINGS,
  approverCount: LONG,
  /** The plan's own quorum (already met when CompleteGate is asked). */
  quorum: LONG,
  /** What the gate approves changes or deletes things: the plan has a destructive step, or the step is destructive. */
  destructive: BOOL,
  destructiveSteps: LONG,
});

const VOTE_CONTEXT = record({ round: LONG, votesSoFar: LONG });

/** Each action: the resources it is about and its context. Every principal is a User. */
const ACTIONS: Record<PolicyAction, { resources: readonly string[]; context: CedarType }> = {
  SubmitPlan: { resources: ['Plan'], context: record({ channel: STRING }) },
  ApprovePlanGate: { resources: ['Plan'], context: VOTE_CONTEXT },
  ModifyPlanGate: {
    resources: ['Plan', 'Step'],
    context: record({ round: LONG, votesSoFar: LONG, skipSteps: STRINGS, modifiedSteps: STRINGS }),
  },
  ApproveStepGate: { resources: ['Step'], context: VOTE_CONTEXT },
  Reject: { resources: ['Plan', 'Step'], context: VOTE_CONTEXT },
  Ask: { resources: ['Plan', 'Step'], context: VOTE_CONTEXT },
  AnswerEscalation: {
    resources: ['Step'],
    context: record({ answer: STRING, failureClass: STRING }),
  },
  AnswerHumanStep: { resources: ['Step'], context: record({ answer: STRING }) },
  CompleteGate: { resources: ['Gate'], context: record({}) },
  AutoApprove: { resources: ['Plan', 'Step'], context: record({ gate: STRING }) },
  RunStep: { resources: ['Step'], context: record({ attempt: LONG, rollback: BOOL, sandboxed: BOOL }) },
  ReadExecution: { resources: ['Execution'], context: record({ view: STRING }) },
  ReadDraft: { resources: ['Draft'], context: record({}) },
  ReadAudit: { resources: ['AuditTrail'], context: record({ query: STRING }) },
};

/** The schema in Cedar's JSON form (what the validator and `isAuthorized` take). */
export const POLICY_SCHEMA = {
  '': {
    entityTypes: {
      Group: {},
      User: { memberOfTypes: ['Group'], shape: record({ name: STRING }) },
      Plan: { shape: PLAN_SHAPE },
      Step: { memberOfTypes: ['Plan'], shape: STEP_SHAPE, tags: STRING },
      Gate: { memberOfTypes: ['Plan'], shape: GATE_SHAPE, tags: LONG },
      Execution: {
        shape: record({ id: STRING, planId: STRING, planVersion: LONG, submitter: STRING }),
      },
      Draft: { shape: record({ id: STRING, submitter: STRING, status: STRING }) },
      AuditTrail: {},
    },
    actions: Object.fromEntries(
      Object.entries(ACTIONS).map(([name, { resources, context }]) => [
        name,
        { appliesTo: { principalTypes: ['User'], resourceTypes: [...resources], context } },
      ]),
    ),
  },
} as const;

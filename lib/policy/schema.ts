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

/**
 * Where what an entity covers goes, as the harness understands it (lib/plan/destinations.ts): the
 * same attributes on a Plan (every step and check), a Step (its call; at RunStep the call as
 * resolved) and a Gate (what it guards). A host rule that must hold against every spelling names
 * the canonical host and treats an unknown destination as possibly it:
 * `resource.hosts.contains("quarantine.example.net") || resource.destinationUnknown`.
 */
const REACH = {
  /** Programs the shell calls run, after wrappers and quoting (`k\\ubectl` is `kubectl`; `"$TOOL"` read from the step's env). */
  programs: STRINGS,
  /** Some program is known only at run time (`$(printf kube)ctl`, `$CMD`): it may be any program. */
  programUnknown: BOOL,
  /** Hosts reached, canonical (WHATWG URL host: lower case, IDNA, no trailing dot): URLs, network programs' operands, proxies, `/dev/tcp`. */
  hosts: STRINGS,
  /** It may reach a host not in `hosts`: a destination known only at run time, code in another language, a config-named remote. */
  destinationUnknown: BOOL,
  /** AWS services called by any route: the lambda tool, the `aws` CLI, SDK endpoint hosts, function URLs. */
  awsServices: STRINGS,
  /** Lambda functions invoked, by name or ARN (a function URL: its URL id). */
  lambdaFunctions: STRINGS,
  /** The worst risk class: "read-only" (proven), "destructive" or "unknown". */
  risk: STRING,
} satisfies Record<string, CedarType>;

/** A rung of the timeout ladder after the first: who may approve there, how many, how long it waits. */
const RUNG = record({ approvers: STRINGS, quorum: LONG, waitSeconds: LONG });

/** A Plan: what the harness computed about it (entities.ts `planEntity`). */
const PLAN_SHAPE = record({
  id: STRING,
  version: LONG,
  digest: STRING,
  /** Who submitted it ("" when nobody was recorded, e.g. a solo local run: `plangate run --solo`). */
  submitter: STRING,
  tools: STRINGS,
  targets: STRINGS,
  /** Hosts its steps declare their processes may reach (`network.hosts`), through the harness's proxy. */
  networkHosts: STRINGS,
  stepCount: LONG,
  steps: STRINGS,
  ...REACH,
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
  /** The plan's own approval block (it can only narrow what policy allows), with its whole ladder. */
  approval: record({
    approvers: STRINGS,
    quorum: LONG,
    forbiddenApprovers: STRINGS,
    /** How long each rung waits. */
    timeoutSeconds: LONG,
    allowAutoApprove: BOOL,
    /** The rungs after the first (`escalateTo`), in order. */
    escalateTo: { type: 'Set', element: RUNG },
    /** How many rungs: 1 + escalateTo's. */
    rungs: LONG,
    /** The longest a gate may wait for a decision: every rung's wait. */
    longestWaitSeconds: LONG,
    /** The smallest quorum of any rung: what a timeout can drop the gate to. */
    smallestQuorum: LONG,
    /** Everyone any rung lets approve; "" when a rung lets anyone approve. */
    everyApprover: STRINGS,
  }),
});

/** A Step: its call and risk marks; tagged with its args as strings (resolved ones at RunStep). */
const STEP_SHAPE = record({
  id: STRING,
  planId: STRING,
  submitter: STRING,
  tool: STRING,
  target: STRING,
  /** Hosts the step declares its processes may reach (`network.hosts`); empty: no network. */
  networkHosts: STRINGS,
  ...REACH,
  /** Why a program is known only at run time. */
  unknownPrograms: STRINGS,
  /** Why it may reach a host not in `hosts`. */
  unknownDestinations: STRINGS,
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
  /** The steps it guards: its step, or at the plan gate every step (and the postconditions' checks). */
  steps: STRINGS,
  /** The tools they call. */
  tools: STRINGS,
  ...REACH,
  /** The hosts they declare their processes may reach (`network.hosts`). */
  networkHosts: STRINGS,
  /** Some guarded call, contract or rollback is not proven read-only, or sends data away. */
  unproven: BOOL,
});

const VOTE_CONTEXT = record({ round: LONG, votesSoFar: LONG });

/** Each action: the resources it is about and its context. Every principal is a User. */
const ACTIONS: Record<PolicyAction, { resources: readonly string[]; context: CedarType }> = {
  SubmitPlan: { resources: ['Plan'], context: record({ channel: STRING, solo: BOOL }) },
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

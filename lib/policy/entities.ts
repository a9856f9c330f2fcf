/**
 * The entities policies judge, built from what the harness computed (never from what a plan's
 * author claims): a plan's facts (lib/plan/risks.ts for the risk marks; lib/plan/destinations.ts
 * for the programs, hosts and AWS services its calls, contracts and rollbacks reach), a step with
 * its call, a gate being completed with the facts of what it guards, an execution, a draft.
 * Every attribute is one of schema.ts's (a test holds them equal).
 */

import {
  type CallDestinations,
  callDestinations,
  contractDestinations,
  merge,
} from '../plan/destinations.ts';
import { canonicalJson } from '../plan/digest.ts';
import { distinctPrincipals, principalName } from '../plan/principal-names.ts';
import { callClassification, planRisks } from '../plan/risks.ts';
import type { Contract, Plan } from '../plan/schema.ts';
import { writeVariables } from '../plan/shell/index.ts';
import { createToolRegistry, stepInvocation, type ToolRegistry } from '../plan/tools.ts';
import type { PlanFacts, PlanIdentity, StepFacts } from '../runtime/payloads/index.ts';

/** An entity as a request carries it (Cedar's entity JSON, without its `__entity` wrapping). */
export interface PolicyEntity {
  readonly type: string;
  readonly id: string;
  readonly attrs: Readonly<Record<string, unknown>>;
  readonly parents?: readonly { readonly type: string; readonly id: string }[];
  readonly tags?: Readonly<Record<string, string | number>>;
}

/** The entity uid of a plan version: `<plan id>@v<version>`. */
export function planUid(plan: Pick<PlanIdentity, 'id' | 'version'>): { type: 'Plan'; id: string } {
  return { type: 'Plan', id: `${plan.id}@v${plan.version}` };
}

/** Who submitted a plan, as policies see it: "" when nobody was recorded. */
// Names in their canonical form (lib/plan/principal-names.ts), as the principal's is: a rule
// comparing `principal.name` with them compares one spelling.
const submitterName = (submitter: string | undefined): string =>
  submitter === undefined ? '' : principalName(submitter);

/**
 * What the harness computes about a plan for policy: each step's tool, target, the hosts its call
 * and contract reach and why its call is destructive; the plan's own approval block.
 */
export function planFacts(
  plan: Plan,
  { planned = false, tools = createToolRegistry() }: { planned?: boolean; tools?: ToolRegistry } = {},
): PlanFacts {
  const risks = planRisks(plan, tools);
  const steps: Record<string, StepFacts> = {};
  for (const step of plan.steps) {
    const call = stepInvocation(step);
    const reach = merge([
      call ? callDestinations(call.tool, call.args) : NO_CALL,
      contractDestinations(step.contract),
      step.rollback ? callDestinations(step.rollback.tool, step.rollback.args) : NO_CALL,
      contractDestinations(step.rollback?.contract),
    ]);
    steps[step.id] = {
      tool: call?.tool ?? '',
      target: step.target ?? '',
      destructive: [...(risks.steps[step.id]?.destructive ?? [])],
      unknown: [...(risks.steps[step.id]?.unknown ?? [])],
      exfiltration: [...(risks.steps[step.id]?.exfiltration ?? [])],
      ownGate: step.requiresApproval,
      networkHosts: [...(step.network?.hosts ?? [])],
      ...destinationFacts(reach),
    };
  }
  const checks = destinationFacts(merge(plan.postconditions.map((p) => contractDestinations(p.contract))));
  const all = Object.values(steps);
  const { approvers, quorum, forbiddenApprovers, timeoutSeconds, allowAutoApprove } = plan.approval;
  // Every tool the harness will call for this plan: steps', rollbacks' and the checks' own.
  const contracts = [
    ...plan.steps.flatMap((s) => [s.contract, s.rollback?.contract]),
    ...plan.postconditions.map((p) => p.contract),
  ];
  return {
    tools: sortedSet([
      ...all.map((s) => s.tool).filter((t) => t !== ''),
      ...plan.steps.flatMap((s) => (s.rollback ? [s.rollback.tool] : [])),
      ...contracts.flatMap((c) => (c ? [CONTRACT_TOOL[c.kind]] : [])).filter((t) => t !== ''),
    ]),
    targets: sortedSet(all.map((s) => s.target).filter((t) => t !== '')),
    hosts: sortedSet([...all.flatMap((s) => s.hosts), ...checks.hosts]),
    networkHosts: sortedSet(all.flatMap((s) => s.networkHosts)),
    stepCount: plan.steps.length,
    steps,
    postconditions: checks,
    approval: {
      approvers: distinctPrincipals(approvers),
      quorum,
      forbiddenApprovers: distinctPrincipals(forbiddenApprovers),
      timeoutSeconds,
      allowAutoApprove,
      escalateTo: (plan.approval.escalateTo ?? []).map((rung) => ({
        approvers: [...rung.approvers],
        quorum: rung.quorum,
      })),
    },
    planned,
  };
}

/**
 * A step's facts from the call it is about to make (the step runner, with its resolved args):
 * the hosts and destructive marks of those args, not of the plan's text.
 */
export function callFacts(
  call: {
    readonly tool: string;
    readonly target?: string;
    readonly args: Record<string, unknown>;
    /** The step's declared hosts: the plan's, never the call's. */
    readonly networkHosts?: readonly string[];
  },
  ownGate: boolean,
  tools: ToolRegistry = createToolRegistry(),
): StepFacts {
  const classified = callClassification(call.tool, call.args, tools);
  return {
    tool: call.tool,
    target: call.target ?? '',
    destructive: [...classified.destructive],
    unknown: [...classified.unknown],
    exfiltration: [...classified.exfiltration],
    ownGate,
    networkHosts: [...(call.networkHosts ?? [])],
    ...destinationFacts(callDestinations(call.tool, call.args)),
  };
}

const NO_CALL: CallDestinations = merge([]);

/** Destinations as the journal keeps them (mutable copies). */
function destinationFacts(reach: CallDestinations): PlanFacts['postconditions'] {
  return {
    programs: [...reach.programs],
    unknownPrograms: [...reach.unknownPrograms],
    hosts: [...reach.hosts],
    unknownDestinations: [...reach.unknownDestinations],
    awsServices: [...reach.awsServices],
    lambdaFunctions: [...reach.lambdaFunctions],
  };
}

/**
 * A call as it runs, as policy reads it: a shell command with its step's own `env` values written
 * in place of their variables (`find dir $OPT` with `OPT=-delete` reads `find dir -delete`:
 * lib/plan/shell/written-variables.ts); any other call as it is.
 */
export function callAsRun<Call extends { readonly tool: string; readonly args: Record<string, unknown> }>(
  call: Call,
): Call {
  const { command, env } = call.args;
  if (call.tool !== 'shell' || typeof command !== 'string' || env === null || typeof env !== 'object')
    return call;
  const values = Object.entries(env).map(([name, value]): [string, string] => [
    name,
    typeof value === 'string' ? value : JSON.stringify(value),
  ]);
  const written = writeVariables(command, new Map(values));
  return written === command ? call : { ...call, args: { ...call.args, command: written } };
}

/**
 * A step's facts from the call as it runs (values filled in): what {@link callAsRun} reads and
 * what the call does as written (its command may set a variable itself: `OPT=ls; $OPT …`), united.
 */
export function resolvedCallFacts(
  call: Parameters<typeof callFacts>[0],
  ownGate: boolean,
  tools: ToolRegistry = createToolRegistry(),
): StepFacts {
  const asWritten = callFacts(call, ownGate, tools);
  const asRun = callAsRun(call);
  if (asRun === call) return asWritten;
  const run = callFacts(asRun, ownGate, tools);
  const united = (a: readonly string[], b: readonly string[]) => [...new Set([...a, ...b])];
  return {
    ...run,
    hosts: sortedSet([...run.hosts, ...asWritten.hosts]),
    destructive: united(run.destructive, asWritten.destructive),
    unknown: united(run.unknown, asWritten.unknown),
    exfiltration: united(run.exfiltration, asWritten.exfiltration),
  };
}

/** The tool a contract of each kind calls (an assertion calls none). */
const CONTRACT_TOOL: Readonly<Record<Contract['kind'], string>> = {
  command: 'shell',
  http: 'http',
  lambda: 'lambda',
  assert: '',
};

/** Facts of a plan nothing was recorded about (launched before policy facts were journaled): nothing known. */
export function unknownPlanFacts(): PlanFacts {
  return {
    tools: [],
    targets: [],
    hosts: [],
    networkHosts: [],
    stepCount: 0,
    steps: {},
    postconditions: {
      ...destinationFacts(NO_CALL),
      unknownPrograms: [NOTHING],
      unknownDestinations: [NOTHING],
    },
    approval: {
      approvers: [],
      quorum: 1,
      forbiddenApprovers: [],
      timeoutSeconds: 0,
      allowAutoApprove: false,
      escalateTo: [],
    },
    planned: false,
  };
}

const NOTHING = 'nothing was recorded about the plan';

/** The risk class of a step's facts: destructive, else unknown (not proven read-only), else read-only. */
function riskOf(facts: Pick<StepFacts, 'destructive' | 'unknown'>): 'destructive' | 'unknown' | 'read-only' {
  return facts.destructive.length > 0 ? 'destructive' : facts.unknown.length > 0 ? 'unknown' : 'read-only';
}

/** The worst of several risk classes (none: read-only). */
function worstRisk(risks: readonly string[]): string {
  return risks.includes('destructive') ? 'destructive' : risks.includes('unknown') ? 'unknown' : 'read-only';
}

/** What several steps (and checks) reach, as the entities carry it. */
function reachAttrs(all: readonly PlanFacts['postconditions'][]) {
  const reach = merge(all);
  return {
    programs: [...reach.programs],
    programUnknown: reach.unknownPrograms.length > 0,
    hosts: [...reach.hosts],
    destinationUnknown: reach.unknownDestinations.length > 0,
    awsServices: [...reach.awsServices],
    lambdaFunctions: [...reach.lambdaFunctions],
  };
}

/**
 * The plan's approval block with its whole timeout ladder: every rung (the approvers, then each
 * of `escalateTo`), how long the gate may wait in all, the smallest quorum any rung needs and
 * everyone any rung lets approve.
 */
function approvalAttrs(approval: PlanFacts['approval']) {
  const rungs = [{ approvers: approval.approvers, quorum: approval.quorum }, ...approval.escalateTo];
  return {
    approvers: approval.approvers,
    quorum: approval.quorum,
    forbiddenApprovers: approval.forbiddenApprovers,
    timeoutSeconds: approval.timeoutSeconds,
    allowAutoApprove: approval.allowAutoApprove,
    escalateTo: approval.escalateTo.map((rung) => ({
      approvers: rung.approvers,
      quorum: rung.quorum,
      waitSeconds: approval.timeoutSeconds,
    })),
    rungs: rungs.length,
    longestWaitSeconds: approval.timeoutSeconds * rungs.length,
    smallestQuorum: Math.min(...rungs.map((rung) => rung.quorum)),
    // A rung with no approver list lets anyone approve: "" stands for anyone.
    everyApprover: sortedSet(rungs.flatMap((rung) => (rung.approvers.length > 0 ? rung.approvers : ['']))),
  };
}

export function planEntity(plan: PlanIdentity, facts: PlanFacts, submitter?: string): PolicyEntity {
  const steps = Object.entries(facts.steps);
  const destructive = steps.filter(([, s]) => s.destructive.length > 0);
  const unproven = steps.filter(([, s]) => s.unknown.length + s.exfiltration.length > 0);
  return {
    ...planUid(plan),
    attrs: {
      id: plan.id,
      version: plan.version,
      digest: plan.digest,
      submitter: submitterName(submitter),
      tools: facts.tools,
      targets: facts.targets,
      networkHosts: facts.networkHosts,
      stepCount: facts.stepCount,
      steps: steps.map(([id]) => id),
      ...reachAttrs([...steps.map(([, s]) => s), facts.postconditions]),
      risk: worstRisk(steps.map(([, s]) => riskOf(s))),
      destructiveSteps: destructive.length,
      destructiveStepIds: destructive.map(([id]) => id),
      ungatedDestructiveSteps: destructive.filter(([, s]) => !s.ownGate).length,
      unprovenSteps: unproven.length,
      ungatedUnprovenSteps: unproven.filter(([, s]) => !s.ownGate).length,
      gatedSteps: steps.filter(([, s]) => s.ownGate).map(([id]) => id),
      planned: facts.planned,
      approval: approvalAttrs(facts.approval),
    },
  };
}

/**
 * A step of a plan, tagged with its args as strings (a string as it is, anything else as
 * canonical JSON), so a policy can read `resource.getTag("url")`.
 */
export function stepEntity(
  plan: PlanIdentity,
  stepId: string,
  facts: StepFacts | undefined,
  { submitter, args }: { submitter?: string; args?: Readonly<Record<string, unknown>> } = {},
): PolicyEntity {
  const known: StepFacts = facts ?? {
    tool: '',
    target: '',
    hosts: [],
    destructive: [],
    unknown: ['nothing was recorded about the step'],
    exfiltration: [],
    ownGate: false,
    networkHosts: [],
    programs: [],
    unknownPrograms: ['nothing was recorded about the step'],
    unknownDestinations: ['nothing was recorded about the step'],
    awsServices: [],
    lambdaFunctions: [],
  };
  return {
    type: 'Step',
    id: `${plan.id}@v${plan.version}#${stepId}`,
    attrs: {
      id: stepId,
      planId: plan.id,
      submitter: submitterName(submitter),
      tool: known.tool,
      target: known.target,
      networkHosts: known.networkHosts,
      ...reachAttrs([known]),
      unknownPrograms: known.unknownPrograms,
      unknownDestinations: known.unknownDestinations,
      risk: riskOf(known),
      destructive: known.destructive.length > 0,
      destructiveReasons: known.destructive,
      unproven: known.unknown.length + known.exfiltration.length > 0,
      unknownReasons: known.unknown,
      exfiltration: known.exfiltration,
      ownGate: known.ownGate,
    },
    parents: [planUid(plan)],
    tags: Object.fromEntries(
      Object.entries(args ?? {}).map(([name, value]) => [
        name,
        typeof value === 'string' ? value : canonicalJson(value),
      ]),
    ),
  };
}

/** A gate whose plan's own quorum is met, as CompleteGate judges it: tagged with the approvals per group. */
export function gateEntity(
  gate: {
    readonly kind: string;
    readonly plan: PlanIdentity;
    readonly stepId?: string;
    readonly submitter?: string;
    readonly quorum: number;
  },
  facts: PlanFacts,
  approvals: readonly { readonly name: string; readonly groups: readonly string[] }[],
): PolicyEntity {
  const destructiveSteps = Object.values(facts.steps).filter((s) => s.destructive.length > 0).length;
  // One person counts once, however their approvals spell them: their groups together.
  const byPerson = new Map<string, Set<string>>();
  for (const approval of approvals) {
    const name = principalName(approval.name);
    byPerson.set(name, new Set([...(byPerson.get(name) ?? []), ...approval.groups]));
  }
  const perGroup = new Map<string, number>();
  for (const groups of byPerson.values())
    for (const group of groups) perGroup.set(group, (perGroup.get(group) ?? 0) + 1);
  const destructive =
    gate.stepId !== undefined
      ? (facts.steps[gate.stepId]?.destructive.length ?? 0) > 0
      : destructiveSteps > 0;
  // What the gate guards: its step, or at the plan gate every step and the postconditions' checks.
  const guarded = Object.entries(facts.steps).filter(
    ([id]) => gate.stepId === undefined || id === gate.stepId,
  );
  const checks = gate.stepId === undefined ? [facts.postconditions] : [];
  return {
    type: 'Gate',
    id: `${gate.plan.id}@v${gate.plan.version}#${gate.kind}${gate.stepId ? `:${gate.stepId}` : ''}`,
    attrs: {
      kind: gate.kind,
      planId: gate.plan.id,
      step: gate.stepId ?? '',
      submitter: submitterName(gate.submitter),
      approvers: [...byPerson.keys()],
      approverGroups: sortedSet([...byPerson.values()].flatMap((groups) => [...groups])),
      approverCount: byPerson.size,
      quorum: gate.quorum,
      destructive,
      destructiveSteps,
      steps: guarded.map(([id]) => id),
      tools: sortedSet(guarded.map(([, s]) => s.tool).filter((t) => t !== '')),
      ...reachAttrs([...guarded.map(([, s]) => s), ...checks]),
      networkHosts: sortedSet(guarded.flatMap(([, s]) => s.networkHosts)),
      risk: worstRisk(guarded.map(([, s]) => riskOf(s))),
      unproven: guarded.some(([, s]) => s.unknown.length + s.exfiltration.length > 0),
    },
    parents: [planUid(gate.plan)],
    tags: Object.fromEntries(perGroup),
  };
}

export function executionEntity(execution: {
  readonly id: string;
  readonly planId: string;
  readonly planVersion: number;
  readonly submitter?: string;
}): PolicyEntity {
  return {
    type: 'Execution',
    id: execution.id,
    attrs: {
      id: execution.id,
      planId: execution.planId,
      planVersion: execution.planVersion,
      submitter: submitterName(execution.submitter),
    },
  };
}

export function draftEntity(draft: {
  readonly draftId: string;
  readonly submittedBy: string;
  readonly status: string;
}): PolicyEntity {
  return {
    type: 'Draft',
    id: draft.draftId,
    attrs: { id: draft.draftId, submitter: draft.submittedBy, status: draft.status },
  };
}

/** The journal as one resource: who may query the audit trail. */
export const AUDIT_TRAIL: PolicyEntity = { type: 'AuditTrail', id: 'journal', attrs: {} };

const sortedSet = (values: readonly string[]): string[] => [...new Set(values)].sort();

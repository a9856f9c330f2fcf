/**
 * Requests about a plan as the platform would make them, for policy authors: `plangate policy
 * test` (a table of cases, each one request and the decision expected) and `plangate policy
 * explain` (every decision a person could meet with one plan). Built with the same entities as
 * the harness's own requests (entities.ts), so a case decides as the running platform would.
 */
import { answerRefusal, quorumShortfall, selfApprovalRefusal } from '../plan/approval-block.ts';
import { planDigest } from '../plan/digest.ts';
import { planAsRevised } from '../plan/revision.ts';
import type { Plan } from '../plan/schema.ts';
import { stepInvocation } from '../plan/tools.ts';
import type { PlanFacts, PolicyAction } from '../runtime/payloads/index.ts';
import {
  AUDIT_TRAIL,
  callAsRun,
  draftEntity,
  executionEntity,
  gateEntity,
  type PolicyEntity,
  planEntity,
  planFacts,
  resolvedCallFacts,
  stepEntity,
} from './entities.ts';
import type { PolicyPrincipal, PolicyRequest, PolicySet } from './policy-set.ts';

/** One decision to ask about a plan (or, for the reads, about its execution, a draft, the journal). */
export interface Scenario {
  readonly principal: PolicyPrincipal;
  readonly action: PolicyAction;
  /** Who submitted the plan. @default - nobody recorded */
  readonly submitter?: string;
  /** The step, for the actions about a step (its gate, its escalation, its run). */
  readonly step?: string;
  /** RunStep: the args as resolved at run time. @default the step's args as `resolved` or the revision has them */
  readonly args?: Readonly<Record<string, unknown>>;
  /**
   * The gate's revision: new arg values by step id (an approver's modifications). Every action
   * judges the plan as the revision runs it (lib/plan/revision.ts). @default none
   */
  readonly revision?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /**
   * Steps' args as they run, values filled in, by step id: what every action judges of those
   * steps, as the step runner judges RunStep, and a gate's completion again, at run time. @default none
   */
  readonly resolved?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** CompleteGate: the approvals so far (the principal's is the last). @default the principal's alone */
  readonly approvals?: readonly PolicyPrincipal[];
  /** Context fields to set over the defaults (e.g. `channel`, `answer`). */
  readonly context?: Readonly<Record<string, unknown>>;
}

/** Default context of each action (what the harness sends when nothing else is known). */
const DEFAULT_CONTEXT: Record<PolicyAction, Record<string, unknown>> = {
  SubmitPlan: { channel: 'api', solo: false },
  ApprovePlanGate: { round: 1, votesSoFar: 0 },
  ModifyPlanGate: { round: 1, votesSoFar: 0, skipSteps: [], modifiedSteps: [] },
  ApproveStepGate: { round: 1, votesSoFar: 0 },
  Reject: { round: 1, votesSoFar: 0 },
  Ask: { round: 1, votesSoFar: 0 },
  AnswerEscalation: { answer: 'retry', failureClass: 'unknown' },
  AnswerHumanStep: { answer: 'done' },
  CompleteGate: {},
  AutoApprove: { gate: 'plan' },
  RunStep: { attempt: 1, rollback: false, sandboxed: true },
  ReadExecution: { view: 'events' },
  ReadDraft: {},
  ReadAudit: { query: 'query' },
};

/** The request the platform would make for `scenario` about `plan`. */
export function scenarioRequest(
  plan: Plan,
  scenario: Scenario,
  policy: PolicySet,
  facts: PlanFacts = planFacts(plan),
): PolicyRequest {
  const identity = { id: plan.id, version: plan.version, digest: `sha256:${planDigest(plan)}` };
  const submitter = scenario.submitter;
  const stepOf = (id: string, field: string) => {
    const found = plan.steps.find((s) => s.id === id);
    if (!found) throw new Error(`${field}: step "${id}" is not a step of ${plan.id}`);
    return found;
  };
  for (const id of Object.keys(scenario.revision ?? {})) stepOf(id, 'revision');
  const judgedPlan = scenario.revision ? planAsRevised(plan, scenario.revision) : plan;
  const judged = withResolved(
    scenario.revision ? planFacts(judgedPlan, { planned: facts.planned }) : facts,
    scenario.resolved ?? {},
    stepOf,
  );
  const planResource = planEntity(identity, judged, submitter);
  const step = scenario.step === undefined ? undefined : stepOf(scenario.step, 'step');
  const stepResource = (): PolicyEntity => {
    if (!step) throw new Error(`${scenario.action} is about a step: name it (step)`);
    const call = stepInvocation(judgedPlan.steps.find((s) => s.id === step.id) ?? step);
    const resolvedArgs =
      scenario.resolved && Object.hasOwn(scenario.resolved, step.id) ? scenario.resolved[step.id] : undefined;
    const args = { ...(scenario.args ?? resolvedArgs ?? call?.args ?? {}) };
    if (scenario.action !== 'RunStep' || !call)
      return stepEntity(identity, step.id, judged.steps[step.id], { submitter, args });
    // RunStep judges the call as the step runner does: as it runs, its env values written in.
    const resolved = { tool: call.tool, target: step.target, args, networkHosts: step.network?.hosts ?? [] };
    return stepEntity(identity, step.id, resolvedCallFacts(resolved, step.requiresApproval), {
      submitter,
      args: callAsRun(resolved).args,
    });
  };
  const base = {
    principal: scenario.principal,
    action: scenario.action,
    context: { ...DEFAULT_CONTEXT[scenario.action], ...scenario.context },
  };
  switch (scenario.action) {
    case 'ApproveStepGate':
    case 'AnswerEscalation':
    case 'AnswerHumanStep':
    case 'RunStep':
      return { ...base, resource: stepResource(), entities: [planResource] };
    case 'ModifyPlanGate':
    case 'Reject':
    case 'Ask':
      return step
        ? { ...base, resource: stepResource(), entities: [planResource] }
        : { ...base, resource: planResource };
    case 'AutoApprove':
      return step
        ? {
            ...base,
            context: { ...base.context, gate: 'step' },
            resource: stepResource(),
            entities: [planResource],
          }
        : { ...base, resource: planResource };
    case 'CompleteGate': {
      const approvals = scenario.approvals ?? [scenario.principal];
      return {
        ...base,
        resource: gateEntity(
          {
            kind: step ? 'step' : 'plan',
            plan: identity,
            ...(step ? { stepId: step.id } : {}),
            submitter,
            quorum: plan.approval.quorum,
          },
          judged,
          approvals.map((a) => ({ name: a.name, groups: policy.groupsOf(a) })),
        ),
        entities: [planResource],
      };
    }
    case 'ReadExecution':
      return {
        ...base,
        resource: executionEntity({
          id: `execution-of-${plan.id}`,
          planId: plan.id,
          planVersion: plan.version,
          submitter,
        }),
      };
    case 'ReadDraft':
      return {
        ...base,
        resource: draftEntity({
          draftId: `draft-of-${plan.id}`,
          submittedBy: submitter ?? '',
          status: 'launched',
        }),
      };
    case 'ReadAudit':
      return { ...base, resource: AUDIT_TRAIL };
    default:
      return { ...base, resource: planResource };
  }
}

/** `facts` with each step of `resolved` judged on its args as they run (its env values written in). */
function withResolved(
  facts: PlanFacts,
  resolved: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  stepOf: (id: string, field: string) => Plan['steps'][number],
): PlanFacts {
  const entries = Object.entries(resolved);
  if (entries.length === 0) return facts;
  const steps = { ...facts.steps };
  for (const [id, args] of entries) {
    const step = stepOf(id, 'resolved');
    const call = stepInvocation(step);
    if (call)
      steps[id] = resolvedCallFacts(
        { tool: call.tool, target: step.target, args: { ...args } },
        step.requiresApproval,
      );
  }
  return {
    ...facts,
    steps,
    hosts: [...new Set([...facts.hosts, ...Object.values(steps).flatMap((s) => s.hosts)])].sort(),
  };
}

/** Every decision one person could meet with a plan: `plangate policy explain`. */
export function explainScenarios(plan: Plan, principal: PolicyPrincipal, submitter?: string): Scenario[] {
  const common = { principal, submitter };
  const planLevel: PolicyAction[] = [
    'SubmitPlan',
    'ApprovePlanGate',
    'ModifyPlanGate',
    'Reject',
    'Ask',
    'AutoApprove',
    'CompleteGate',
  ];
  const scenarios: Scenario[] = planLevel.map((action) => ({ ...common, action }));
  for (const step of plan.steps) {
    const stepActions: PolicyAction[] = [
      ...(step.requiresApproval ? (['ApproveStepGate', 'AutoApprove', 'CompleteGate'] as const) : []),
      'AnswerEscalation',
      'RunStep',
    ];
    for (const action of stepActions) scenarios.push({ ...common, action, step: step.id });
  }
  scenarios.push(
    { ...common, action: 'ReadExecution' },
    { ...common, action: 'ReadDraft' },
    { ...common, action: 'ReadAudit' },
  );
  return scenarios;
}

/** The answers a gate takes from a person, which the plan's block judges before policy is asked. */
const ANSWERS: ReadonlySet<PolicyAction> = new Set([
  'ApprovePlanGate',
  'ModifyPlanGate',
  'ApproveStepGate',
  'Reject',
  'Ask',
  'AnswerEscalation',
  'AnswerHumanStep',
  'AutoApprove',
]);
/** The answers that approve: never the submitter's. */
const APPROVALS: ReadonlySet<PolicyAction> = new Set([
  'ApprovePlanGate',
  'ModifyPlanGate',
  'ApproveStepGate',
  'AutoApprove',
]);

/**
 * Why the plan's own approval block refuses `scenario` before any policy is asked, as the gate
 * and `plangate run --approve` refuse it (lib/plan/approval-block.ts), or undefined. The block's
 * first group: a gate escalated by the timeout ladder asks the next group's approvers instead.
 */
export function approvalBlockRefusal(plan: Plan, scenario: Scenario): string | undefined {
  const { approval } = plan;
  const name = scenario.principal.name;
  if (scenario.action === 'AutoApprove' && !approval.allowAutoApprove)
    return "the plan's approval policy (allowAutoApprove: false) requires a person";
  if (scenario.action === 'CompleteGate')
    return quorumShortfall(
      approval.quorum,
      (scenario.approvals ?? [scenario.principal]).map((a) => a.name),
    );
  if (!ANSWERS.has(scenario.action)) return undefined;
  return (
    answerRefusal(approval, name) ??
    (APPROVALS.has(scenario.action) ? selfApprovalRefusal(scenario.submitter, name) : undefined)
  );
}

/**
 * What the platform's policy is asked about an answer to a gate (lib/policy): whether this person
 * may give this answer (ApprovePlanGate, ModifyPlanGate, ApproveStepGate, Reject, Ask,
 * AnswerEscalation, AnswerHumanStep), and, once the plan's own quorum is met, whether the gate is
 * complete (CompleteGate: the distinct approvers so far, their groups, what the gate approves).
 * The plan's facts are the ones its PLAN_CREATED recorded, so every channel judges the same plan.
 */
import { gateEntity, planEntity, stepEntity } from '../../policy/entities.ts';
import type { PolicyPrincipal, PolicyRequest, PolicySet } from '../../policy/policy-set.ts';
import type { GateDecision, PlanFacts, PolicyAction } from '../payloads/index.ts';
import type { GateItem } from './gate-item.ts';

/** The action an answer asks for: what kind of gate, and what was decided. */
export function answerAction(kind: GateItem['kind'], decision: GateDecision['decision']): PolicyAction {
  switch (decision) {
    case 'APPROVE':
      return kind === 'step' ? 'ApproveStepGate' : 'ApprovePlanGate';
    case 'APPROVE_WITH_MODIFICATIONS':
      return 'ModifyPlanGate';
    case 'REJECT':
      return 'Reject';
    case 'ASK_FOR_CLARIFICATION':
      return 'Ask';
    case 'DONE':
    case 'FAILED':
      return 'AnswerHumanStep';
    default:
      return 'AnswerEscalation';
  }
}

/** The gate's plan (a Plan entity) and, at a step's gate, the step (the resource of step answers). */
function gateResources(item: GateItem, facts: PlanFacts) {
  const identity = { id: item.planId, version: item.planVersion, digest: item.planDigest };
  const plan = planEntity(identity, facts, item.submittedBy);
  if (item.kind === 'plan' || item.stepId === undefined) return { resource: plan, entities: [] };
  return {
    resource: stepEntity(identity, item.stepId, facts.steps[item.stepId], { submitter: item.submittedBy }),
    entities: [plan],
  };
}

/** May `voter` give `decision` at this gate? */
export function answerRequest(
  item: GateItem,
  decision: GateDecision,
  voter: PolicyPrincipal,
  facts: PlanFacts,
): PolicyRequest {
  const action = answerAction(item.kind, decision.decision);
  const vote = { round: item.round, votesSoFar: item.votes.length };
  const context =
    action === 'AnswerEscalation'
      ? { answer: decision.decision.toLowerCase(), failureClass: item.failure?.failureClass ?? '' }
      : action === 'AnswerHumanStep'
        ? { answer: decision.decision.toLowerCase() }
        : decision.decision === 'APPROVE_WITH_MODIFICATIONS'
          ? {
              ...vote,
              skipSteps: [...decision.skipSteps],
              modifiedSteps: Object.keys(decision.argOverrides),
            }
          : vote;
  return { principal: voter, action, context, ...gateResources(item, facts) };
}

/**
 * Is the gate complete with these approvals (its plan's own quorum met)? Asked as the voter
 * whose approval would complete it; each approval counts with the groups its voter had.
 */
export function completionRequest(
  item: GateItem,
  votes: readonly { readonly by: string; readonly groups?: readonly string[] }[],
  voter: PolicyPrincipal,
  facts: PlanFacts,
  policy: PolicySet,
): PolicyRequest {
  const identity = { id: item.planId, version: item.planVersion, digest: item.planDigest };
  return {
    principal: voter,
    action: 'CompleteGate',
    resource: gateEntity(
      {
        kind: item.kind,
        plan: identity,
        ...(item.kind === 'step' && item.stepId !== undefined ? { stepId: item.stepId } : {}),
        submitter: item.submittedBy,
        quorum: item.policy.quorum,
      },
      facts,
      votes.map((v) => ({ name: v.by, groups: policy.groupsOf({ name: v.by, groups: v.groups ?? [] }) })),
    ),
    entities: [planEntity(identity, facts, item.submittedBy)],
  };
}

/**
 * A gate as the plan it approves shows it whole. The view compiled into the definition is cut to
 * fit Step Functions' limits (a step listed without its call is shown by no channel); the plan
 * stored at submission (lib/runtime/journal/stored-plans.ts, checked against the gate's digest)
 * gives every step's view whatever its size. The approval page shows this, page by page
 * (view-pages.ts), and an approval is taken from it only once every page was shown.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Plan } from '../../plan/schema.ts';
import { storedPlan } from '../journal/stored-plans.ts';
import type { StepView } from '../payloads/index.ts';
import { approvalView } from './approval-view.ts';
import type { GateView } from './gate-item.ts';

/**
 * `gate` with its whole view built from `plan` (which the caller read by the gate's digest, so
 * checked): a plan gate's every step, a step gate's step. What the gate learnt where it opened
 * (who runs its agent steps) is kept. A gate of another kind, or one whose steps are not the
 * plan's, is returned as stored.
 */
export function wholeGate(gate: GateView, plan: Plan): GateView {
  const whole = approvalView(plan);
  const ids = plan.steps.map((step) => step.id);
  const byId = new Map(whole.steps.map((step) => [step.id, step]));
  if (gate.kind === 'plan' && gate.summary?.view) {
    // The digest binds the plan to the gate already; a summary of other steps is not made whole.
    const listed = gate.summary.stepIds;
    if (listed ? listed.join('\n') !== ids.join('\n') : gate.summary.steps !== ids.length) return gate;
    const stored = new Map(gate.summary.view.steps.map((step) => [step.id, step]));
    return {
      ...gate,
      summary: {
        ...gate.summary,
        view: { ...whole, steps: whole.steps.map((step) => withHostFacts(step, stored.get(step.id))) },
      },
    };
  }
  if (gate.kind === 'step' && gate.stepGate) {
    const step = byId.get(gate.stepGate.step.id);
    if (!step) return gate;
    return { ...gate, stepGate: { ...gate.stepGate, step: withHostFacts(step, gate.stepGate.step) } };
  }
  return gate;
}

/** The plan's view of a step, with what the host added to the stored one (its agent's runner). */
function withHostFacts(step: StepView, stored: StepView | undefined): StepView {
  return stored?.agent && step.agent ? { ...step, agent: stored.agent } : step;
}

/**
 * The gate made whole from the plan stored under its digest: undefined when none is stored (a plan
 * deployed as code); StoredPlanMismatchError when what is stored is not that plan (never shown).
 */
export async function wholeGateOf(
  gate: GateView,
  deps: { readonly dynamo: DynamoDBDocumentClient; readonly plansTable: string },
): Promise<GateView | undefined> {
  if (gate.kind !== 'plan' && gate.kind !== 'step') return undefined;
  const plan = await storedPlan(deps.dynamo, deps.plansTable, gate.planDigest);
  return plan ? wholeGate(gate, plan) : undefined;
}

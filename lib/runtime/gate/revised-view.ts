/**
 * What a revision (an approval with modifications) runs, as its approvers must see it before
 * they approve it: each step whose args it overrides shows the new call beside the call it
 * replaces, with the risk marks recomputed from the new args by the analysis the compiler used
 * (lib/plan/risks.ts); each step it skips says so. The content changed, so the marks cannot be
 * the compiler's: a modification that turns `mkdir out` into `rm -rf out` is marked destructive,
 * and refused where the step has no gate of its own.
 */
import { callRisks } from '../../plan/risks.ts';
import { createToolRegistry } from '../../plan/tools.ts';
import type { ApprovalView, GateRevision, StepGateView, StepView } from '../payloads/index.ts';
import { argsWithOverrides, callWithOverrides } from './modifications.ts';

const tools = createToolRegistry();

/** `step` as `revision` runs it. */
export function revisedStep(step: StepView, revision: GateRevision): StepView {
  const overrides = revision.argOverrides[step.id];
  const skipped = revision.skipSteps.includes(step.id);
  if (!overrides && !skipped) return step;
  const mark = { revision: revision.number, by: revision.by };
  if (!overrides) return { ...step, revised: { ...mark, skipped: true } };
  return {
    ...step,
    call: callWithOverrides(step, overrides),
    risks: {
      ...step.risks,
      destructive: [...callRisks(step.tool, argsWithOverrides(step, overrides), tools)],
    },
    revised: {
      ...mark,
      replaces: step.call,
      ...(skipped ? { skipped: true as const } : {}),
    },
  };
}

/** The plan gate's view of what `revision` runs. */
export function revisedView(view: ApprovalView, revision: GateRevision): ApprovalView {
  return { ...view, steps: view.steps.map((step) => revisedStep(step, revision)) };
}

/** The step gate's view of what `revision` runs. */
export function revisedStepGate(stepGate: StepGateView, revision: GateRevision): StepGateView {
  return { ...stepGate, step: revisedStep(stepGate.step, revision) };
}

/**
 * Why `step` may not be called with `args` (a revision's: its own with the overrides on top) at a
 * plan gate: a destructive call, as the shell analysis sees through wrappers, quoting and nested
 * shells (lib/plan/risks.ts), needs the step's own gate (`requiresApproval`), in a revision as in
 * a plan, since only a new version of the plan can add one. Undefined when it may.
 */
export function revisionRiskProblem(
  step: StepView,
  args: Readonly<Record<string, unknown>>,
): string | undefined {
  if (step.risks.ownGate) return undefined;
  const reasons = callRisks(step.tool, args, tools);
  if (reasons.length === 0) return undefined;
  return `${reasons.join('; ')}: a destructive command needs the step's own gate (requiresApproval), which "${step.id}" does not have; submit a new version of the plan instead`;
}

/**
 * The gate that let a step run, asked again as it runs: its own step gate, else the plan gate.
 * When the call as it runs does more than that gate approved (a value filled in at run time made
 * it destructive), the gate's completion (CompleteGate) is judged again on the resolved call,
 * with the approvals its latest GATE_APPROVED names and the groups their requests proved, so a
 * rule such as "destructive content needs two sre" applies to what runs, not to what was written.
 */
import { gateEntity, planEntity } from '../../policy/entities.ts';
import type { PolicyRequest, PolicySet } from '../../policy/policy-set.ts';
import type { HarnessDeps } from '../deps.ts';
import { readEvents } from '../journal/journal.ts';
import { EVENT_DETAILS, type JournalRecord, type PlanFacts, type PlanIdentity } from '../payloads/index.ts';

/**
 * CompleteGate for the gate covering `run.stepId`, with `facts` (the step's own as it runs), asked
 * as its last approver; undefined when that gate was never approved (nothing to judge again).
 */
export async function coveringGateCompletion(
  deps: HarnessDeps,
  run: { readonly executionId: string; readonly plan: PlanIdentity; readonly stepId: string },
  facts: PlanFacts,
  submitter: string | undefined,
  policy: PolicySet,
): Promise<PolicyRequest | undefined> {
  const ownGate = facts.steps[run.stepId]?.ownGate ?? false;
  const events = await readEvents(deps.dynamo, deps.tables.events, run.executionId);
  const approved = latestApproval(events, ownGate ? run.stepId : undefined);
  const approvers = approved?.approvers?.length
    ? approved.approvers
    : approved?.approver !== undefined
      ? [approved.approver]
      : [];
  const last = approvers.at(-1);
  if (!approved || last === undefined) return undefined;
  const proved = (name: string) => approved.approver_groups?.find((g) => g.approver === name)?.groups ?? [];
  return {
    principal: { name: last, groups: proved(last) },
    action: 'CompleteGate',
    resource: gateEntity(
      {
        kind: ownGate ? 'step' : 'plan',
        plan: run.plan,
        ...(ownGate ? { stepId: run.stepId } : {}),
        submitter,
        quorum: facts.approval.quorum,
      },
      facts,
      approvers.map((name) => ({ name, groups: policy.groupsOf({ name, groups: proved(name) }) })),
    ),
    entities: [planEntity(run.plan, facts, submitter)],
  };
}

/** The details of the last GATE_APPROVED of the step's own gate (`stepId`) or of the plan gate. */
function latestApproval(events: readonly JournalRecord[], stepId: string | undefined) {
  for (const event of [...events].reverse()) {
    if (event.event !== 'GATE_APPROVED') continue;
    const details = EVENT_DETAILS.GATE_APPROVED.safeParse(event.details);
    if (!details.success) continue;
    if (
      stepId === undefined
        ? details.data.gate === 'plan'
        : details.data.gate === 'step' && event.task_id === stepId
    )
      return details.data;
  }
  return undefined;
}

/**
 * A permission failure is one of two things: a credential the call lacks (fix it out of band,
 * then retry), or the platform's policy refusing the call (lib/runtime/steps/run-policy.ts: its
 * POLICY_DECISION, then the failure). A retry makes the same call, which policy denies again, so
 * a denial is explained as what it is: the policies that decided, and what would allow the call.
 */
import type { JournalRecord, PolicyDecisionDetails, PolicyDenial } from '../payloads/index.ts';

/**
 * The policy denial of `stepId`'s latest attempt: its RunStep POLICY_DECISION (deny) journaled
 * after its latest TASK_STARTED; undefined when the attempt was not denied by policy.
 */
export function policyDenialOf(
  events: readonly JournalRecord[],
  stepId: string,
  policyDir: string | undefined,
): PolicyDenial | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as JournalRecord;
    if (event.task_id !== stepId) continue;
    if (event.event === 'TASK_STARTED') return undefined;
    if (event.event !== 'POLICY_DECISION') continue;
    const details = event.details as Partial<PolicyDecisionDetails>;
    if (details.action === 'RunStep' && details.decision === 'deny')
      return policyDenial(details as PolicyDecisionDetails, policyDir);
  }
  return undefined;
}

/** A RunStep denial as a person reads it: which policies, what they say, what would allow it. */
export function policyDenial(details: PolicyDecisionDetails, policyDir: string | undefined): PolicyDenial {
  const said = new Map((details.reasons ?? []).map((r) => [r.policy, r.reason]));
  const named = details.policies.map((id) => (said.get(id) ? `${id}: ${said.get(id)}` : id));
  const where = policyDir ? ` (${policyDir})` : '';
  const reason =
    named.length > 0
      ? `the platform's policy denied this call (${named.join('; ')})`
      : "the platform's policy denied this call (no policy permits it)";
  const allow =
    named.length > 0
      ? `to allow it, the owners of the platform's policy${where} change or lift ${details.policies.join(', ')}, or the plan changes the call so that ${details.policies.length === 1 ? 'it no longer applies' : 'they no longer apply'}`
      : `to allow it, the owners of the platform's policy${where} add a policy that permits it`;
  return {
    policies: [...details.policies],
    reason,
    advice: `${reason}. No credential is missing, and a retry makes the same call, which is denied again: ${allow}. Answer skip or abort.`,
  };
}

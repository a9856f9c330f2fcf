/**
 * What a plan's own approval block says of one person's answer (named in their canonical form), underneath any platform policy:
 * named approvers only (when it names any), none of `forbiddenApprovers`, never the plan's
 * submitter approving, and a quorum of distinct approvers. The gate refuses an answer for these
 * reasons (lib/runtime/gate/approvals.ts) and `plangate policy explain` shows them, in the same
 * words, so the two never disagree.
 */
import { distinctPrincipals, namesPrincipal, principalName, samePrincipal } from './principal-names.ts';
import type { Plan } from './schema.ts';

type Block = Pick<Plan['approval'], 'approvers' | 'forbiddenApprovers'>;

/** Why the block refuses `by`'s answer at a gate (any answer), or undefined when it does not. */
export function answerRefusal(block: Block, given: string): string | undefined {
  const by = principalName(given);
  if (namesPrincipal(block.forbiddenApprovers, by)) return `${by} may not answer this gate`;
  if (block.approvers.length > 0 && !namesPrincipal(block.approvers, by))
    return `${by} is not one of this plan's approvers`;
  return undefined;
}

/** Why `by` may not approve (or modify) a plan `submitter` submitted, or undefined. */
export function selfApprovalRefusal(submitter: string | undefined, by: string): string | undefined {
  return submitter !== undefined && submitter !== '' && samePrincipal(submitter, by)
    ? `${principalName(by)} submitted this plan and may not approve it`
    : undefined;
}

/** Why these approvals do not complete a gate of quorum `quorum`, or undefined when they do. */
export function quorumShortfall(quorum: number, approvers: readonly string[]): string | undefined {
  const distinct = distinctPrincipals(approvers).length;
  return distinct < quorum
    ? `the plan's quorum is ${quorum} distinct approvals and ${distinct} ${distinct === 1 ? 'is' : 'are'} given: the gate waits`
    : undefined;
}

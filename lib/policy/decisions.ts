/**
 * A policy decision as the rest of plangate uses it: the refusal thrown when policy denies (a
 * permission failure: HTTP 403, seed 000's Permission class at run time), and the details of the
 * POLICY_DECISION event that records a decision which changed an outcome.
 */
import type { PolicyDecisionDetails } from '../runtime/payloads/index.ts';
import { HarnessError } from '../runtime/shared/errors.ts';
import type { PolicyEntity } from './entities.ts';
import { type PolicyDecision, type PolicyRequest, REQUEST_ERROR } from './policy-set.ts';

/** The error name of a policy refusal; the classifier files it under `permission`. */
export const POLICY_DENIED = 'PolicyDenied';

/** Policy denied a request: who, what, and the policies that decided. */
export class PolicyDeniedError extends HarnessError {
  constructor(
    readonly request: PolicyRequest,
    readonly decided: PolicyDecision,
    /** Why an override given with the request did not release it. */
    note?: string,
  ) {
    super(POLICY_DENIED, `${denialMessage(request, decided)}${note ? `; ${note}` : ''}`, { httpStatus: 403 });
  }

  /** The ids of the policies that decided (empty: no policy permits it). */
  get policies(): readonly string[] {
    return this.decided.determiningPolicies;
  }
}

/**
 * One line: `policy denies alice SubmitPlan on Plan "release@v3" (forbidden by reserved-tools)`,
 * or `(no policy permits it)`.
 */
export function denialMessage(request: PolicyRequest, decided: PolicyDecision): string {
  const said = (decided.reasons ?? []).flatMap((r) => (r.reason !== undefined ? [r.reason] : []));
  const why =
    decided.determiningPolicies.length > 0
      ? `forbidden by ${decided.determiningPolicies.join(', ')}${said.length > 0 ? `: ${said.join('; ')}` : ''}`
      : decided.errors[0]?.startsWith(REQUEST_ERROR)
        ? `the request does not fit the policy schema: ${decided.errors[0].slice(REQUEST_ERROR.length)}`
        : 'no policy permits it';
  const soft = decided.overridable
    ? `; soft-mandatory: a member of ${decided.overridable.by.join(', ')} may override it with a reason`
    : '';
  return `policy denies ${request.principal.name || '(nobody)'} ${request.action} on ${entityName(request.resource)} (${why}${soft})`;
}

/** `Step "deploy@v2#push"`: how events and messages name an entity. */
export function entityName(entity: Pick<PolicyEntity, 'type' | 'id'>): string {
  return `${entity.type} "${entity.id}"`;
}

/**
 * POLICY_DECISION's details: the action, who, about what, the decision, the policies and what they
 * say, the decision in a sentence, what it did and, for a step, the call it judged (`call`:
 * already free of secret values; long strings are shortened here).
 */
export function decisionDetails(
  request: PolicyRequest,
  decided: PolicyDecision,
  outcome: string,
  call?: { readonly tool: string; readonly args: Readonly<Record<string, unknown>> },
): PolicyDecisionDetails {
  return {
    action: request.action,
    principal: request.principal.name,
    resource: entityName(request.resource),
    decision: decided.decision,
    policies: [...decided.determiningPolicies],
    outcome,
    ...(decided.errors.length > 0 ? { errors: decided.errors.map((e) => e.slice(0, 300)) } : {}),
    reason: decided.decision === 'deny' ? denialMessage(request, decided) : allowMessage(request, decided),
    ...(decided.reasons?.length ? { reasons: decided.reasons.map((r) => ({ ...r })) } : {}),
    ...(call
      ? { call: { tool: call.tool, args: shortenedStrings(call.args) as Record<string, unknown> } }
      : {}),
    ...(decided.level ? { level: decided.level } : {}),
    ...(decided.overridable
      ? { overridable: { policies: [...decided.overridable.policies], by: [...decided.overridable.by] } }
      : {}),
    ...(decided.advisory?.length ? { advisory: [...decided.advisory] } : {}),
    ...(decided.overridden
      ? { overridden: { ...decided.overridden, policies: [...decided.overridden.policies] } }
      : {}),
  };
}

/** `policy permits alice CompleteGate on Gate "…" (permitted by baseline-permit)`. */
function allowMessage(request: PolicyRequest, decided: PolicyDecision): string {
  const by = decided.determiningPolicies.length > 0 ? decided.determiningPolicies.join(', ') : 'no policy';
  const overridden = decided.overridden
    ? `; ${decided.overridden.policies.join(', ')} overridden by ${decided.overridden.by}: ${decided.overridden.reason}`
    : '';
  const advisory = decided.advisory?.length ? `; advisory, not enforced: ${decided.advisory.join(', ')}` : '';
  return `policy permits ${request.principal.name || '(nobody)'} ${request.action} on ${entityName(request.resource)} (permitted by ${by}${overridden}${advisory})`;
}

/** Longest string of a recorded call: events stay small; the plan holds the rest. */
const CALL_TEXT_LIMIT = 4096;

function shortenedStrings(value: unknown): unknown {
  if (typeof value === 'string')
    return value.length > CALL_TEXT_LIMIT ? `${value.slice(0, CALL_TEXT_LIMIT - 1)}…` : value;
  if (Array.isArray(value)) return value.map(shortenedStrings);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, shortenedStrings(item)]));
  return value;
}

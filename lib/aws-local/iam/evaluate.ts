/**
 * IAM's policy evaluation for a request within one account: the identity-based policies of the
 * caller's role and the resource's own policy. An explicit Deny in either wins; else an Allow in
 * either allows; else the request is denied implicitly. A statement applies when its action,
 * resource, principal (resource policies) and conditions match. A condition this simulator cannot
 * evaluate in a statement that otherwise applies makes the decision a denial that names it.
 * A role session assumed with a session policy gets at most what that policy allows too: the
 * decision above must allow and so must the session policy (its explicit Deny wins as well).
 */
import { type ConditionContext, conditionsHold, UnknownConditionOperatorError } from './conditions.ts';
import type { NamedPolicy, Principal, Statement } from './policy-document.ts';
import { matchesWildcard } from './wildcard.ts';

export interface AuthorizationRequest {
  /** The role's ARN (`aws:PrincipalArn`), e.g. `arn:aws:iam::123456789012:role/StepRunner`. */
  readonly principalArn: string;
  /** e.g. `dynamodb:PutItem` */
  readonly action: string;
  /** The resource's ARN. */
  readonly resource: string;
  /** Further condition keys; `aws:PrincipalArn` and `aws:PrincipalAccount` are added. */
  readonly context?: ConditionContext;
  /** The policy the caller's role session was assumed with (sts:AssumeRole's `Policy`), if any. */
  readonly sessionPolicy?: NamedPolicy;
}

export interface PolicySet {
  readonly identity: readonly NamedPolicy[];
  readonly resource?: NamedPolicy;
}

export type Decision =
  | { readonly effect: 'allow'; readonly by: string }
  | { readonly effect: 'deny'; readonly reason: 'explicit'; readonly by: string }
  | { readonly effect: 'deny'; readonly reason: 'implicit' }
  | { readonly effect: 'deny'; readonly reason: 'session'; readonly by: string }
  | { readonly effect: 'deny'; readonly reason: 'unevaluable'; readonly error: string };

const ACCOUNT_OF_ARN = /^arn:[^:]+:[^:]*:[^:]*:(\d{12}):/;

function evaluateStatements(request: AuthorizationRequest, policies: PolicySet): Decision {
  const account = ACCOUNT_OF_ARN.exec(request.principalArn)?.[1] ?? '';
  const context: ConditionContext = {
    ...request.context,
    'aws:PrincipalArn': request.principalArn,
    'aws:PrincipalAccount': account,
  };
  const applying: { effect: Statement['Effect']; by: string }[] = [];
  const candidates = [
    ...policies.identity.map((policy) => ({ policy, resourcePolicy: false })),
    ...(policies.resource ? [{ policy: policies.resource, resourcePolicy: true }] : []),
  ];
  for (const { policy, resourcePolicy } of candidates) {
    policy.document.Statement.forEach((statement, index) => {
      if (!covers(statement, request)) return;
      if (resourcePolicy && !namesPrincipal(statement.Principal, request.principalArn, account)) return;
      const by = `${policy.name} statement ${statement.Sid ?? `#${index}`}`;
      try {
        if (conditionsHold(statement.Condition, context)) applying.push({ effect: statement.Effect, by });
      } catch (error) {
        if (!(error instanceof UnknownConditionOperatorError)) throw error;
        throw new UnevaluableStatement(`${by}: ${error.message}`);
      }
    });
  }
  const deny = applying.find((s) => s.effect === 'Deny');
  if (deny) return { effect: 'deny', reason: 'explicit', by: deny.by };
  const allow = applying.find((s) => s.effect === 'Allow');
  if (allow) return { effect: 'allow', by: allow.by };
  return { effect: 'deny', reason: 'implicit' };
}

/** The decision on `request`; a statement that cannot be evaluated makes it a denial naming it. */
export function evaluate(request: AuthorizationRequest, policies: PolicySet): Decision {
  try {
    const decision = evaluateStatements(request, policies);
    if (decision.effect === 'deny' || !request.sessionPolicy) return decision;
    const session = evaluateStatements(request, { identity: [request.sessionPolicy] });
    if (session.effect === 'allow') return { effect: 'allow', by: `${decision.by}, within ${session.by}` };
    return session.reason === 'implicit'
      ? { effect: 'deny', reason: 'session', by: request.sessionPolicy.name }
      : session;
  } catch (error) {
    if (error instanceof UnevaluableStatement)
      return { effect: 'deny', reason: 'unevaluable', error: error.message };
    throw error;
  }
}

class UnevaluableStatement extends Error {}

function covers(statement: Statement, request: AuthorizationRequest): boolean {
  const action = (patterns: readonly string[]) =>
    patterns.some((p) => matchesWildcard(p, request.action, { ignoreCase: true }));
  const resource = (patterns: readonly string[]) =>
    patterns.some((p) => matchesWildcard(p, request.resource));
  const actionMatches = statement.Action ? action(statement.Action) : !action(statement.NotAction ?? []);
  const resourceMatches = statement.Resource
    ? resource(statement.Resource)
    : !resource(statement.NotResource ?? []);
  return actionMatches && resourceMatches;
}

/**
 * Whether a resource policy's Principal names the caller: `*`, its role's ARN, or its account
 * (the account id or its root ARN). Service and federated principals never name a role.
 */
function namesPrincipal(principal: Principal | undefined, principalArn: string, account: string): boolean {
  if (principal === undefined) return false;
  if (principal === '*') return true;
  return (principal.AWS ?? []).some(
    (p) => p === '*' || p === principalArn || p === account || p === `arn:aws:iam::${account}:root`,
  );
}

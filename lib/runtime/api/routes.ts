/**
 * Every route of plangate's HTTP API, as plain data: the CDK HttpApi (lib/cdk/plan-http-api.ts),
 * the local API edge (lib/aws-local/api-gateway) and the OpenAPI document (lib/launch/openapi.ts) are
 * all built from this one list, so the three cannot drift apart.
 */

/**
 * Who may call a route. `iam`: SigV4-signed (API Gateway's AWS_IAM authorizer; the handler reads
 * the signer from the request context). `jwt`: a JWT the API's authorizer verified (its claims name
 * the caller). `open`: no authorizer; the handler itself checks what it needs (e.g. a signed link id).
 */
export type RouteAuth = 'iam' | 'jwt' | 'open';

export interface ApiRoute {
  readonly method: 'GET' | 'POST';
  /** API Gateway route path, `{name}` for a path parameter. */
  readonly path: string;
  /** The Lambda that serves it: lambdas/plans-api.ts or lambdas/approvals-api.ts. */
  readonly handler: 'plans' | 'approvals';
  readonly auth: RouteAuth;
  readonly summary: string;
}

export const API_ROUTES: readonly ApiRoute[] = [
  {
    method: 'POST',
    path: '/plans',
    handler: 'plans',
    auth: 'iam',
    summary: 'Validate, deploy and start a plan; or, given {goal}, have the planner draft one (202)',
  },
  {
    method: 'GET',
    path: '/drafts/{draftId}',
    handler: 'plans',
    auth: 'iam',
    summary: 'A plan being drafted from a goal: its rounds, and the execution it launched or why not',
  },
  {
    method: 'GET',
    path: '/plans/{executionId}',
    handler: 'plans',
    auth: 'iam',
    summary: "An execution's status and step progress",
  },
  {
    method: 'GET',
    path: '/executions/{executionId}/events',
    handler: 'plans',
    auth: 'iam',
    summary: "An execution's journal events, in order",
  },
  {
    method: 'GET',
    path: '/executions/{executionId}/progress',
    handler: 'plans',
    auth: 'iam',
    summary: 'The "[Task N/M] ✓/✗" progress lines as Server-Sent Events',
  },
  {
    method: 'GET',
    path: '/openapi.json',
    handler: 'plans',
    auth: 'open',
    summary: 'This OpenAPI 3.1 document',
  },
  {
    method: 'GET',
    path: '/approvals/{approvalId}',
    handler: 'approvals',
    auth: 'open',
    summary: 'The approval page of a gate (HTML), or the gate as JSON',
  },
  {
    method: 'POST',
    path: '/approvals/{approvalId}',
    handler: 'approvals',
    auth: 'jwt',
    summary: 'Answer a gate as the signed-in approver',
  },
  {
    method: 'POST',
    path: '/approvals/{approvalId}/as-recipient',
    handler: 'approvals',
    auth: 'open',
    summary: 'Answer a gate through a recipient-bound (emailed) link',
  },
  {
    method: 'GET',
    path: '/approvals/{approvalId}/progress',
    handler: 'approvals',
    auth: 'open',
    summary: "The run's progress (HTML, reloading itself) for an approval page's session, once answered",
  },
  {
    method: 'POST',
    path: '/slack/interactions',
    handler: 'approvals',
    auth: 'open',
    summary: 'Approve or Reject clicked in Slack (verified with the Slack app signing secret)',
  },
];

/** The route a method and path match, with its path parameters; undefined when none does. */
export function matchRoute(
  method: string,
  path: string,
  routes: readonly ApiRoute[] = API_ROUTES,
): { route: ApiRoute; params: Record<string, string> } | undefined {
  const segments = path.split('/');
  for (const route of routes) {
    if (route.method !== method.toUpperCase()) continue;
    const pattern = route.path.split('/');
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const matches = pattern.every((part, i) => {
      const actual = segments[i] as string;
      const name = /^\{(\w+)\}$/.exec(part)?.[1];
      if (name === undefined) return part === actual;
      if (actual === '') return false;
      try {
        params[name] = decodeURIComponent(actual);
      } catch {
        return false;
      }
      return true;
    });
    if (matches) return { route, params };
  }
  return undefined;
}

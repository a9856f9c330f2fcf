/**
 * Plans API Lambda (API Gateway HTTP API, payload v2): POST /plans validates, compiles, deploys
 * and starts a plan; GET /plans/{executionId} and GET /executions/{executionId}/events report on it.
 *
 * Environment: PLANGATE_RUNTIME_PLAN_ROLE_ARN (role of the plans' state machines),
 * PLANGATE_SUBSTITUTIONS (JSON: placeholder → harness function ARN), PLANGATE_NAME_PREFIX,
 * PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN, PLANGATE_PLANNER_FUNCTION (the planner Lambda that drafts
 * plans from goals; without it goals are refused), PLANGATE_IDENTITY (`header`: local mode names the submitter
 * in x-plangate-user; else the IAM caller), and the tables/bus of every harness Lambda.
 */

import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { handlePlansRequest, type PlansApiDeps } from '../lib/launch/plans-api.ts';
import { type HttpEvent, type HttpResult, LOCAL_IDENTITY_HEADER } from '../lib/runtime/api/http.ts';
import { defaultHarnessDeps, invokeAsync, runtimeLaunchDeps } from './default-deps.ts';

export const makeHandler =
  (deps: PlansApiDeps) =>
  async (event: HttpEvent, _context?: Context): Promise<HttpResult> =>
    handlePlansRequest(event, deps);

export function defaultPlansApiDeps(
  env: Readonly<Record<string, string | undefined>> = process.env,
): PlansApiDeps {
  const base = defaultHarnessDeps(env);
  const planner = env.PLANGATE_PLANNER_FUNCTION;
  return {
    ...runtimeLaunchDeps(base, env),
    submitter:
      env.PLANGATE_IDENTITY === 'header'
        ? { mode: 'header', header: LOCAL_IDENTITY_HEADER }
        : { mode: 'iam' },
    // The planner may take minutes: the request only hands the draft over.
    ...(planner
      ? { startPlanning: (draftId: string) => invokeAsync(base.lambda as LambdaClient, planner, { draftId }) }
      : {}),
  };
}

let deps: PlansApiDeps | undefined;
export const handler = async (event: HttpEvent, context?: Context): Promise<HttpResult> => {
  deps ??= defaultPlansApiDeps();
  return makeHandler(deps)(event, context);
};

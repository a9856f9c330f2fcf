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

import type { Context } from 'aws-lambda';
import { handlePlansRequest, type PlansApiDeps } from '../lib/launch/plans-api.ts';
import { type HttpEvent, type HttpResult, LOCAL_IDENTITY_HEADER } from '../lib/runtime/api/http.ts';
import type { HandlerEnv } from '../lib/runtime/catalog.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { awsHandler } from './aws-handler.ts';
import { defaultHarnessDeps, invokeAsync, runtimeLaunchDeps } from './default-deps.ts';
import { instrumented } from './edge.ts';

export const makeHandler = (deps: PlansApiDeps) =>
  instrumented(
    deps,
    async (event: HttpEvent, _context?: Context): Promise<HttpResult> => handlePlansRequest(event, deps),
  );

export function defaultPlansApiDeps(env: HandlerEnv<'plansApi'>, telemetry: Telemetry): PlansApiDeps {
  const base = defaultHarnessDeps(env, telemetry);
  const planner = env.PLANGATE_PLANNER_FUNCTION;
  return {
    ...runtimeLaunchDeps(base, env),
    submitter:
      env.PLANGATE_IDENTITY === 'header'
        ? { mode: 'header', header: LOCAL_IDENTITY_HEADER }
        : { mode: 'iam' },
    // The planner may take minutes: the request only hands the draft over.
    ...(planner
      ? { startPlanning: (draftId: string) => invokeAsync(base.lambda, planner, { draftId }) }
      : {}),
  };
}

export const handler = awsHandler('plansApi', makeHandler, defaultPlansApiDeps);

/**
 * Plans API Lambda (API Gateway HTTP API, payload v2): POST /plans validates, compiles, deploys
 * and starts a plan; GET /plans/{executionId} and GET /executions/{executionId}/events report on it.
 *
 * Environment: PLANGATE_RUNTIME_PLAN_ROLE_ARN (role of the plans' state machines),
 * PLANGATE_SUBSTITUTIONS (JSON: placeholder → harness function ARN), PLANGATE_NAME_PREFIX,
 * PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN, PLANGATE_IDENTITY (`header`: local mode names the submitter
 * in x-plangate-user; else the IAM caller), and the tables/bus of every harness Lambda.
 */
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { handlePlansRequest, type PlansApiDeps } from '../lib/launch/plans-api.ts';
import { type HttpEvent, type HttpResult, LOCAL_IDENTITY_HEADER } from '../lib/runtime/api/http.ts';
import { NotConfiguredError } from '../lib/runtime/shared/errors.ts';
import { apiDeps, defaultHarnessDeps } from './default-deps.ts';

export const makeHandler =
  (deps: PlansApiDeps) =>
  async (event: HttpEvent, _context?: Context): Promise<HttpResult> =>
    handlePlansRequest(event, deps);

export function defaultPlansApiDeps(
  env: Readonly<Record<string, string | undefined>> = process.env,
): PlansApiDeps {
  const base = defaultHarnessDeps(env);
  const roleArn = env.PLANGATE_RUNTIME_PLAN_ROLE_ARN;
  if (!roleArn) throw new NotConfiguredError('PLANGATE_RUNTIME_PLAN_ROLE_ARN is not set');
  const substitutions = z
    .record(z.string(), z.string())
    .parse(JSON.parse(env.PLANGATE_SUBSTITUTIONS ?? '{}'));
  return {
    ...apiDeps(base),
    roleArn,
    substitutions,
    submitter:
      env.PLANGATE_IDENTITY === 'header'
        ? { mode: 'header', header: LOCAL_IDENTITY_HEADER }
        : { mode: 'iam' },
    ...(env.PLANGATE_NAME_PREFIX ? { namePrefix: env.PLANGATE_NAME_PREFIX } : {}),
    ...(env.PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN
      ? { logGroupArn: env.PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN }
      : {}),
  };
}

let deps: PlansApiDeps | undefined;
export const handler = async (event: HttpEvent, context?: Context): Promise<HttpResult> => {
  deps ??= defaultPlansApiDeps();
  return makeHandler(deps)(event, context);
};

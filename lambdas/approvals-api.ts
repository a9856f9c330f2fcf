/**
 * Approvals API Lambda (API Gateway HTTP API, payload v2): GET /approvals/{id} renders the
 * approval page, POST /approvals/{id} answers the gate. The caller is named by the JWT
 * authorizer's claims; with PLANGATE_IDENTITY=header (local mode only) by the x-plangate-user header.
 */
import type { Context } from 'aws-lambda';
import { type ApprovalsApiDeps, handleApprovalsRequest } from '../lib/runtime/approvals-api.ts';
import { type HttpEvent, type HttpResult, LOCAL_IDENTITY_HEADER } from '../lib/runtime/http.ts';
import { apiDeps, defaultHarnessDeps, signingKey } from './default-deps.ts';

export const makeHandler =
  (deps: ApprovalsApiDeps | Promise<ApprovalsApiDeps>) =>
  async (event: HttpEvent, _context?: Context): Promise<HttpResult> =>
    handleApprovalsRequest(event, await deps);

export async function defaultApprovalsApiDeps(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ApprovalsApiDeps> {
  const base = defaultHarnessDeps(env);
  return {
    ...apiDeps(base),
    signingKey: await signingKey(env, base.secretsManager as NonNullable<typeof base.secretsManager>),
    identity:
      env.PLANGATE_IDENTITY === 'header'
        ? { mode: 'header', header: LOCAL_IDENTITY_HEADER }
        : { mode: 'jwt' },
  };
}

let deps: Promise<ApprovalsApiDeps> | undefined;
export const handler = async (event: HttpEvent, context?: Context): Promise<HttpResult> => {
  deps ??= defaultApprovalsApiDeps();
  return makeHandler(deps)(event, context);
};

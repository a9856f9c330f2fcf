/**
 * Approvals API Lambda (API Gateway HTTP API, payload v2): GET /approvals/{id} renders the
 * approval page, POST /approvals/{id} answers the gate as the caller the JWT authorizer's claims
 * name (with PLANGATE_IDENTITY=header, local mode only, the x-plangate-user header), POST
 * /approvals/{id}/as-recipient as the recipient a recipient-bound id names.
 *
 * Sign-in on pages of shared links: PLANGATE_COGNITO_DOMAIN (the hosted UI's base URL),
 * PLANGATE_COGNITO_CLIENT_ID (a public app client) and PLANGATE_API_URL (the callback is
 * `<api>/approvals/signed-in`); all three or none.
 */

import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { type ApprovalsApiDeps, handleApprovalsRequest } from '../lib/runtime/api/approvals-api.ts';
import { type HttpEvent, type HttpResult, LOCAL_IDENTITY_HEADER } from '../lib/runtime/api/http.ts';
import { type SignInConfig, signInCallbackUrl } from '../lib/runtime/gate/approval-page.ts';
import { slackClientFromSecret } from '../lib/runtime/notify/slack.ts';
import { NotConfiguredError } from '../lib/runtime/shared/errors.ts';
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
    ...signInFromEnv(env),
    ...(await slackFromEnv(env, base.secretsManager as NonNullable<typeof base.secretsManager>)),
  };
}

/** Slack interactions: PLANGATE_SLACK_SIGNING_SECRET_ARN, PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN and PLANGATE_SLACK_APPROVERS together. */
async function slackFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  secretsManager: SecretsManagerClient,
): Promise<Pick<ApprovalsApiDeps, 'slack'>> {
  const signingSecretId = env.PLANGATE_SLACK_SIGNING_SECRET_ARN;
  const tokenSecretId = env.PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN;
  if (!signingSecretId) return {};
  if (!tokenSecretId || !env.PLANGATE_SLACK_APPROVERS)
    throw new NotConfiguredError(
      'Slack interactions need PLANGATE_SLACK_SIGNING_SECRET_ARN, PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN and PLANGATE_SLACK_APPROVERS together',
    );
  const approvers = z.record(z.string(), z.string().min(1)).parse(JSON.parse(env.PLANGATE_SLACK_APPROVERS));
  const signing = await secretsManager.send(new GetSecretValueCommand({ SecretId: signingSecretId }));
  if (!signing.SecretString) throw new NotConfiguredError(`secret ${signingSecretId} has no string value`);
  return {
    slack: {
      signingSecret: signing.SecretString.trim(),
      client: await slackClientFromSecret(secretsManager, tokenSecretId),
      approvers,
    },
  };
}

/** The hosted sign-in the page uses, from the environment; a partial configuration is an error. */
export function signInFromEnv(env: Readonly<Record<string, string | undefined>>): { signIn?: SignInConfig } {
  const domain = env.PLANGATE_COGNITO_DOMAIN;
  const clientId = env.PLANGATE_COGNITO_CLIENT_ID;
  const apiUrl = env.PLANGATE_API_URL;
  if (!domain && !clientId) return {};
  if (!domain || !clientId || !apiUrl)
    throw new NotConfiguredError(
      'approval sign-in needs PLANGATE_COGNITO_DOMAIN, PLANGATE_COGNITO_CLIENT_ID and PLANGATE_API_URL together',
    );
  const domainUrl = /^https:\/\//.test(domain) ? domain : `https://${domain}`;
  if (!URL.canParse(domainUrl) || !/^[A-Za-z0-9_+-]+$/.test(clientId))
    throw new NotConfiguredError(
      'PLANGATE_COGNITO_DOMAIN must be a host or https URL and PLANGATE_COGNITO_CLIENT_ID an app client id',
    );
  return {
    signIn: { domainUrl: new URL(domainUrl).origin, clientId, redirectUri: signInCallbackUrl(apiUrl) },
  };
}

let deps: Promise<ApprovalsApiDeps> | undefined;
export const handler = async (event: HttpEvent, context?: Context): Promise<HttpResult> => {
  deps ??= defaultApprovalsApiDeps();
  return makeHandler(deps)(event, context);
};

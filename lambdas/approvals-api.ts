/**
 * Approvals API Lambda (API Gateway HTTP API, payload v2): GET /approvals/{id} renders the
 * approval page, POST /approvals/{id} answers the gate as the caller the JWT authorizer's claims
 * name (with PLANGATE_IDENTITY=header, local mode only, the x-plangate-user header), POST
 * /approvals/{id}/as-recipient as the recipient a recipient-bound id names.
 *
 * Sign-in on pages of shared links: PLANGATE_COGNITO_DOMAIN (the hosted UI's base URL),
 * PLANGATE_COGNITO_CLIENT_ID (a public app client) and PLANGATE_API_URL (the callback is
 * `<api>/approvals/signed-in`); all three or none. POST /slack/interactions answers Slack buttons
 * (see slackFromEnv). With PLANGATE_NOTIFIER_FUNCTION, a new revision of a gate's content (an
 * approval with modifications) is sent to its approvers again.
 */

import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import { type ApprovalsApiDeps, handleApprovalsRequest } from '../lib/runtime/api/approvals-api.ts';
import { type HttpEvent, type HttpResult, LOCAL_IDENTITY_HEADER } from '../lib/runtime/api/http.ts';
import type { SlackInteractionsConfig } from '../lib/runtime/api/slack-interactions.ts';
import type { HandlerEnv } from '../lib/runtime/catalog.ts';
import { type SignInConfig, signInCallbackUrl } from '../lib/runtime/gate/approval-page.ts';
import { NotConfiguredError } from '../lib/runtime/shared/errors.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { awsHandler } from './aws-handler.ts';
import {
  apiDeps,
  defaultHarnessDeps,
  lambdaNotifier,
  secretFromEnv,
  signingKey,
  slackApproversFromEnv,
  slackClientFromEnv,
} from './default-deps.ts';
import { instrumented } from './edge.ts';

type Env = HandlerEnv<'approvalsApi'>;

export const makeHandler = (deps: ApprovalsApiDeps | Promise<ApprovalsApiDeps>) =>
  instrumented(
    deps,
    async (event: HttpEvent, _context?: Context): Promise<HttpResult> =>
      handleApprovalsRequest(event, await deps),
  );

export async function defaultApprovalsApiDeps(env: Env, telemetry: Telemetry): Promise<ApprovalsApiDeps> {
  const base = defaultHarnessDeps(env, telemetry);
  return {
    ...apiDeps(base),
    signingKey: await signingKey(env, base.secretsManager),
    identity:
      env.PLANGATE_IDENTITY === 'header'
        ? { mode: 'header', header: LOCAL_IDENTITY_HEADER }
        : { mode: 'jwt' },
    // A revision (an approval with modifications) is sent to the gate's approvers again.
    ...(env.PLANGATE_NOTIFIER_FUNCTION ? { notify: lambdaNotifier(env, base.lambda) } : {}),
    ...signInFromEnv(env),
    ...(await slackFromEnv(env, base.secretsManager)),
  };
}

/**
 * Slack buttons (`POST /slack/interactions`): the signing secret (PLANGATE_SLACK_SIGNING_SECRET_ARN,
 * or PLANGATE_SLACK_SIGNING_SECRET locally), the bot token that updates the message
 * (PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN / PLANGATE_SLACK_BOT_TOKEN) and PLANGATE_SLACK_APPROVERS;
 * the secret and the token together or neither.
 */
export async function slackFromEnv(
  env: Pick<
    Env,
    | 'PLANGATE_SLACK_SIGNING_SECRET'
    | 'PLANGATE_SLACK_SIGNING_SECRET_SECRET_ARN'
    | 'PLANGATE_SLACK_BOT_TOKEN'
    | 'PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN'
    | 'PLANGATE_SLACK_API_URL'
    | 'PLANGATE_SLACK_APPROVERS'
  >,
  secretsManager: SecretsManagerClient,
): Promise<{ slack?: SlackInteractionsConfig }> {
  const signingSecret = secretFromEnv(env, 'PLANGATE_SLACK_SIGNING_SECRET', secretsManager);
  const client = slackClientFromEnv(env, secretsManager);
  if (!signingSecret && !client) return {};
  if (!signingSecret || !client)
    throw new NotConfiguredError(
      'Slack buttons need the signing secret (PLANGATE_SLACK_SIGNING_SECRET[_SECRET_ARN]) and the bot token (PLANGATE_SLACK_BOT_TOKEN[_SECRET_ARN]) together',
    );
  return { slack: { signingSecret: await signingSecret(), approvers: slackApproversFromEnv(env), client } };
}

/** The hosted sign-in the page uses, from the environment; a partial configuration is an error. */
export function signInFromEnv(
  env: Pick<Env, 'PLANGATE_COGNITO_DOMAIN' | 'PLANGATE_COGNITO_CLIENT_ID' | 'PLANGATE_API_URL'>,
): { signIn?: SignInConfig } {
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

export const handler = awsHandler('approvalsApi', makeHandler, defaultApprovalsApiDeps);

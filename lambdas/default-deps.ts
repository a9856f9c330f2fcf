/**
 * Clients and settings for the Lambda handlers, created once per container from the environment.
 * Locally the same code picks the local stack up through AWS_ENDPOINT_URL_* variables.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { InvocationType, InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SFNClient } from '@aws-sdk/client-sfn';
import { z } from 'zod';
import type { RuntimeLaunchDeps } from '../lib/launch/launch-plan.ts';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import type { ApprovalNotifier, GateDeps } from '../lib/runtime/gate/gate.ts';
import { documentClient } from '../lib/runtime/journal/document-client.ts';
import { tableNamesFromEnv } from '../lib/runtime/journal/tables.ts';
import { SlackClient, slackDecisionUpdater, slackEscalationUpdater } from '../lib/runtime/notify/slack.ts';
import { NotConfiguredError } from '../lib/runtime/shared/errors.ts';
import { builtinRegistry } from '../lib/runtime/tools/builtins.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The runner/checker/classifier deps: DynamoDB, EventBridge, Lambda, Secrets Manager, SFN. */
export function defaultHarnessDeps(env: Env = process.env): HarnessDeps & { sfn: SFNClient } {
  const dynamo = new DynamoDBClient({});
  return {
    dynamo: documentClient(dynamo),
    tables: tableNamesFromEnv(env),
    events: new EventBridgeClient({}),
    ...(env.PLANGATE_EVENT_BUS ? { eventBusName: env.PLANGATE_EVENT_BUS } : {}),
    lambda: new LambdaClient({}),
    sfn: new SFNClient({}),
    secretsManager: new SecretsManagerClient({}),
    env,
    ...(env.PLANGATE_WORKDIR ? { cwd: env.PLANGATE_WORKDIR } : {}),
    tools: builtinRegistry(),
  };
}

/** What the API handlers share: the journal's tables and bus, and Step Functions. */
export function apiDeps(
  base: ReturnType<typeof defaultHarnessDeps>,
): Pick<HarnessDeps, 'dynamo' | 'tables' | 'events' | 'eventBusName'> & { sfn: SFNClient } {
  return {
    dynamo: base.dynamo,
    tables: base.tables,
    ...(base.events ? { events: base.events } : {}),
    ...(base.eventBusName ? { eventBusName: base.eventBusName } : {}),
    sfn: base.sfn,
  };
}

/**
 * How plans are launched at run time (the Plans API and the planner): PLANGATE_RUNTIME_PLAN_ROLE_ARN,
 * PLANGATE_SUBSTITUTIONS (JSON: placeholder → harness function ARN), PLANGATE_NAME_PREFIX and
 * PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN.
 */
export function runtimeLaunchDeps(base: ReturnType<typeof defaultHarnessDeps>, env: Env): RuntimeLaunchDeps {
  const roleArn = env.PLANGATE_RUNTIME_PLAN_ROLE_ARN;
  if (!roleArn) throw new NotConfiguredError('PLANGATE_RUNTIME_PLAN_ROLE_ARN is not set');
  const substitutions = z
    .record(z.string(), z.string())
    .parse(JSON.parse(env.PLANGATE_SUBSTITUTIONS ?? '{}'));
  return {
    ...apiDeps(base),
    roleArn,
    substitutions,
    ...(env.PLANGATE_NAME_PREFIX ? { namePrefix: env.PLANGATE_NAME_PREFIX } : {}),
    ...(env.PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN
      ? { logGroupArn: env.PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN }
      : {}),
  };
}

/**
 * The gate's deps: the harness deps plus the signing key (PLANGATE_APPROVAL_SIGNING_KEY, or the
 * Secrets Manager secret named by PLANGATE_APPROVAL_SIGNING_KEY_SECRET), a notifier that
 * invokes PLANGATE_NOTIFIER_FUNCTION asynchronously with the notice, and, with a Slack bot token
 * (PLANGATE_SLACK_BOT_TOKEN[_SECRET_ARN]), the updaters of the gate's Slack messages.
 */
export async function defaultGateDeps(env: Env = process.env): Promise<GateDeps> {
  const base = defaultHarnessDeps(env);
  const slack = slackClientFromEnv(env, base.secretsManager as SecretsManagerClient);
  return {
    ...base,
    signingKey: await signingKey(env, base.secretsManager as SecretsManagerClient),
    notify: lambdaNotifier(env, base.lambda as LambdaClient),
    // The timeout ladder's escalations and rejections show in the gate's Slack messages.
    ...(slack ? { onDecided: slackDecisionUpdater(slack), onEscalated: slackEscalationUpdater(slack) } : {}),
  };
}

/** The approval HMAC key: PLANGATE_APPROVAL_SIGNING_KEY, or the Secrets Manager secret PLANGATE_APPROVAL_SIGNING_KEY_SECRET names. */
export async function signingKey(env: Env, secretsManager: SecretsManagerClient): Promise<string> {
  if (env.PLANGATE_APPROVAL_SIGNING_KEY) return env.PLANGATE_APPROVAL_SIGNING_KEY;
  const secretId = env.PLANGATE_APPROVAL_SIGNING_KEY_SECRET;
  if (!secretId) {
    throw new NotConfiguredError(
      'no approval signing key: set PLANGATE_APPROVAL_SIGNING_KEY_SECRET (Secrets Manager) or PLANGATE_APPROVAL_SIGNING_KEY',
    );
  }
  const out = await secretsManager.send(new GetSecretValueCommand({ SecretId: secretId }));
  if (!out.SecretString) throw new NotConfiguredError(`secret ${secretId} has no string value`);
  return out.SecretString;
}

/** Invokes PLANGATE_NOTIFIER_FUNCTION asynchronously with each notice (an error at the call when it is not set). */
export function lambdaNotifier(env: Env, lambda: LambdaClient): ApprovalNotifier {
  return async (notice) => {
    const functionName = env.PLANGATE_NOTIFIER_FUNCTION;
    if (!functionName) {
      throw new NotConfiguredError(
        'no notifier: set PLANGATE_NOTIFIER_FUNCTION to the function that sends approval requests',
      );
    }
    await invokeAsync(lambda, functionName, notice);
  };
}

/** Invokes a function without waiting for it (Lambda retries a failed asynchronous event). */
export async function invokeAsync(
  lambda: LambdaClient,
  functionName: string,
  payload: unknown,
): Promise<void> {
  await lambda.send(
    new InvokeCommand({
      FunctionName: functionName,
      InvocationType: InvocationType.Event,
      Payload: Buffer.from(JSON.stringify(payload)),
    }),
  );
}

/**
 * A secret's value for a handler: the environment variable `name` itself (local mode), else the
 * Secrets Manager secret that `${name}_SECRET_ARN` names, read when first needed.
 */
export function secretFromEnv(
  env: Env,
  name: string,
  secretsManager: SecretsManagerClient,
): (() => Promise<string>) | undefined {
  const value = env[name];
  if (value) return async () => value;
  const secretId = env[`${name}_SECRET_ARN`];
  if (!secretId) return undefined;
  return async () => {
    const out = await secretsManager.send(new GetSecretValueCommand({ SecretId: secretId }));
    if (!out.SecretString) throw new NotConfiguredError(`secret ${secretId} has no string value`);
    return out.SecretString;
  };
}

/** The Slack Web API client of PLANGATE_SLACK_BOT_TOKEN(_SECRET_ARN) and PLANGATE_SLACK_API_URL, if a token is configured. */
export function slackClientFromEnv(env: Env, secretsManager: SecretsManagerClient): SlackClient | undefined {
  const botToken = secretFromEnv(env, 'PLANGATE_SLACK_BOT_TOKEN', secretsManager);
  if (!botToken) return undefined;
  return new SlackClient({
    botToken,
    ...(env.PLANGATE_SLACK_API_URL ? { slackApiUrl: env.PLANGATE_SLACK_API_URL } : {}),
  });
}

/** PLANGATE_SLACK_APPROVERS, `U0123ABCD=alice@example.com,U0456EFGH=bob`: Slack user id → approver name. */
export function slackApproversFromEnv(env: Env): Record<string, string> {
  const approvers: Record<string, string> = {};
  for (const pair of (env.PLANGATE_SLACK_APPROVERS ?? '').split(',')) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf('=');
    const user = pair.slice(0, eq).trim();
    const name = pair.slice(eq + 1).trim();
    if (eq <= 0 || !/^[UW][A-Z0-9]+$/.test(user) || !name)
      throw new NotConfiguredError(
        `PLANGATE_SLACK_APPROVERS: "${pair.trim()}" is not <Slack user id>=<approver name>`,
      );
    approvers[user] = name;
  }
  return approvers;
}

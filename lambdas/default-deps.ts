/**
 * Clients and settings for the Lambda handlers, created once per container from the environment
 * the handler's catalog schema parsed (lib/runtime/catalog.ts), every client traced. Locally the
 * same code picks the local stack up through AWS_ENDPOINT_URL_* variables.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { InvocationType, InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SFNClient } from '@aws-sdk/client-sfn';
import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import { z } from 'zod';
import type { RuntimeLaunchDeps } from '../lib/launch/launch-plan.ts';
import type { CommonHandlerEnv, HandlerEnv } from '../lib/runtime/catalog.ts';
import type { HarnessDepsOnAws } from '../lib/runtime/deps.ts';
import type { ApprovalNotifier, GateDeps } from '../lib/runtime/gate/gate.ts';
import { documentClient } from '../lib/runtime/journal/document-client.ts';
import { tableNamesFromEnv } from '../lib/runtime/journal/tables.ts';
import { SlackClient, slackDecisionUpdater, slackEscalationUpdater } from '../lib/runtime/notify/slack.ts';
import { configurePlanProcessFunction } from '../lib/runtime/sandbox/sandbox.ts';
import { NotConfiguredError } from '../lib/runtime/shared/errors.ts';
import { type PlanAwsAssumer, planProcessInvoker } from '../lib/runtime/shared/plan-process-function.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { builtinRegistry } from '../lib/runtime/tools/builtins.ts';

/** An SDK v3 client whose calls the handler's tracer records (X-Ray subsegments). */
export function traced<C extends Parameters<NonNullable<Telemetry['tracer']>['captureAWSv3Client']>[0]>(
  telemetry: Telemetry,
  client: C,
): C {
  return telemetry.tracer ? telemetry.tracer.captureAWSv3Client(client) : client;
}

/**
 * Every handler's deps: DynamoDB, EventBridge, Lambda, Secrets Manager, SFN, the tools. Plans'
 * `source: env` secrets and the agent command are read from the process's environment itself.
 */
export function defaultHarnessDeps(env: CommonHandlerEnv, telemetry: Telemetry): HarnessDepsOnAws {
  return {
    dynamo: documentClient(traced(telemetry, new DynamoDBClient({}))),
    tables: tableNamesFromEnv(env),
    events: traced(telemetry, new EventBridgeClient({})),
    eventBusName: env.PLANGATE_EVENT_BUS,
    lambda: traced(telemetry, new LambdaClient({})),
    sfn: traced(telemetry, new SFNClient({})),
    secretsManager: traced(telemetry, new SecretsManagerClient({})),
    tools: builtinRegistry(),
    telemetry,
  };
}

/**
 * The step runner's and contract checker's deps: process tools and command contracts run in
 * PLANGATE_WORKDIR, or, with PLANGATE_PLAN_PROCESS_FUNCTION, in that function (every plan
 * process of this container from now on), a step that declares AWS with a session of
 * PLANGATE_PLAN_AWS_ROLE_ARN this function assumes for it.
 */
export function stepDeps(env: HandlerEnv<'stepRunner'>, telemetry: Telemetry): HarnessDepsOnAws {
  const base = defaultHarnessDeps(env, telemetry);
  if (env.PLANGATE_PLAN_PROCESS_FUNCTION)
    configurePlanProcessFunction({
      name: env.PLANGATE_PLAN_PROCESS_FUNCTION,
      invoke: planProcessInvoker(
        // One attempt: the SDK must not run a plan's command twice (a step's own recipe retries it).
        traced(telemetry, new LambdaClient({ maxAttempts: 1 })),
        env.PLANGATE_PLAN_PROCESS_FUNCTION,
        env.PLANGATE_PLAN_AWS_ROLE_ARN ? planAwsAssumer(env.PLANGATE_PLAN_AWS_ROLE_ARN) : undefined,
      ),
    });
  return env.PLANGATE_WORKDIR ? { ...base, cwd: env.PLANGATE_WORKDIR } : base;
}

/** sts:AssumeRole of the plan AWS role with this function's own credentials and the step's session policy. */
export function planAwsAssumer(roleArn: string): PlanAwsAssumer {
  const region = process.env.AWS_REGION;
  return async (session, durationSeconds) => {
    const credentials = await fromTemporaryCredentials({
      params: {
        RoleArn: roleArn,
        RoleSessionName: session.sessionName,
        Policy: session.policy,
        DurationSeconds: durationSeconds,
      },
      ...(region ? { clientConfig: { region } } : {}),
    })();
    if (!credentials.sessionToken) throw new NotConfiguredError('sts:AssumeRole returned no session token');
    return {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      sessionToken: credentials.sessionToken,
    };
  };
}

/** What the API handlers share: the journal's tables and bus, Step Functions, the telemetry. */
export function apiDeps(
  base: HarnessDepsOnAws,
): Pick<HarnessDepsOnAws, 'dynamo' | 'tables' | 'events' | 'eventBusName' | 'sfn' | 'telemetry'> {
  return {
    dynamo: base.dynamo,
    tables: base.tables,
    events: base.events,
    eventBusName: base.eventBusName,
    sfn: base.sfn,
    telemetry: base.telemetry,
  };
}

/**
 * How plans are launched at run time (the Plans API and the planner): PLANGATE_RUNTIME_PLAN_ROLE_ARN,
 * PLANGATE_SUBSTITUTIONS (JSON: placeholder → harness function ARN), PLANGATE_NAME_PREFIX and
 * PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN.
 */
export function runtimeLaunchDeps(
  base: HarnessDepsOnAws,
  env: Pick<
    HandlerEnv<'plansApi'>,
    | 'PLANGATE_RUNTIME_PLAN_ROLE_ARN'
    | 'PLANGATE_SUBSTITUTIONS'
    | 'PLANGATE_NAME_PREFIX'
    | 'PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN'
  >,
): RuntimeLaunchDeps {
  let substitutions: Record<string, string>;
  try {
    substitutions = z.record(z.string(), z.string()).parse(JSON.parse(env.PLANGATE_SUBSTITUTIONS));
  } catch {
    throw new NotConfiguredError(
      'PLANGATE_SUBSTITUTIONS must be a JSON object of placeholder → harness function ARN',
    );
  }
  return {
    ...apiDeps(base),
    roleArn: env.PLANGATE_RUNTIME_PLAN_ROLE_ARN,
    substitutions,
    namePrefix: env.PLANGATE_NAME_PREFIX,
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
export async function defaultGateDeps(env: HandlerEnv<'gate'>, telemetry: Telemetry): Promise<GateDeps> {
  const base = defaultHarnessDeps(env, telemetry);
  // The gate says where plan code runs (each gate's "Runs as"); it never runs any itself.
  if (env.PLANGATE_PLAN_PROCESS_FUNCTION)
    configurePlanProcessFunction({ name: env.PLANGATE_PLAN_PROCESS_FUNCTION });
  const slack = slackClientFromEnv(env, base.secretsManager);
  return {
    ...base,
    signingKey: await signingKey(env, base.secretsManager),
    notify: lambdaNotifier(env, base.lambda),
    // The timeout ladder's escalations and rejections show in the gate's Slack messages.
    ...(slack ? { onDecided: slackDecisionUpdater(slack), onEscalated: slackEscalationUpdater(slack) } : {}),
  };
}

/** The approval HMAC key: PLANGATE_APPROVAL_SIGNING_KEY, or the Secrets Manager secret PLANGATE_APPROVAL_SIGNING_KEY_SECRET names. */
export async function signingKey(
  env: Pick<HandlerEnv<'gate'>, 'PLANGATE_APPROVAL_SIGNING_KEY' | 'PLANGATE_APPROVAL_SIGNING_KEY_SECRET'>,
  secretsManager: SecretsManagerClient,
): Promise<string> {
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
export function lambdaNotifier(
  env: Pick<HandlerEnv<'approvalsApi'>, 'PLANGATE_NOTIFIER_FUNCTION'>,
  lambda: LambdaClient,
): ApprovalNotifier {
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
export function secretFromEnv<N extends string>(
  env: { readonly [K in N | `${N}_SECRET_ARN`]?: string },
  name: N,
  secretsManager: SecretsManagerClient,
): (() => Promise<string>) | undefined {
  const value = env[name];
  if (value) return async () => value;
  const secretId = env[`${name}_SECRET_ARN` as const];
  if (!secretId) return undefined;
  return async () => {
    const out = await secretsManager.send(new GetSecretValueCommand({ SecretId: secretId }));
    if (!out.SecretString) throw new NotConfiguredError(`secret ${secretId} has no string value`);
    return out.SecretString;
  };
}

/** The Slack Web API client of PLANGATE_SLACK_BOT_TOKEN(_SECRET_ARN) and PLANGATE_SLACK_API_URL, if a token is configured. */
export function slackClientFromEnv(
  env: Pick<
    HandlerEnv<'gate'>,
    'PLANGATE_SLACK_BOT_TOKEN' | 'PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN' | 'PLANGATE_SLACK_API_URL'
  >,
  secretsManager: SecretsManagerClient,
): SlackClient | undefined {
  const botToken = secretFromEnv(env, 'PLANGATE_SLACK_BOT_TOKEN', secretsManager);
  if (!botToken) return undefined;
  return new SlackClient({
    botToken,
    ...(env.PLANGATE_SLACK_API_URL ? { slackApiUrl: env.PLANGATE_SLACK_API_URL } : {}),
  });
}

/** PLANGATE_SLACK_APPROVERS, `U0123ABCD=alice@example.com,U0456EFGH=bob`: Slack user id → approver name. */
export function slackApproversFromEnv(
  env: Pick<HandlerEnv<'approvalsApi'>, 'PLANGATE_SLACK_APPROVERS'>,
): Record<string, string> {
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

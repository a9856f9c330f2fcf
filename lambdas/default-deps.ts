/**
 * Clients and settings for the Lambda handlers, created once per container from the environment.
 * Locally the same code picks the local stack up through AWS_ENDPOINT_URL_* variables.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { InvocationType, InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import type { ApprovalNotifier, GateDeps } from '../lib/runtime/gate/gate.ts';
import { documentClient } from '../lib/runtime/journal/document-client.ts';
import { tableNamesFromEnv } from '../lib/runtime/journal/tables.ts';
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
 * The gate's deps: the harness deps plus the signing key (PLANGATE_APPROVAL_SIGNING_KEY, or the
 * Secrets Manager secret named by PLANGATE_APPROVAL_SIGNING_KEY_SECRET) and a notifier that
 * invokes PLANGATE_NOTIFIER_FUNCTION asynchronously with the notice.
 */
export async function defaultGateDeps(env: Env = process.env): Promise<GateDeps> {
  const base = defaultHarnessDeps(env);
  return {
    ...base,
    signingKey: await signingKey(env, base.secretsManager as SecretsManagerClient),
    notify: lambdaNotifier(env, base.lambda as LambdaClient),
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

function lambdaNotifier(env: Env, lambda: LambdaClient): ApprovalNotifier {
  return async (notice) => {
    const functionName = env.PLANGATE_NOTIFIER_FUNCTION;
    if (!functionName) {
      throw new NotConfiguredError(
        'no notifier: set PLANGATE_NOTIFIER_FUNCTION to the function that sends approval requests',
      );
    }
    await lambda.send(
      new InvokeCommand({
        FunctionName: functionName,
        InvocationType: InvocationType.Event,
        Payload: Buffer.from(JSON.stringify(notice)),
      }),
    );
  };
}

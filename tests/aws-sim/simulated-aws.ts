/**
 * One simulated AWS account for a synthesized template: the local DynamoDB with the template's
 * tables, the local event bus, a local Secrets Manager holding the template's secrets, the
 * platform's Slack secrets (named as docs/deploy.md names them) and a plan's secrets, the
 * template's functions (each invoked in its own Lambda process, lambda-process.ts, on its first
 * Invoke) and the enforcing front before all of them, with STS, which lets each function's role
 * (and each role session STS issues) do exactly what the template's policies allow. Each function
 * gets its own temporary credentials, as Lambda hands them to it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localClients } from '../../lib/aws-local/clients.ts';
import { type LocalDynamo, startLocalDynamo } from '../../lib/aws-local/dynamo.ts';
import { type LocalEventBus, startLocalEventBus } from '../../lib/aws-local/eventbus.ts';
import {
  type EnforcingFront,
  type IssuedCredentials,
  startEnforcingFront,
} from '../../lib/aws-local/iam/enforcing-front.ts';
import { evaluate } from '../../lib/aws-local/iam/evaluate.ts';
import type { NamedPolicy } from '../../lib/aws-local/iam/policy-document.ts';
import { type LocalSecretsManager, startLocalSecretsManager } from '../../lib/aws-local/secrets-manager.ts';
import { ensureTables, type TableNames, tableNamesFromEnv } from '../../lib/runtime/journal/tables.ts';
import { type LambdaProcess, startLambdaProcess } from './lambda-process.ts';
import { SIM_ACCOUNT, SIM_REGION, type SimulatedFunction, type SimulatedTemplate } from './template.ts';

/** The platform's Slack secrets, where docs/deploy.md tells an operator to create them. */
export const SLACK_SECRETS = {
  signingSecret: {
    name: 'plangate-platform/slack-signing-secret',
    value: `slack-signing-${randomBytes(8).toString('hex')}`,
  },
  botToken: { name: 'plangate-platform/slack-bot-token', value: `xoxb-${randomBytes(8).toString('hex')}` },
} as const;

/** Two plans' secrets, under the prefix plans' secrets live under (lib/plan/aws-access.ts). */
export const PLAN_SECRETS = {
  reportToken: {
    name: 'plangate/plans/report-token',
    value: `report-token-${randomBytes(8).toString('hex')}`,
  },
  deployKey: { name: 'plangate/plans/deploy-key', value: `deploy-key-${randomBytes(8).toString('hex')}` },
} as const;

export interface SimulatedAwsOptions {
  /**
   * Policies added to roles beyond the template's, by role ARN: what a platform's own statements
   * (`planAwsStatements`, lib/cdk/plan-code.ts) would add to the plan AWS role.
   * @default none
   */
  readonly addedPolicies?: ReadonlyMap<string, readonly NamedPolicy[]>;
}

export interface SimulatedAws {
  readonly template: SimulatedTemplate;
  readonly front: EnforcingFront;
  readonly bus: LocalEventBus;
  readonly secrets: LocalSecretsManager;
  readonly tables: TableNames;
  readonly busName: string;
  /** Clients straight to the services, past the front: what the test itself looks at. */
  readonly admin: ReturnType<typeof localClients>;
  /** Each function's credentials, by its logical id. */
  credentialsOf(fn: SimulatedFunction): IssuedCredentials;
  close(): Promise<void>;
}

export async function startSimulatedAws(
  template: SimulatedTemplate,
  options: SimulatedAwsOptions = {},
): Promise<SimulatedAws> {
  const dynamo: LocalDynamo = await startLocalDynamo();
  const bus = await startLocalEventBus({ account: SIM_ACCOUNT, region: SIM_REGION });
  const templateSecrets = template.idsOf('AWS::SecretsManager::Secret').map((id) => ({
    name: id,
    arn: template.arnOf(id),
    value: `template-secret-${randomBytes(8).toString('hex')}`,
  }));
  const secrets = await startLocalSecretsManager({
    secrets: [...templateSecrets, ...Object.values(SLACK_SECRETS), ...Object.values(PLAN_SECRETS)],
    region: SIM_REGION,
    account: SIM_ACCOUNT,
  });
  // Every harness function reads the same tables and bus (the catalog's common environment); the
  // plan-process function is given neither.
  const anyFunction = template.functions.find((fn) => fn.environment.PLANGATE_EVENTS_TABLE);
  if (!anyFunction) throw new Error('the template has no Lambda function with the journal tables');
  const tables = tableNamesFromEnv(anyFunction.environment);
  const busName = anyFunction.environment.PLANGATE_EVENT_BUS as string;
  const admin = localClients({
    dynamoEndpoint: dynamo.endpoint,
    eventsEndpoint: bus.endpoint,
    region: SIM_REGION,
  });
  await ensureTables(admin.dynamo, tables);

  const issued = new Map(
    template.functions.map((fn) => [
      fn.logicalId,
      {
        accessKeyId: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
        secretAccessKey: randomBytes(30).toString('base64'),
        sessionToken: randomBytes(48).toString('base64'),
        roleArn: fn.roleArn,
      },
    ]),
  );
  // A function's Lambda process, started on its first Invoke and kept warm, as Lambda keeps it.
  const processRoot = mkdtempSync(join(tmpdir(), 'plangate-iam-sim-lambda-'));
  const warm = new Map<string, Promise<LambdaProcess>>();
  const functionByArn = new Map(template.functions.map((fn) => [fn.arn, fn]));
  const processOf = (fn: SimulatedFunction): Promise<LambdaProcess> => {
    let started = warm.get(fn.logicalId);
    if (!started) {
      started = startLambdaProcess({
        fn,
        credentials: issued.get(fn.logicalId) as IssuedCredentials,
        endpoint: front.endpoint,
        root: mkdtempSync(join(processRoot, `${fn.logicalId}-`)),
      });
      warm.set(fn.logicalId, started);
    }
    return started;
  };
  const front: EnforcingFront = await startEnforcingFront({
    region: SIM_REGION,
    account: SIM_ACCOUNT,
    secretArnOf: (id) => secrets.arnOf(id),
    credentials: [...issued.values()],
    upstreams: { dynamodb: dynamo.endpoint, events: bus.endpoint, secretsmanager: secrets.endpoint },
    authorize: (request) =>
      evaluate(request, {
        identity: [
          ...(template.rolePolicies.get(request.principalArn) ?? []),
          ...(options.addedPolicies?.get(request.principalArn) ?? []),
        ],
        // A table's resource policy covers its indexes too.
        resource: template.resourcePolicies.get(request.resource.replace(/\/index\/[^/]+$/, '')),
      }),
    functions: {
      has: (arn) => functionByArn.has(arn),
      invoke: async (arn, event) => {
        const answer = await (await processOf(functionByArn.get(arn) as SimulatedFunction)).invoke(event);
        return 'error' in answer ? { error: answer.error } : { result: answer.result };
      },
    },
    trustPolicyOf: (roleArn) => template.trustPolicies.get(roleArn),
  });
  return {
    template,
    front,
    bus,
    secrets,
    tables,
    busName,
    admin,
    credentialsOf: (fn) => issued.get(fn.logicalId) as IssuedCredentials,
    close: async () => {
      for (const started of warm.values())
        await started.then(
          (p) => p.close(),
          () => undefined,
        );
      rmSync(processRoot, { recursive: true, force: true });
      admin.destroy();
      await front.close();
      await secrets.close();
      await bus.close();
      await dynamo.close();
    },
  };
}

/**
 * One simulated AWS account for a synthesized template: the local DynamoDB with the template's
 * tables, the local event bus, a local Secrets Manager holding the template's secrets and the
 * platform's Slack secrets (named as docs/deploy.md names them), and the enforcing front before
 * all three, which lets each function's role do exactly what the template's policies allow.
 * Each function gets its own temporary credentials, as Lambda hands them to it.
 */
import { randomBytes } from 'node:crypto';
import { localClients } from '../../lib/aws-local/clients.ts';
import { type LocalDynamo, startLocalDynamo } from '../../lib/aws-local/dynamo.ts';
import { type LocalEventBus, startLocalEventBus } from '../../lib/aws-local/eventbus.ts';
import {
  type EnforcingFront,
  type IssuedCredentials,
  startEnforcingFront,
} from '../../lib/aws-local/iam/enforcing-front.ts';
import { evaluate } from '../../lib/aws-local/iam/evaluate.ts';
import { type LocalSecretsManager, startLocalSecretsManager } from '../../lib/aws-local/secrets-manager.ts';
import { ensureTables, type TableNames, tableNamesFromEnv } from '../../lib/runtime/journal/tables.ts';
import { SIM_ACCOUNT, SIM_REGION, type SimulatedFunction, type SimulatedTemplate } from './template.ts';

/** The platform's Slack secrets, where docs/deploy.md tells an operator to create them. */
export const SLACK_SECRETS = {
  signingSecret: {
    name: 'plangate/slack-signing-secret',
    value: `slack-signing-${randomBytes(8).toString('hex')}`,
  },
  botToken: { name: 'plangate/slack-bot-token', value: `xoxb-${randomBytes(8).toString('hex')}` },
} as const;

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

export async function startSimulatedAws(template: SimulatedTemplate): Promise<SimulatedAws> {
  const dynamo: LocalDynamo = await startLocalDynamo();
  const bus = await startLocalEventBus({ account: SIM_ACCOUNT, region: SIM_REGION });
  const templateSecrets = template.idsOf('AWS::SecretsManager::Secret').map((id) => ({
    name: id,
    arn: template.arnOf(id),
    value: `template-secret-${randomBytes(8).toString('hex')}`,
  }));
  const secrets = await startLocalSecretsManager({
    secrets: [...templateSecrets, SLACK_SECRETS.signingSecret, SLACK_SECRETS.botToken],
    region: SIM_REGION,
    account: SIM_ACCOUNT,
  });
  // Every harness function reads the same tables and bus (the catalog's common environment).
  const [anyFunction] = template.functions;
  if (!anyFunction) throw new Error('the template has no Lambda function');
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
  const front = await startEnforcingFront({
    region: SIM_REGION,
    account: SIM_ACCOUNT,
    secretArnOf: (id) => secrets.arnOf(id),
    credentials: [...issued.values()],
    upstreams: { dynamodb: dynamo.endpoint, events: bus.endpoint, secretsmanager: secrets.endpoint },
    authorize: (request) =>
      evaluate(request, {
        identity: template.rolePolicies.get(request.principalArn) ?? [],
        // A table's resource policy covers its indexes too.
        resource: template.resourcePolicies.get(request.resource.replace(/\/index\/[^/]+$/, '')),
      }),
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
      admin.destroy();
      await front.close();
      await secrets.close();
      await bus.close();
      await dynamo.close();
    },
  };
}

/**
 * One simulated AWS account for a synthesized template: the local DynamoDB with the template's
 * tables, the local event bus, a local Secrets Manager holding the template's secrets, the
 * platform's Slack secrets (named as docs/deploy.md names them) and a plan's secrets, the
 * template's functions (each Invoke run by an idle Lambda process of its function, or a new one
 * when all are busy, as Lambda starts a container per concurrent invocation: lambda-process.ts,
 * each with its own /tmp) and the enforcing front before all of them, with STS, which lets each function's role
 * (and each role session STS issues) do exactly what the template's policies allow. Each function
 * gets its own temporary credentials, as Lambda hands them to it. Each EFS access point the
 * template's functions mount is a directory of its own, given to the processes of exactly the
 * functions whose FileSystemConfigs name it.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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
  /**
   * How many warm containers a function keeps, by its handler's description: they take its
   * invocations in turn (the least recently used first), as Lambda may route any invocation to
   * any warm container, so two calls in a row run with different /tmp.
   * @default one, started on the first Invoke (more only while all are busy)
   */
  readonly warmContainers?: ReadonlyMap<string, number>;
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
  /** Invokes a function as Lambda does (no IAM check: the caller is the account's own service). */
  invoke(fn: SimulatedFunction, event: unknown): ReturnType<LambdaProcess['invoke']>;
  /** How many Lambda processes (containers) of the function have been started. */
  processCountOf(fn: SimulatedFunction): number;
  /** The pid of the process that ran each invocation of the function, in order. */
  invocationPidsOf(fn: SimulatedFunction): readonly number[];
  /** The directory standing for an EFS access point's file system. */
  fileSystemDirOf(accessPointArn: string): string;
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
  const processRoot = mkdtempSync(join(tmpdir(), 'plangate-iam-sim-lambda-'));
  const fileSystems = new Map<string, string>();
  const fileSystemDirOf = (accessPointArn: string): string => {
    let dir = fileSystems.get(accessPointArn);
    if (!dir) {
      dir = join(processRoot, 'efs', accessPointArn.slice(accessPointArn.lastIndexOf('/') + 1));
      mkdirSync(dir, { recursive: true });
      fileSystems.set(accessPointArn, dir);
    }
    return dir;
  };
  // A function's Lambda processes: an idle one takes an Invoke, else a new one starts; each stays
  // warm for the next, as Lambda keeps containers.
  const started: Promise<LambdaProcess>[] = [];
  const idle = new Map<string, LambdaProcess[]>();
  const counts = new Map<string, number>();
  const pids = new Map<string, number[]>();
  const functionByArn = new Map(template.functions.map((fn) => [fn.arn, fn]));
  const startProcess = (fn: SimulatedFunction): Promise<LambdaProcess> => {
    counts.set(fn.logicalId, (counts.get(fn.logicalId) ?? 0) + 1);
    const starting = startLambdaProcess({
      fn,
      credentials: issued.get(fn.logicalId) as IssuedCredentials,
      endpoint: front.endpoint,
      root: mkdtempSync(join(processRoot, `${fn.logicalId}-`)),
      mounts: new Map(fn.mounts.map((m) => [m.localMountPath, fileSystemDirOf(m.accessPointArn)])),
    });
    started.push(starting);
    return starting;
  };
  const invoke = async (fn: SimulatedFunction, event: unknown) => {
    let free = idle.get(fn.logicalId);
    if (!free) {
      free = await Promise.all(
        Array.from({ length: options.warmContainers?.get(fn.description) ?? 0 }, () => startProcess(fn)),
      );
      idle.set(fn.logicalId, free);
    }
    const lambda = free.shift() ?? (await startProcess(fn));
    pids.set(fn.logicalId, [...(pids.get(fn.logicalId) ?? []), lambda.pid]);
    try {
      return await lambda.invoke(event);
    } finally {
      free.push(lambda);
    }
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
        const answer = await invoke(functionByArn.get(arn) as SimulatedFunction, event);
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
    invoke,
    processCountOf: (fn) => counts.get(fn.logicalId) ?? 0,
    invocationPidsOf: (fn) => pids.get(fn.logicalId) ?? [],
    fileSystemDirOf,
    close: async () => {
      for (const starting of started)
        await starting.then(
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

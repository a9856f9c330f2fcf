/**
 * The IAM simulator's front through the ordinary SDK clients: signed requests of issued
 * credentials only, each action and resource put to the policy, refusals in each service's shape.
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient, ExecuteStatementCommand } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDynamo, startLocalDynamo } from '../../lib/aws-local/dynamo.ts';
import { type LocalEventBus, startLocalEventBus } from '../../lib/aws-local/eventbus.ts';
import { type EnforcingFront, startEnforcingFront } from '../../lib/aws-local/iam/enforcing-front.ts';
import { evaluate } from '../../lib/aws-local/iam/evaluate.ts';
import { PolicyDocumentSchema } from '../../lib/aws-local/iam/policy-document.ts';
import { type LocalSecretsManager, startLocalSecretsManager } from '../../lib/aws-local/secrets-manager.ts';
import { documentClient } from '../../lib/runtime/journal/document-client.ts';
import { ensureTables } from '../../lib/runtime/journal/tables.ts';

const region = 'us-east-1';
const account = '123456789012';
const roleArn = `arn:aws:iam::${account}:role/Reader`;
const table = `arn:aws:dynamodb:${region}:${account}:table/plangate-gates`;
const keys = {
  accessKeyId: 'ASIAREADER',
  secretAccessKey: randomBytes(20).toString('hex'),
  sessionToken: randomBytes(20).toString('hex'),
};
const policy = PolicyDocumentSchema.parse({
  Version: '2012-10-17',
  Statement: [
    { Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:PutItem'], Resource: table },
    {
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      Resource: `arn:aws:secretsmanager:${region}:${account}:secret:plan/*`,
    },
  ],
});

let dynamo: LocalDynamo;
let bus: LocalEventBus;
let secrets: LocalSecretsManager;
let front: EnforcingFront;
const clients: { destroy(): void }[] = [];

function client<C extends { destroy(): void }>(make: (config: object) => C, credentials: object = keys): C {
  const c = make({ region, endpoint: front.endpoint, credentials, maxAttempts: 1 });
  clients.push(c);
  return c;
}
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: { name?: string; message?: string; $metadata?: { httpStatusCode?: number } }) => ({
      name: e.name,
      message: e.message,
      status: e.$metadata?.httpStatusCode,
    }),
  );

beforeAll(async () => {
  dynamo = await startLocalDynamo();
  bus = await startLocalEventBus();
  secrets = await startLocalSecretsManager({
    region,
    account,
    secrets: [
      { name: 'plan/token', value: 'plan-token' },
      { name: 'platform/key', value: 'platform-key' },
    ],
  });
  const admin = new DynamoDBClient({ region, endpoint: dynamo.endpoint, credentials: keys });
  await ensureTables(admin);
  admin.destroy();
  front = await startEnforcingFront({
    region,
    account,
    secretArnOf: (id) => secrets.arnOf(id),
    credentials: [{ ...keys, roleArn }],
    upstreams: { dynamodb: dynamo.endpoint, events: bus.endpoint, secretsmanager: secrets.endpoint },
    authorize: (request) => evaluate(request, { identity: [{ name: 'ReaderPolicy', document: policy }] }),
  });
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  await front.close();
  await secrets.close();
  await bus.close();
  await dynamo.close();
});

describe('the IAM front', () => {
  it('forwards what the policy allows and answers as the service does', async () => {
    const doc = documentClient(client((c) => new DynamoDBClient(c)));
    await doc.send(new PutCommand({ TableName: 'plangate-gates', Item: { approvalId: 'g1', v: 1 } }));
    expect(
      (await doc.send(new GetCommand({ TableName: 'plangate-gates', Key: { approvalId: 'g1' } }))).Item,
    ).toEqual({ approvalId: 'g1', v: 1 });
    const sm = client((c) => new SecretsManagerClient(c));
    expect((await sm.send(new GetSecretValueCommand({ SecretId: 'plan/token' }))).SecretString).toBe(
      'plan-token',
    );
    expect(front.decisions).toContainEqual(
      expect.objectContaining({ roleArn, action: 'dynamodb:PutItem', resource: table, allowed: true }),
    );
  });

  it('refuses what the policy does not allow with AccessDeniedException naming the action and resource', async () => {
    const doc = documentClient(client((c) => new DynamoDBClient(c)));
    const denied = await refusal(
      doc.send(new DeleteCommand({ TableName: 'plangate-gates', Key: { approvalId: 'g1' } })),
    );
    expect(denied).toMatchObject({ name: 'AccessDeniedException', status: 400 });
    expect(denied?.message).toContain(
      `is not authorized to perform: dynamodb:DeleteItem on resource: ${table}`,
    );
    expect(
      (await doc.send(new GetCommand({ TableName: 'plangate-gates', Key: { approvalId: 'g1' } }))).Item,
    ).toBeDefined();
    const sm = client((c) => new SecretsManagerClient(c));
    expect(await refusal(sm.send(new GetSecretValueCommand({ SecretId: 'platform/key' })))).toMatchObject({
      name: 'AccessDeniedException',
    });
    const events = client((c) => new EventBridgeClient(c));
    expect(
      await refusal(
        events.send(new PutEventsCommand({ Entries: [{ Source: 's', DetailType: 'd', Detail: '{}' }] })),
      ),
    ).toMatchObject({ name: 'AccessDeniedException' });
  });

  it('refuses a request whose resources it cannot name (PartiQL), failing closed', async () => {
    const ddb = client((c) => new DynamoDBClient(c));
    const denied = await refusal(
      ddb.send(new ExecuteStatementCommand({ Statement: 'DELETE FROM "plangate-gates"' })),
    );
    expect(denied).toMatchObject({ name: 'AccessDeniedException' });
    expect(denied?.message).toMatch(/cannot name the resources of dynamodb:ExecuteStatement/);
  });

  it('accepts only the credentials it issued: the key, its session token and its secret', async () => {
    const get = (credentials: object) =>
      refusal(
        client((c) => new SecretsManagerClient(c), credentials).send(
          new GetSecretValueCommand({ SecretId: 'plan/token' }),
        ),
      );
    expect(await get({ ...keys, accessKeyId: 'ASIAOTHER' })).toMatchObject({
      name: 'UnrecognizedClientException',
    });
    expect(await get({ accessKeyId: keys.accessKeyId, secretAccessKey: keys.secretAccessKey })).toMatchObject(
      { name: 'UnrecognizedClientException' },
    );
    expect(await get({ ...keys, secretAccessKey: 'guessed' })).toMatchObject({
      name: 'InvalidSignatureException',
    });
    const unsigned = await fetch(front.endpoint, {
      method: 'POST',
      headers: { 'x-amz-target': 'DynamoDB_20120810.GetItem', 'content-type': 'application/x-amz-json-1.0' },
      body: JSON.stringify({ TableName: 'plangate-gates', Key: { approvalId: { S: 'g1' } } }),
    });
    expect(unsigned.status).toBe(400);
    expect(await unsigned.json()).toMatchObject({
      __type: 'com.amazon.coral.service#MissingAuthenticationTokenException',
    });
  });
});

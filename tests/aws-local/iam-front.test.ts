/**
 * The IAM simulator's front through the ordinary SDK clients: signed requests of issued
 * credentials only, each action and resource put to the policy, refusals in each service's shape;
 * Lambda's Invoke of the account's functions; STS AssumeRole against the caller's policy and the
 * role's trust policy, its sessions held to their session policy.
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient, ExecuteStatementCommand } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
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

/** A second role: it may invoke the account's functions and assume Reader (whose trust policy names it). */
const callerArn = `arn:aws:iam::${account}:role/Caller`;
const callerKeys = {
  accessKeyId: 'ASIACALLER',
  secretAccessKey: randomBytes(20).toString('hex'),
  sessionToken: randomBytes(20).toString('hex'),
};
const echoArn = `arn:aws:lambda:${region}:${account}:function:echo`;
const untrustingArn = `arn:aws:iam::${account}:role/Untrusting`;
const callerPolicy = PolicyDocumentSchema.parse({
  Version: '2012-10-17',
  Statement: [
    {
      Effect: 'Allow',
      Action: 'lambda:InvokeFunction',
      Resource: `arn:aws:lambda:${region}:${account}:function:*`,
    },
    { Effect: 'Allow', Action: 'sts:AssumeRole', Resource: [roleArn, untrustingArn] },
  ],
});
const trusting = (principal: string, role: string) =>
  PolicyDocumentSchema.parse({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { AWS: principal }, Resource: role }],
  });
const invoked: unknown[] = [];

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
    credentials: [
      { ...keys, roleArn },
      { ...callerKeys, roleArn: callerArn },
    ],
    upstreams: { dynamodb: dynamo.endpoint, events: bus.endpoint, secretsmanager: secrets.endpoint },
    authorize: (request) =>
      evaluate(request, {
        identity: [
          request.principalArn === callerArn
            ? { name: 'CallerPolicy', document: callerPolicy }
            : { name: 'ReaderPolicy', document: policy },
        ],
      }),
    functions: {
      has: (arn) => arn === echoArn,
      invoke: async (_arn, event) => {
        invoked.push(event);
        return (event as { fail?: boolean }).fail
          ? { error: { name: 'Plangate.InvalidInput', message: 'no such step' } }
          : { result: { echo: event } };
      },
    },
    trustPolicyOf: (role) =>
      role === roleArn
        ? { name: 'Reader (trust policy)', document: trusting(callerArn, roleArn) }
        : role === untrustingArn
          ? {
              name: 'Untrusting (trust policy)',
              document: trusting(`arn:aws:iam::${account}:role/Other`, untrustingArn),
            }
          : undefined,
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

describe("the IAM front's Lambda Invoke", () => {
  const payload = (p: Uint8Array | undefined) => JSON.parse(Buffer.from(p ?? []).toString('utf8'));

  it('runs a function the caller may invoke and answers with its payload, or its error as Invoke does', async () => {
    const lambda = client((c) => new LambdaClient(c), callerKeys);
    const ok = await lambda.send(
      new InvokeCommand({ FunctionName: 'echo', Payload: Buffer.from('{"step":"build"}') }),
    );
    expect(ok.FunctionError).toBeUndefined();
    expect(payload(ok.Payload)).toEqual({ echo: { step: 'build' } });
    const failed = await lambda.send(
      new InvokeCommand({ FunctionName: echoArn, Payload: Buffer.from('{"fail":true}') }),
    );
    expect(failed.FunctionError).toBe('Unhandled');
    expect(payload(failed.Payload)).toMatchObject({
      errorType: 'Plangate.InvalidInput',
      errorMessage: 'no such step',
    });
    expect(front.decisions).toContainEqual(
      expect.objectContaining({
        roleArn: callerArn,
        action: 'lambda:InvokeFunction',
        resource: echoArn,
        allowed: true,
      }),
    );
  });

  it('refuses a caller its policy does not allow (403), before the function runs; a function not in the account is not found', async () => {
    const before = invoked.length;
    const denied = await refusal(
      client((c) => new LambdaClient(c)).send(
        new InvokeCommand({ FunctionName: 'echo', Payload: Buffer.from('{}') }),
      ),
    );
    expect(denied).toMatchObject({ name: 'AccessDeniedException', status: 403 });
    expect(denied?.message).toContain(
      `not authorized to perform: lambda:InvokeFunction on resource: ${echoArn}`,
    );
    expect(invoked.length).toBe(before);
    expect(
      await refusal(
        client((c) => new LambdaClient(c), callerKeys).send(new InvokeCommand({ FunctionName: 'other' })),
      ),
    ).toMatchObject({ name: 'ResourceNotFoundException', status: 404 });
  });
});

describe("the IAM front's STS AssumeRole", () => {
  const assume = (params: Record<string, unknown>, master: object = callerKeys) =>
    fromTemporaryCredentials({
      masterCredentials: master as never,
      params: { RoleArn: roleArn, RoleSessionName: 'run-1', ...params } as never,
      clientConfig: { region, endpoint: front.endpoint, maxAttempts: 1 },
    })();
  const sessionPolicy = JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: '*' }],
  });

  it("issues a session of the role that gets only what both the role's policy and the session policy allow", async () => {
    const session = await assume({ Policy: sessionPolicy });
    expect(session.sessionToken).toBeTruthy();
    const sm = client((c) => new SecretsManagerClient(c), session);
    expect((await sm.send(new GetSecretValueCommand({ SecretId: 'plan/token' }))).SecretString).toBe(
      'plan-token',
    );
    // The session policy allows it; the role does not.
    expect(await refusal(sm.send(new GetSecretValueCommand({ SecretId: 'platform/key' })))).toMatchObject({
      name: 'AccessDeniedException',
    });
    // The role allows it; the session policy does not.
    const doc = documentClient(client((c) => new DynamoDBClient(c), session));
    const put = await refusal(
      doc.send(new PutCommand({ TableName: 'plangate-gates', Item: { approvalId: 'g2' } })),
    );
    expect(put).toMatchObject({ name: 'AccessDeniedException' });
    expect(put?.message).toContain('no session policy allows the dynamodb:PutItem action');
    expect(front.decisions).toContainEqual(
      expect.objectContaining({
        roleArn,
        session: 'run-1',
        action: 'secretsmanager:GetSecretValue',
        allowed: true,
      }),
    );
  });

  it('refuses a role whose trust policy does not name the caller, and a caller whose policy does not allow it', async () => {
    await expect(assume({ RoleArn: untrustingArn })).rejects.toMatchObject({ name: 'AccessDenied' });
    await expect(assume({}, keys)).rejects.toMatchObject({ name: 'AccessDenied' });
  });

  it('refuses, by name, what it does not evaluate (managed session policies), and a malformed session policy', async () => {
    await expect(
      assume({ PolicyArns: [{ arn: `arn:aws:iam::${account}:policy/Broad` }] }),
    ).rejects.toMatchObject({ name: 'ValidationError', message: expect.stringContaining('PolicyArns') });
    await expect(assume({ Policy: '{"Statement":[]}' })).rejects.toMatchObject({
      name: 'MalformedPolicyDocumentException',
    });
  });
});

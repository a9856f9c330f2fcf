import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import dynalite from 'dynalite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PayloadTexts } from '../../lib/engine/core/json-text.ts';
import {
  createResourceInvoker,
  LambdaHandlerRegistry,
  parseResource,
} from '../../lib/engine/resources/index.ts';
import { sdkMetadata } from '../../lib/engine/resources/sdk-metadata.ts';
import { type LambdaLikeContext, StatesError, type TaskInvocation } from '../../lib/engine/types.ts';
import { CONFORMANCE_CASES } from '../conformance-dir.ts';

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

function task(resource: string, parameters: unknown, extra: Partial<TaskInvocation> = {}): TaskInvocation {
  return {
    resource,
    parameters,
    stateName: 'Step',
    executionArn: 'arn:aws:states:us-east-1:123456789012:execution:M:e1',
    stateMachineArn: 'arn:aws:states:us-east-1:123456789012:stateMachine:M',
    signal: new AbortController().signal,
    ...extra,
  };
}

async function failure(promise: Promise<unknown>): Promise<StatesError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StatesError);
  return error as StatesError;
}

class ApprovalRejected extends Error {
  override name = 'ApprovalRejected';
}

describe('Lambda integrations', () => {
  const seen: { event: unknown; context: LambdaLikeContext }[] = [];
  const invoke = createResourceInvoker({
    lambdaHandlers: {
      echo: async (event, context) => {
        seen.push({ event, context });
        return { got: event, fn: context.functionName };
      },
      'arn:aws:lambda:us-east-1:123456789012:function:fails': async () => {
        throw new ApprovalRejected('nope');
      },
      silent: async () => undefined,
      throwsString: async () => {
        throw 'plain';
      },
    },
  });

  it('returns the lambda:invoke response shape AWS records', async () => {
    const result = (await invoke(
      task('arn:aws:states:::lambda:invoke', { FunctionName: 'echo', Payload: { a: 1 } }),
    )) as {
      SdkHttpMetadata: { HttpHeaders: object };
      SdkResponseMetadata: { RequestId: string };
    };
    const recorded = JSON.parse(
      readFileSync(join(CONFORMANCE_CASES, 'context_object_test_result_selector.json'), 'utf8'),
    ).mockConfig.MockedResponses.TestStateMock['0'].Return;
    expect(Object.keys(result).sort()).toEqual(Object.keys(recorded).sort());
    expect(Object.keys(result.SdkHttpMetadata).sort()).toEqual(Object.keys(recorded.SdkHttpMetadata).sort());
    expect(Object.keys(result.SdkHttpMetadata.HttpHeaders).sort()).toEqual(
      Object.keys(recorded.SdkHttpMetadata.HttpHeaders).sort(),
    );
    expect(result).toMatchObject({
      ExecutedVersion: '$LATEST',
      StatusCode: 200,
      Payload: { got: { a: 1 }, fn: 'echo' },
    });
    expect(result.SdkResponseMetadata.RequestId).toBe(seen.at(-1)?.context.awsRequestId);
  });

  it('reports the response headers as the SDK metadata of any service, spelled and ordered alike', async () => {
    const result = (await invoke(
      task('arn:aws:states:::lambda:invoke', { FunctionName: 'echo', Payload: { text: 'é' } }),
    )) as {
      Payload: unknown;
      SdkHttpMetadata: { HttpHeaders: Record<string, string>; HttpStatusCode: number };
      SdkResponseMetadata: { RequestId: string };
    };
    const { HttpHeaders } = result.SdkHttpMetadata;
    // as Node hands received headers over: lower-cased
    const received = Object.fromEntries(
      Object.entries(HttpHeaders).map(([name, value]) => [name.toLowerCase(), value]),
    );
    const generic = sdkMetadata(received, 200, result.SdkResponseMetadata.RequestId);
    expect(JSON.stringify(result.SdkHttpMetadata)).toBe(JSON.stringify(generic.SdkHttpMetadata));
    expect(Number(HttpHeaders['Content-Length'])).toBe(Buffer.byteLength(JSON.stringify(result.Payload)));
    expect(Math.abs(Date.parse(String(HttpHeaders.Date)) - Date.now())).toBeLessThan(2000);
    expect(HttpHeaders['X-Amzn-Trace-Id']).toMatch(/^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Sampled=0$/);
  });

  it('remembers the text of a lambda:invoke response exactly as JSON.stringify writes it', async () => {
    for (const payload of [{ text: 'é "quoted" \\ \u2028' }, { '1': [], b: null, a: -0 }, 'text', 7]) {
      const texts = new PayloadTexts(); // the engine's memo, which the integration fills
      const result = await invoke(
        task(
          'arn:aws:states:::lambda:invoke',
          { FunctionName: 'echo', Payload: payload },
          { payloadTexts: texts },
        ),
      );
      expect(texts.of(result)).toBe(JSON.stringify(result));
    }
  });

  it('calls the handler with a Lambda-like context and a copy of the event', async () => {
    const payload = { nested: { x: 1 } };
    await invoke(
      task(
        'arn:aws:states:::lambda:invoke',
        { FunctionName: 'arn:aws:lambda:us-east-1:123456789012:function:echo:live', Payload: payload },
        { timeoutSeconds: 30 },
      ),
    );
    const { event, context } = seen.at(-1)!;
    expect(event).toEqual(payload);
    expect(event).not.toBe(payload);
    expect(context).toMatchObject({
      functionName: 'echo',
      functionVersion: '$LATEST',
      invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:echo:live',
      logGroupName: '/aws/lambda/echo',
      callbackWaitsForEmptyEventLoop: true,
    });
    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(29_000);
    expect(context.getRemainingTimeInMillis()).toBeLessThanOrEqual(30_000);
  });

  it('returns the function result directly for a plain function ARN', async () => {
    const result = await invoke(task('arn:aws:lambda:us-east-1:123456789012:function:echo', { b: 2 }));
    expect(result).toEqual({ got: { b: 2 }, fn: 'echo' });
    expect(await invoke(task('arn:aws:lambda:us-east-1:123456789012:function:silent', {}))).toBeNull();
  });

  it('maps a thrown error to Error = errorType, Cause = the runtime error payload', async () => {
    const error = await failure(
      invoke(task('arn:aws:states:::lambda:invoke', { FunctionName: 'fails', Payload: {} })),
    );
    expect(error.error).toBe('ApprovalRejected');
    const cause = JSON.parse(error.cause ?? '');
    expect(cause).toMatchObject({ errorType: 'ApprovalRejected', errorMessage: 'nope' });
    expect(cause.trace[0]).toBe('ApprovalRejected: nope');
    const plain = await failure(
      invoke(task('arn:aws:lambda:us-east-1:123456789012:function:throwsString', {})),
    );
    expect(plain.error).toBe('string');
    expect(JSON.parse(plain.cause ?? '')).toEqual({ errorType: 'string', errorMessage: 'plain', trace: [] });
  });

  it('fails an unknown function with Lambda.ResourceNotFoundException as AWS words it', async () => {
    const error = await failure(
      invoke(task('arn:aws:states:::lambda:invoke', { FunctionName: 'ghost', Payload: {} })),
    );
    expect(error.error).toBe('Lambda.ResourceNotFoundException');
    expect(error.cause).toMatch(
      /^Function not found: arn:aws:lambda:us-east-1:123456789012:function:ghost:\$LATEST \(Service: AWSLambda; Status Code: 404; Error Code: ResourceNotFoundException; Request ID: [0-9a-f-]{36}; Proxy: null\)$/,
    );
  });

  it('dispatches .waitForTaskToken to the handler with the token in its payload', async () => {
    await invoke(
      task(
        'arn:aws:states:::lambda:invoke.waitForTaskToken',
        { FunctionName: 'echo', Payload: { token: 'tok-1' } },
        { taskToken: 'tok-1' },
      ),
    );
    expect(seen.at(-1)?.event).toEqual({ token: 'tok-1' });
  });

  it('loads handler modules lazily and reports load failures as Lambda does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plangate-lambda-'));
    try {
      await writeFile(
        join(dir, 'gate.mjs'),
        'export const handler = async (event) => ({ approved: event.n * 2 });\n',
      );
      const registry = new LambdaHandlerRegistry()
        .registerModule('gate', `${join(dir, 'gate.mjs')}#handler`)
        .registerModule('missing', `${join(dir, 'nope.mjs')}#handler`)
        .registerModule('noexport', `${join(dir, 'gate.mjs')}#other`);
      const lazy = createResourceInvoker({ lambdaHandlers: registry });
      expect(await lazy(task('arn:aws:lambda:us-east-1:123456789012:function:gate', { n: 21 }))).toEqual({
        approved: 42,
      });
      expect(
        (await failure(lazy(task('arn:aws:lambda:us-east-1:123456789012:function:missing', {})))).error,
      ).toBe('Runtime.ImportModuleError');
      expect(
        (await failure(lazy(task('arn:aws:lambda:us-east-1:123456789012:function:noexport', {})))).error,
      ).toBe('Runtime.HandlerNotFound');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('DynamoDB integrations against dynalite', () => {
  let server: Server;
  let client: DynamoDBClient;
  let invoke: ReturnType<typeof createResourceInvoker>;

  beforeAll(async () => {
    server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    client = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials,
      maxAttempts: 1,
    });
    await client.send(
      new CreateTableCommand({
        TableName: 'events',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'N' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    invoke = createResourceInvoker({ dynamodb: client });
  });

  afterAll(async () => {
    client?.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const key = { pk: { S: 'exec-1' }, sk: { N: '1' } };

  it('puts, updates, gets and deletes an item with the optimized integration', async () => {
    const put = (await invoke(
      task('arn:aws:states:::dynamodb:putItem', {
        TableName: 'events',
        Item: { ...key, type: { S: 'TASK_STARTED' } },
      }),
    )) as Record<
      string,
      { HttpStatusCode?: number; RequestId?: string; HttpHeaders?: Record<string, string> }
    >;
    expect(put.SdkHttpMetadata?.HttpStatusCode).toBe(200);
    expect(put.SdkHttpMetadata?.HttpHeaders?.['Content-Type']).toBe('application/x-amz-json-1.0');
    expect(put.SdkResponseMetadata?.RequestId).toBeTruthy();
    const updated = await invoke(
      task('arn:aws:states:::dynamodb:updateItem', {
        TableName: 'events',
        Key: key,
        UpdateExpression: 'SET #t = :t',
        ExpressionAttributeNames: { '#t': 'type' },
        ExpressionAttributeValues: { ':t': { S: 'TASK_COMPLETED' } },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    expect(updated).toMatchObject({ Attributes: { type: { S: 'TASK_COMPLETED' } } });
    const got = await invoke(task('arn:aws:states:::dynamodb:getItem', { TableName: 'events', Key: key }));
    expect(got).toMatchObject({ Item: { ...key, type: { S: 'TASK_COMPLETED' } } });
    await invoke(task('arn:aws:states:::dynamodb:deleteItem', { TableName: 'events', Key: key }));
    const gone = (await invoke(
      task('arn:aws:states:::dynamodb:getItem', { TableName: 'events', Key: key }),
    )) as object;
    expect('Item' in gone).toBe(false);
  });

  it('maps a failed condition to DynamoDB.ConditionalCheckFailedException', async () => {
    const parameters = { TableName: 'events', Item: key, ConditionExpression: 'attribute_not_exists(pk)' };
    await invoke(task('arn:aws:states:::dynamodb:putItem', parameters));
    const error = await failure(invoke(task('arn:aws:states:::dynamodb:putItem', parameters)));
    expect(error.error).toBe('DynamoDB.ConditionalCheckFailedException');
    expect(error.cause).toMatch(
      /\(Service: AmazonDynamoDBv2; Status Code: 400; Error Code: ConditionalCheckFailedException; Request ID: .*; Proxy: null\)$/,
    );
  });

  it('maps a missing table and an invalid request as the optimized integration does', async () => {
    const missing = await failure(
      invoke(task('arn:aws:states:::dynamodb:getItem', { TableName: 'nope', Key: key })),
    );
    expect(missing.error).toBe('DynamoDB.ResourceNotFoundException');
    const invalid = await failure(
      invoke(task('arn:aws:states:::dynamodb:putItem', { TableName: '/bad', Item: key })),
    );
    expect(invalid.error).toBe('DynamoDB.AmazonDynamoDBException');
    expect(invalid.cause).toContain('Error Code: ValidationException');
  });

  it('queries through aws-sdk:dynamodb:query and returns the bare API response', async () => {
    for (const sk of ['2', '3']) {
      await invoke(
        task('arn:aws:states:::aws-sdk:dynamodb:putItem', {
          TableName: 'events',
          Item: { pk: { S: 'exec-2' }, sk: { N: sk } },
        }),
      );
    }
    const result = (await invoke(
      task('arn:aws:states:::aws-sdk:dynamodb:query', {
        TableName: 'events',
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: 'exec-2' } },
      }),
    )) as Record<string, unknown>;
    expect(result.Count).toBe(2);
    expect(result.Items).toEqual([
      { pk: { S: 'exec-2' }, sk: { N: '2' } },
      { pk: { S: 'exec-2' }, sk: { N: '3' } },
    ]);
    expect(result).not.toHaveProperty('SdkHttpMetadata');
    expect(result).not.toHaveProperty('$metadata');
  });

  it('names aws-sdk errors with the SDK v2 service prefix', async () => {
    const missing = await failure(
      invoke(task('arn:aws:states:::aws-sdk:dynamodb:putItem', { TableName: 'nope', Item: key })),
    );
    expect(missing.error).toBe('DynamoDb.ResourceNotFoundException');
    expect(missing.cause).toMatch(/\(Service: DynamoDb, Status Code: 400, Request ID: .*\)$/);
    const invalid = await failure(
      invoke(task('arn:aws:states:::aws-sdk:dynamodb:putItem', { TableName: '/bad', Item: key })),
    );
    expect(invalid.error).toBe('DynamoDb.DynamoDbException');
  });

  it('fails DynamoDB tasks clearly when no DynamoDB endpoint is configured', async () => {
    const error = await failure(
      createResourceInvoker()(task('arn:aws:states:::dynamodb:getItem', { TableName: 'events', Key: key })),
    );
    expect(error.error).toBe('States.Runtime');
    expect(error.cause).toContain('arn:aws:states:::dynamodb:getItem');
  });
});

describe('EventBridge putEvents against a local PutEvents endpoint', () => {
  let server: Server;
  let client: EventBridgeClient;
  const received: { target: string | undefined; body: { Entries: Record<string, unknown>[] } }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      req.on('end', () => {
        const body = JSON.parse(text) as { Entries: Record<string, unknown>[] };
        received.push({ target: req.headers['x-amz-target'] as string | undefined, body });
        const entries = body.Entries.map((entry, i) =>
          entry.Source
            ? { EventId: `event-${received.length}-${i}` }
            : {
                ErrorCode: 'InvalidArgument',
                ErrorMessage: 'Parameter Source is not valid. Reason: Source is a required argument.',
              },
        );
        const failed = entries.filter((entry) => 'ErrorCode' in entry).length;
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': 'req-1' });
        res.end(JSON.stringify({ Entries: entries, FailedEntryCount: failed }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    client = new EventBridgeClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials,
      maxAttempts: 1,
    });
  });

  afterAll(async () => {
    client?.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends the entries (an object Detail serialized) and returns AWS result shape', async () => {
    const invoke = createResourceInvoker({ eventBridge: client });
    const result = await invoke(
      task('arn:aws:states:::events:putEvents', {
        Entries: [
          { Source: 'plangate', DetailType: 'TASK_COMPLETED', Detail: { task: 1 }, EventBusName: 'plangate' },
        ],
      }),
    );
    expect(result).toEqual({ Entries: [{ EventId: 'event-1-0' }], FailedEntryCount: 0 });
    expect(received[0]?.target).toBe('AWSEvents.PutEvents');
    expect(received[0]?.body.Entries[0]).toMatchObject({
      Source: 'plangate',
      Detail: '{"task":1}',
      EventBusName: 'plangate',
    });
  });

  it('fails with EventBridge.FailedEntry and the whole response as cause when an entry fails', async () => {
    const invoke = createResourceInvoker({ eventBridge: client });
    const error = await failure(
      invoke(
        task('arn:aws:states:::events:putEvents', {
          Entries: [
            { Source: 'a', DetailType: 'x', Detail: '{}' },
            { DetailType: 'x', Detail: '{}' },
          ],
        }),
      ),
    );
    expect(error.error).toBe('EventBridge.FailedEntry');
    expect(JSON.parse(error.cause ?? '')).toEqual({
      Entries: [
        { EventId: 'event-2-0' },
        {
          ErrorCode: 'InvalidArgument',
          ErrorMessage: 'Parameter Source is not valid. Reason: Source is a required argument.',
        },
      ],
      FailedEntryCount: 1,
    });
  });
});

describe('resources nobody serves', () => {
  it.each([
    'arn:aws:states:::sns:publish',
    'arn:aws:states:::dynamodb:scan',
    'arn:aws:states:::aws-sdk:s3:getObject',
    'arn:aws:states:us-east-1:123456789012:activity:A',
    'not-an-arn',
  ])('fails %s with States.Runtime naming the resource', async (resource) => {
    const error = await failure(createResourceInvoker()(task(resource, {})));
    expect(error.error).toBe('States.Runtime');
    expect(error.cause).toContain(`The resource provided ${resource} not recognized`);
  });

  it('hands them to a fallback invoker when one is given', async () => {
    const invoke = createResourceInvoker({ fallback: async ({ resource }) => ({ handledBy: resource }) });
    expect(await invoke(task('arn:aws:states:::states:startExecution.sync:2', {}))).toEqual({
      handledBy: 'arn:aws:states:::states:startExecution.sync:2',
    });
  });

  it('parses resource ARNs', () => {
    expect(parseResource('arn:aws:states:::lambda:invoke.waitForTaskToken')).toEqual({
      kind: 'integration',
      service: 'lambda',
      action: 'invoke',
      pattern: 'wait-for-task-token',
    });
    expect(parseResource('arn:aws:states:::states:startExecution.sync:2')).toMatchObject({ pattern: 'sync' });
    expect(parseResource('arn:aws:states:::aws-sdk:dynamodb:query')).toMatchObject({
      kind: 'aws-sdk',
      service: 'dynamodb',
      action: 'query',
    });
    expect(parseResource('arn:aws:lambda:us-east-1:1:function:f:alias')).toEqual({ kind: 'lambda-function' });
    expect(parseResource('arn:aws:states:::lambda:invoke.bogus')).toEqual({ kind: 'unknown' });
  });
});

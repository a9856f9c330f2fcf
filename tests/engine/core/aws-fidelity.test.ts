/**
 * Behaviour the engine takes from AWS's recorded executions (LocalStack's AWS-validated snapshots)
 * and documentation at the edges the conformance sample does not cover: error causes for invalid
 * Map input and *Path values, a task timeout's error output, the context inside `.sync` tasks,
 * and the parameter checks of `apigateway:invoke` before a task is scheduled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../../lib/engine/engine.ts';

const ROLE = 'arn:aws:iam::123456789012:role/test';
const engines: Engine[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
});

function engine(options: Partial<EngineOptions> = {}): Engine {
  const e = createEngine({ storeDir: undefined, timeScale: 0, invokeResource: async () => ({}), ...options });
  engines.push(e);
  return e;
}

async function run(e: Engine, definition: object, input: unknown = {}) {
  const { stateMachineArn } = await e.createStateMachine({
    name: `M${engines.length}${Math.random().toString(36).slice(2, 8)}`,
    definition: JSON.stringify(definition),
    roleArn: ROLE,
  });
  const { executionArn } = await e.startExecution({
    stateMachineArn: String(stateMachineArn),
    input: JSON.stringify(input),
  });
  const described = await e.awaitExecution(String(executionArn));
  const { events } = await e.getExecutionHistory({ executionArn: String(executionArn), maxResults: 1000 });
  return { described, executionArn: String(executionArn), types: (events ?? []).map((ev) => ev.type) };
}

const pass = { StartAt: 'P', States: { P: { Type: 'Pass', End: true } } };

describe('Map: AWS causes for invalid items and *Path values', () => {
  it.each([
    [1, '1'],
    ['string', '"string"'],
    [true, 'true'],
    [{ foo: 'bar' }, '{"foo":"bar"}'],
    [null, 'null'],
  ])('names the value, not its type, when the items are not an array: %j', async (items, shown) => {
    const { described } = await run(
      engine(),
      {
        QueryLanguage: 'JSONata',
        StartAt: 'Start',
        States: {
          Start: { Type: 'Pass', Output: '{% $states.input.items %}', Next: 'MapIterateState' },
          MapIterateState: { Type: 'Map', MaxConcurrency: 1, ItemProcessor: pass, End: true },
        },
      },
      { items },
    );
    expect(described.error).toBe('States.QueryEvaluationError');
    expect(described.cause).toBe(
      `An error occurred while executing the state 'MapIterateState' (entered at the event id #4). Map state input must be an array but was: ${shown}`,
    );
  });

  it('names the value of ItemsPath that is not an array (JSONPath)', async () => {
    const { described } = await run(
      engine(),
      { StartAt: 'M', States: { M: { Type: 'Map', ItemsPath: '$.items', ItemProcessor: pass, End: true } } },
      { items: 'abc' },
    );
    expect(described.error).toBe('States.Runtime');
    expect(described.cause).toBe(
      `An error occurred while executing the state 'M' (entered at the event id #2). Map state input must be an array but was: "abc"`,
    );
  });

  it.each([
    [
      'MaxConcurrencyPath',
      'NoNumber',
      'The MaxConcurrencyPath field refers to value "NoNumber" which is not a valid integer: $.V',
    ],
    [
      'MaxConcurrencyPath',
      {},
      'The MaxConcurrencyPath field refers to value "{}" which is not a valid integer: $.V',
    ],
    [
      'ToleratedFailureCountPath',
      'NoNumber',
      'The ToleratedFailureCountPath field refers to value "NoNumber" which is not a valid integer: $.V',
    ],
    [
      'ToleratedFailurePercentagePath',
      'NoNumber',
      'The ToleratedFailurePercentagePath field refers to value "NoNumber" which is not a valid float: $.V',
    ],
    [
      'ToleratedFailurePercentagePath',
      [1],
      'The ToleratedFailurePercentagePath field refers to value "[1]" which is not a valid float: $.V',
    ],
  ])('%s with %j: a string shows unquoted, as AWS words it', async (field, value, cause) => {
    const { described } = await run(
      engine(),
      {
        StartAt: 'MapState',
        States: {
          MapState: { Type: 'Map', ItemsPath: '$.Items', [field]: '$.V', ItemProcessor: pass, End: true },
        },
      },
      { Items: [0], V: value },
    );
    expect(described.error).toBe('States.Runtime');
    expect(described.cause).toBe(
      `An error occurred while executing the state 'MapState' (entered at the event id #2). ${cause}`,
    );
  });

  it('a JSONata Items expression that yields a function: "returned an unsupported result type."', async () => {
    const { described } = await run(engine(), {
      QueryLanguage: 'JSONata',
      StartAt: 'MapIterateState',
      States: {
        MapIterateState: {
          Type: 'Map',
          MaxConcurrency: 1,
          Items: '{% $fn := function($x){$x} %}',
          ItemProcessor: pass,
          End: true,
        },
      },
    });
    expect(described.error).toBe('States.QueryEvaluationError');
    expect(described.cause).toBe(
      "An error occurred while executing the state 'MapIterateState' (entered at the event id #2). The JSONata expression '$fn := function($x){$x}' specified for the field 'Items' returned an unsupported result type.",
    );
  });
});

describe('Task: TimeoutSecondsPath / HeartbeatSecondsPath values that are not numbers', () => {
  it.each([
    [
      'TimeoutSecondsPath',
      'abc',
      'The TimeoutSecondsPath field refers to value "abc" which is not a valid integer: $.t',
    ],
    [
      'TimeoutSecondsPath',
      { a: 1 },
      'The TimeoutSecondsPath field refers to value "{"a":1}" which is not a valid integer: $.t',
    ],
    [
      'HeartbeatSecondsPath',
      1.5,
      'The HeartbeatSecondsPath field refers to value "1.5" which is not a valid integer: $.t',
    ],
  ])('%s with %j fails with the wording AWS uses for *Path numbers', async (field, value, cause) => {
    const { described, types } = await run(
      engine(),
      {
        StartAt: 'T',
        States: {
          T: { Type: 'Task', Resource: 'arn:aws:states:::lambda:invoke', [field]: '$.t', End: true },
        },
      },
      { t: value },
    );
    expect(described.error).toBe('States.Runtime');
    expect(described.cause).toBe(
      `An error occurred while executing the state 'T' (entered at the event id #2). ${cause}`,
    );
    expect(types).not.toContain('TaskScheduled');
  });

  it('takes a numeric string, as the Map takes one for MaxConcurrencyPath', async () => {
    const { described } = await run(
      engine(),
      {
        StartAt: 'T',
        States: {
          T: {
            Type: 'Task',
            Resource: 'arn:aws:states:::lambda:invoke',
            TimeoutSecondsPath: '$.t',
            End: true,
          },
        },
      },
      { t: '30' },
    );
    expect(described.status).toBe('SUCCEEDED');
  });
});

describe('Task timeout: the error output has an empty Cause, the events and the execution none', () => {
  const catchTimeout = {
    StartAt: 'Start',
    States: {
      Start: {
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke',
        TimeoutSeconds: 5,
        Parameters: { FunctionName: 'slow' },
        Catch: [{ ErrorEquals: ['States.Timeout'], Next: 'EndWithHandler' }],
        End: true,
      },
      EndWithHandler: { Type: 'Pass', ResultPath: '$.error', End: true },
    },
  };
  // what AWS recorded for this machine (test_task_service_lambda::test_invoke_timeout)
  const recorded = { Error: 'States.Timeout', Cause: '', error: { Error: 'States.Timeout', Cause: '' } };
  const never = (invocation: { signal?: AbortSignal }) =>
    new Promise((_, reject) =>
      invocation.signal?.addEventListener('abort', () => reject(new Error('aborted'))),
    );

  it('a deadline that passed', async () => {
    const e = engine({ timeScale: 0.001, invokeResource: never });
    const { described, executionArn } = await run(e, catchTimeout);
    expect(JSON.parse(String(described.output))).toEqual(recorded);
    const { events } = await e.getExecutionHistory({ executionArn });
    const timedOut = events?.find((ev) => ev.type === 'TaskTimedOut');
    expect(timedOut?.taskTimedOutEventDetails).toEqual({
      error: 'States.Timeout',
      resource: 'invoke',
      resourceType: 'lambda',
    });
  });

  it('a mocked States.Timeout (a MockConfigFile Throw without Cause stands for a timeout)', async () => {
    const e = engine({
      mockConfig: {
        StateMachines: { Timeouts: { TestCases: { T: { Start: 'TimesOut' } } } },
        MockedResponses: { TimesOut: { '0': { Throw: { Error: 'States.Timeout' } } } },
      },
    });
    const { stateMachineArn } = await e.createStateMachine({
      name: 'Timeouts',
      definition: JSON.stringify(catchTimeout),
      roleArn: ROLE,
    });
    const { executionArn } = await e.startExecution({ stateMachineArn: `${stateMachineArn}#T`, input: '{}' });
    const described = await e.awaitExecution(String(executionArn));
    expect(JSON.parse(String(described.output))).toEqual(recorded);
  });

  it('uncaught, the execution fails with States.Timeout and no cause', async () => {
    const e = engine({ timeScale: 0.001, invokeResource: never });
    const { Catch: _, ...uncaught } = catchTimeout.States.Start;
    const { described } = await run(e, { StartAt: 'Start', States: { Start: uncaught } });
    expect(described.status).toBe('FAILED');
    expect(described.error).toBe('States.Timeout');
    expect(described).not.toHaveProperty('cause');
  });
});

describe('.sync integrations: $$.Task.Token', () => {
  const parent = (childArn: string) => ({
    StartAt: 'StartExecution',
    States: {
      StartExecution: {
        Type: 'Task',
        Resource: 'arn:aws:states:::states:startExecution.sync',
        Parameters: { StateMachineArn: childArn, Input: { 'TaskToken.$': '$$.Task.Token' } },
        End: true,
      },
    },
  });

  it('is in the context, and SendTaskSuccess with it ends the task (test_callback::test_sync_with_task_token)', async () => {
    const e = engine({ timeScale: 1 });
    const child = await e.createStateMachine({
      name: 'Child',
      definition: JSON.stringify({
        StartAt: 'Hold',
        States: { Hold: { Type: 'Wait', Seconds: 3600, End: true } },
      }),
      roleArn: ROLE,
    });
    const { stateMachineArn } = await e.createStateMachine({
      name: 'Parent',
      definition: JSON.stringify(parent(String(child.stateMachineArn))),
      roleArn: ROLE,
    });
    const { executionArn } = await e.startExecution({ stateMachineArn, input: '{}' });
    let childInput: { TaskToken?: string } = {};
    while (childInput.TaskToken === undefined) {
      const parentNow = await e.describeExecution({ executionArn: String(executionArn) });
      expect(parentNow.status, String(parentNow.cause)).toBe('RUNNING');
      const { executions } = await e.listExecutions({ stateMachineArn: child.stateMachineArn });
      const started = executions?.[0]?.executionArn;
      if (started)
        childInput = JSON.parse(String((await e.describeExecution({ executionArn: started })).input));
      else await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await e.sendTaskSuccess({ taskToken: childInput.TaskToken, output: '"SQS_SEND_MESSAGE_AND_WAIT"' });
    const described = await e.awaitExecution(String(executionArn));
    expect(described.status).toBe('SUCCEEDED');
    expect(described.output).toBe('"SQS_SEND_MESSAGE_AND_WAIT"');
    const { events } = await e.getExecutionHistory({ executionArn: String(executionArn) });
    expect(events?.map((ev) => ev.type)).toEqual([
      'ExecutionStarted',
      'TaskStateEntered',
      'TaskScheduled',
      'TaskStarted',
      'TaskSubmitted',
      'TaskSucceeded',
      'TaskStateExited',
      'ExecutionSucceeded',
    ]);
    // the token itself stays out of the history, as for .waitForTaskToken tasks
    expect(JSON.stringify(events)).not.toContain(childInput.TaskToken);
  });

  it('is in the context of a mocked .sync task too', async () => {
    const e = engine({
      mockConfig: {
        StateMachines: { Synced: { TestCases: { T: { StartExecution: 'Done' } } } },
        MockedResponses: { Done: { '0': { Return: 'SQS_SEND_MESSAGE_AND_WAIT' } } },
      },
    });
    const { stateMachineArn } = await e.createStateMachine({
      name: 'Synced',
      definition: JSON.stringify(parent('arn:aws:states:us-east-1:123456789012:stateMachine:Child')),
      roleArn: ROLE,
    });
    const { executionArn } = await e.startExecution({ stateMachineArn: `${stateMachineArn}#T`, input: '{}' });
    const described = await e.awaitExecution(String(executionArn));
    expect(described.output).toBe('"SQS_SEND_MESSAGE_AND_WAIT"');
  });
});

describe('apigateway:invoke: parameters checked before the task is scheduled', () => {
  const invoke = {
    StartAt: 'ApiGatewayInvoke',
    States: {
      ApiGatewayInvoke: {
        Type: 'Task',
        Resource: 'arn:aws:states:::apigateway:invoke',
        Parameters: {
          'ApiEndpoint.$': '$.ApiEndpoint',
          'Method.$': '$.Method',
          'Path.$': '$.Path',
          'Stage.$': '$.Stage',
          'RequestBody.$': '$.RequestBody',
          'Headers.$': '$.Headers',
        },
        End: true,
      },
    },
  };
  const input = (headers: unknown, method = 'POST') => ({
    ApiEndpoint: 'abc123.execute-api.us-east-1.amazonaws.com',
    Method: method,
    Path: 'id_func',
    Stage: 'sfn-apigw-api',
    RequestBody: { message: 'HelloWorld!' },
    Headers: headers,
  });

  it('a header that is not a list of strings fails with States.Runtime and nothing scheduled (test_invoke_with_headers[singleStringHeader])', async () => {
    const calls: unknown[] = [];
    const e = engine({ invokeResource: async (i) => calls.push(i) });
    const { described, types } = await run(e, invoke, input({ custom_header: 'singleStringHeader' }));
    expect(described.error).toBe('States.Runtime');
    const parameters = JSON.stringify({
      ApiEndpoint: 'abc123.execute-api.us-east-1.amazonaws.com',
      Method: 'POST',
      Path: 'id_func',
      Stage: 'sfn-apigw-api',
      RequestBody: { message: 'HelloWorld!' },
      Headers: { custom_header: 'singleStringHeader' },
    });
    expect(described.cause).toBe(
      `An error occurred while executing the state 'ApiGatewayInvoke' (entered at the event id #2). The Parameters '${parameters}' could not be used to start the Task: [The value of the field 'Headers' has an invalid format]`,
    );
    expect(types).toEqual(['ExecutionStarted', 'TaskStateEntered', 'ExecutionFailed']);
    expect(calls).toEqual([]);
  });

  it('lists of strings pass (test_invoke_with_headers[custom_header2])', async () => {
    const calls: unknown[] = [];
    const e = engine({ invokeResource: async (i) => calls.push(i) && { StatusCode: 200 } });
    const { described } = await run(e, invoke, input({ custom_header: ['arrayHeader0', 'arrayHeader1'] }));
    expect(described.status).toBe('SUCCEEDED');
    expect(calls).toHaveLength(1);
  });

  it.each([
    [{ Host: ['x'] }, 'POST', "The 'Headers' field contains unsupported values: Host"],
    [{ 'X-Amz-Date': ['x'] }, 'POST', "The 'Headers' field contains unsupported values: X-Amz-Date"],
    [{ ok: ['x'] }, 'FETCH', "The value of the field 'Method' has an invalid format"],
  ])('refuses %j with method %s', async (headers, method, problem) => {
    const { described, types } = await run(engine(), invoke, input(headers, method));
    expect(described.error).toBe('States.Runtime');
    expect(described.cause).toContain(`could not be used to start the Task: [${problem}]`);
    expect(types).not.toContain('TaskScheduled');
  });
});

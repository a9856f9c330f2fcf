import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../../lib/engine/engine.ts';
import { SfnServiceError, StatesError, type TaskInvocation } from '../../../lib/engine/types.ts';

const ROLE = 'arn:aws:iam::123456789012:role/test';
const engines: Engine[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function engine(options: Partial<EngineOptions> = {}): Engine {
  const e = createEngine({
    storeDir: undefined,
    timeScale: 0,
    invokeResource: async () => ({}),
    ...options,
  });
  engines.push(e);
  return e;
}

async function run(e: Engine, definition: object, input: unknown = {}, name = 'M') {
  const { stateMachineArn } = await e.createStateMachine({
    name,
    definition: JSON.stringify(definition),
    roleArn: ROLE,
  });
  const { executionArn } = await e.startExecution({
    stateMachineArn: String(stateMachineArn),
    input: JSON.stringify(input),
  });
  const described = await e.awaitExecution(String(executionArn));
  return { stateMachineArn: String(stateMachineArn), executionArn: String(executionArn), described };
}

async function historyTypes(e: Engine, executionArn: string): Promise<string[]> {
  const { events } = await e.getExecutionHistory({ executionArn, maxResults: 1000 });
  return (events ?? []).map((ev) => String(ev.type));
}

async function rejects(work: Promise<unknown>): Promise<SfnServiceError> {
  try {
    await work;
  } catch (error) {
    if (error instanceof SfnServiceError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

const tokenMachine = {
  StartAt: 'Gate',
  States: {
    Gate: {
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { FunctionName: 'gate', Payload: { 'token.$': '$$.Task.Token' } },
      HeartbeatSeconds: 1,
      End: true,
    },
  },
};

describe('task tokens', () => {
  function tokenEngine(options: Partial<EngineOptions> = {}) {
    const tokens: string[] = [];
    const e = engine({
      timeScale: 1,
      invokeResource: async (inv: TaskInvocation) => {
        tokens.push(String(inv.taskToken));
        return {};
      },
      ...options,
    });
    return { e, tokens };
  }

  async function startWaiting(e: Engine, tokens: string[]) {
    const { stateMachineArn } = await e.createStateMachine({
      name: 'T',
      definition: JSON.stringify(tokenMachine),
      roleArn: ROLE,
    });
    const { executionArn } = await e.startExecution({ stateMachineArn: String(stateMachineArn) });
    while (tokens.length === 0) await new Promise((r) => setTimeout(r, 5));
    return { executionArn: String(executionArn), token: tokens[0] as string };
  }

  it('completes the waiting task with SendTaskSuccess; the token is then closed', async () => {
    const { e, tokens } = tokenEngine();
    const { executionArn, token } = await startWaiting(e, tokens);
    expect(token).toMatch(/^pgt1\.[A-Za-z0-9_-]{43}$/);
    await e.sendTaskSuccess({ taskToken: token, output: '{"ok":true}' });
    const described = await e.awaitExecution(executionArn);
    expect(described.status).toBe('SUCCEEDED');
    expect(JSON.parse(String(described.output))).toEqual({ ok: true });
    expect((await rejects(e.sendTaskSuccess({ taskToken: token, output: '{}' }))).code).toBe('TaskTimedOut');
    const history = await e.getExecutionHistory({ executionArn });
    expect(JSON.stringify(history)).not.toContain(token);
  });

  it('fails the task with SendTaskFailure and answers AWS errors for bad tokens', async () => {
    const { e, tokens } = tokenEngine();
    const { executionArn, token } = await startWaiting(e, tokens);
    expect((await rejects(e.sendTaskSuccess({ taskToken: 'nope', output: '{}' }))).code).toBe('InvalidToken');
    const unknown = `pgt1.${'A'.repeat(43)}`;
    expect((await rejects(e.sendTaskSuccess({ taskToken: unknown, output: '{}' }))).code).toBe(
      'TaskDoesNotExist',
    );
    expect((await rejects(e.sendTaskSuccess({ taskToken: token, output: '{bad' }))).code).toBe(
      'InvalidOutput',
    );
    await e.sendTaskFailure({ taskToken: token, error: 'Rejected', cause: 'no' });
    const described = await e.awaitExecution(executionArn);
    expect(described).toMatchObject({ status: 'FAILED', error: 'Rejected', cause: 'no' });
  });

  it('closes the token of a task whose dispatch failed, with or without a deadline: a late answer gets TaskTimedOut', async () => {
    for (const deadline of [{}, { TimeoutSeconds: 60 }]) {
      const tokens: string[] = [];
      const e = engine({
        timeScale: 1,
        invokeResource: async (inv: TaskInvocation) => {
          tokens.push(String(inv.taskToken));
          throw new StatesError('Queue.Unavailable', 'the queue is down');
        },
      });
      const gate = {
        Type: 'Task',
        Resource: 'arn:aws:states:::sqs:sendMessage.waitForTaskToken',
        Parameters: { QueueUrl: 'q', MessageBody: { 'token.$': '$$.Task.Token' } },
        End: true,
        ...deadline,
      };
      const { executionArn, described } = await run(e, { StartAt: 'Gate', States: { Gate: gate } });
      expect(described).toMatchObject({ status: 'FAILED', error: 'Queue.Unavailable' });
      const types = await historyTypes(e, executionArn);
      expect(types).toContain('TaskFailed');
      expect(types).not.toContain('TaskSubmitted');
      expect((await rejects(e.sendTaskSuccess({ taskToken: tokens[0] as string, output: '{}' }))).code).toBe(
        'TaskTimedOut',
      );
    }
  });

  it('closes the token of a task whose execution was stopped', async () => {
    const { e, tokens } = tokenEngine();
    const { executionArn, token } = await startWaiting(e, tokens);
    await e.stopExecution({ executionArn });
    expect((await e.awaitExecution(executionArn)).status).toBe('ABORTED');
    expect((await rejects(e.sendTaskSuccess({ taskToken: token, output: '{}' }))).code).toBe('TaskTimedOut');
  });

  it('times out without heartbeats (States.HeartbeatTimeout) and heartbeats keep it alive', async () => {
    const { e, tokens } = tokenEngine({ timeScale: 0.1 });
    const { executionArn, token } = await startWaiting(e, tokens);
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 60));
      await e.sendTaskHeartbeat({ taskToken: token });
    }
    expect((await e.describeExecution({ executionArn })).status).toBe('RUNNING');
    const described = await e.awaitExecution(executionArn);
    expect(described).toMatchObject({ status: 'FAILED', error: 'States.HeartbeatTimeout' });
    expect(await historyTypes(e, executionArn)).toContain('TaskTimedOut');
  });
});

describe('retry, catch and parallel', () => {
  it('retries by the matching retrier, then catches into ResultPath', async () => {
    let calls = 0;
    const e = engine({
      invokeResource: async () => {
        calls++;
        throw new StatesError('Boom', `attempt ${calls}`);
      },
    });
    const { described } = await run(
      e,
      {
        StartAt: 'T',
        States: {
          T: {
            Type: 'Task',
            Resource: 'arn:aws:lambda:us-east-1:123456789012:function:f',
            Retry: [
              { ErrorEquals: ['Other'], MaxAttempts: 5 },
              { ErrorEquals: ['States.ALL'], MaxAttempts: 2, IntervalSeconds: 1 },
            ],
            Catch: [{ ErrorEquals: ['Boom'], ResultPath: '$.err', Next: 'Done' }],
            End: true,
          },
          Done: { Type: 'Pass', End: true },
        },
      },
      { a: 1 },
    );
    expect(calls).toBe(3);
    expect(JSON.parse(String(described.output))).toEqual({
      a: 1,
      err: { Error: 'Boom', Cause: 'attempt 3' },
    });
  });

  it('does not let States.ALL catch States.Runtime', async () => {
    const e = engine();
    const { described } = await run(e, {
      StartAt: 'T',
      States: {
        T: {
          Type: 'Task',
          Resource: 'arn:aws:lambda:us-east-1:123456789012:function:f',
          InputPath: '$.missing',
          Catch: [{ ErrorEquals: ['States.ALL'], Next: 'Done' }],
          End: true,
        },
        Done: { Type: 'Pass', End: true },
      },
    });
    expect(described.status).toBe('FAILED');
    expect(described.error).toBe('States.Runtime');
    expect(described.cause).toContain('entered at the event id #2');
  });

  it('stops the sibling branches when a Parallel branch fails', async () => {
    const aborted: string[] = [];
    const e = engine({
      timeScale: 1,
      invokeResource: (inv) =>
        new Promise((_, reject) => {
          inv.signal.addEventListener('abort', () => {
            aborted.push(inv.stateName);
            reject(new Error('aborted'));
          });
        }),
    });
    const { described, executionArn } = await run(e, {
      StartAt: 'P',
      States: {
        P: {
          Type: 'Parallel',
          Branches: [
            {
              StartAt: 'Slow',
              States: {
                Slow: {
                  Type: 'Task',
                  Resource: 'arn:aws:lambda:us-east-1:123456789012:function:s',
                  End: true,
                },
              },
            },
            { StartAt: 'Bad', States: { Bad: { Type: 'Fail', Error: 'Nope' } } },
          ],
          End: true,
        },
      },
    });
    expect(described).toMatchObject({ status: 'FAILED', error: 'Nope' });
    expect(aborted).toEqual(['Slow']);
    expect(await historyTypes(e, executionArn)).toContain('TaskStateAborted');
  });
});

describe('redrive', () => {
  it('reruns only the failed Map iterations, with RedriveCount + 1', async () => {
    const seen: number[] = [];
    let healthy = false;
    const e = engine({
      invokeResource: async (inv) => {
        const n = (inv.parameters as { n: number }).n;
        seen.push(n);
        if (n === 2 && !healthy) throw new StatesError('Flaky', 'item 2');
        return n * 10;
      },
    });
    const { executionArn, described } = await run(
      e,
      {
        StartAt: 'Each',
        States: {
          Each: {
            Type: 'Map',
            MaxConcurrency: 1,
            ItemProcessor: {
              StartAt: 'Work',
              States: {
                Work: {
                  Type: 'Task',
                  Resource: 'arn:aws:lambda:us-east-1:123456789012:function:w',
                  End: true,
                },
              },
            },
            ItemSelector: { 'n.$': '$$.Map.Item.Value' },
            Next: 'Count',
          },
          Count: {
            Type: 'Pass',
            Parameters: { 'results.$': '$', 'redrives.$': '$$.Execution.RedriveCount' },
            End: true,
          },
        },
      },
      [1, 2, 3],
    );
    expect(described).toMatchObject({ status: 'FAILED', error: 'Flaky', redriveStatus: 'REDRIVABLE' });
    expect(seen).toEqual([1, 2]);
    healthy = true;
    await e.redriveExecution({ executionArn });
    const after = await e.awaitExecution(executionArn);
    expect(after.status).toBe('SUCCEEDED');
    expect(after.redriveCount).toBe(1);
    expect(JSON.parse(String(after.output))).toEqual({ results: [10, 20, 30], redrives: 1 });
    expect(seen).toEqual([1, 2, 2, 3]);
    const types = await historyTypes(e, executionArn);
    expect(types.filter((t) => t === 'ExecutionRedriven')).toHaveLength(1);
    expect((await rejects(e.redriveExecution({ executionArn }))).code).toBe('ExecutionNotRedrivable');
  });
});

describe('the Step Functions API', () => {
  it('refuses invalid definitions with located problems and changes nothing', async () => {
    const e = engine();
    const error = await rejects(
      e.createStateMachine({
        name: 'Bad',
        definition: JSON.stringify({ StartAt: 'A', States: { A: { Type: 'Pass', Next: 'Nowhere' } } }),
        roleArn: ROLE,
      }),
    );
    expect(error.code).toBe('InvalidDefinition');
    expect(error.message).toContain('/States/A');
    expect((await e.listStateMachines({})).stateMachines).toEqual([]);
  });

  it('refuses names and ARNs that could escape the store', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-engine-'));
    dirs.push(dir);
    const e = engine({ storeDir: dir });
    const definition = JSON.stringify({ StartAt: 'A', States: { A: { Type: 'Pass', End: true } } });
    for (const name of ['../x', 'a/b', 'a b', '', 'x'.repeat(81)]) {
      expect((await rejects(e.createStateMachine({ name, definition, roleArn: ROLE }))).code).toBe(
        'InvalidName',
      );
    }
    const { stateMachineArn } = await e.createStateMachine({ name: '..', definition, roleArn: ROLE });
    const { executionArn } = await e.startExecution({ stateMachineArn: String(stateMachineArn), name: '..' });
    await e.awaitExecution(String(executionArn));
    expect(fs.readdirSync(path.dirname(dir)).filter((f) => f.endsWith('.jsonl'))).toEqual([]);
    expect(
      (
        await rejects(
          e.describeExecution({ executionArn: 'arn:aws:states:us-east-1:123456789012:execution:../../x:y' }),
        )
      ).code,
    ).toBe('InvalidArn');
  });

  it('publishes versions, routes aliases and runs the version that was published', async () => {
    const e = engine();
    const v1 = { StartAt: 'A', States: { A: { Type: 'Pass', Result: 'one', End: true } } };
    const v2 = { StartAt: 'A', States: { A: { Type: 'Pass', Result: 'two', End: true } } };
    const created = await e.createStateMachine({
      name: 'V',
      definition: JSON.stringify(v1),
      roleArn: ROLE,
      publish: true,
    });
    expect(created.stateMachineVersionArn).toBe(`${created.stateMachineArn}:1`);
    await e.updateStateMachine({ stateMachineArn: created.stateMachineArn, definition: JSON.stringify(v2) });
    const alias = await e.createStateMachineAlias({
      name: 'live',
      routingConfiguration: [{ stateMachineVersionArn: String(created.stateMachineVersionArn), weight: 100 }],
    });
    const viaAlias = await e.startExecution({ stateMachineArn: String(alias.stateMachineAliasArn) });
    const viaLatest = await e.startExecution({ stateMachineArn: String(created.stateMachineArn) });
    expect((await e.awaitExecution(String(viaAlias.executionArn))).output).toBe('"one"');
    expect((await e.awaitExecution(String(viaLatest.executionArn))).output).toBe('"two"');
    const d = await e.describeExecution({ executionArn: String(viaAlias.executionArn) });
    expect(d.stateMachineAliasArn).toBe(alias.stateMachineAliasArn);
    expect(
      (await e.listStateMachineVersions({ stateMachineArn: created.stateMachineArn })).stateMachineVersions,
    ).toHaveLength(1);
  });

  it('runs EXPRESS machines synchronously and stops running executions', async () => {
    const e = engine({ timeScale: 1 });
    const { stateMachineArn } = await e.createStateMachine({
      name: 'X',
      type: 'EXPRESS',
      definition: JSON.stringify({
        StartAt: 'A',
        States: { A: { Type: 'Pass', Parameters: { 'v.$': '$.v' }, End: true } },
      }),
      roleArn: ROLE,
    });
    const sync = await e.startSyncExecution({ stateMachineArn, input: '{"v":7}' });
    expect(sync).toMatchObject({ status: 'SUCCEEDED', output: '{"v":7}' });

    const waiting = await e.createStateMachine({
      name: 'W',
      definition: JSON.stringify({ StartAt: 'Z', States: { Z: { Type: 'Wait', Seconds: 3600, End: true } } }),
      roleArn: ROLE,
    });
    const { executionArn } = await e.startExecution({ stateMachineArn: waiting.stateMachineArn });
    await e.stopExecution({ executionArn, error: 'Stopped', cause: 'by test' });
    expect(await e.describeExecution({ executionArn })).toMatchObject({
      status: 'ABORTED',
      error: 'Stopped',
    });
    expect((await historyTypes(e, String(executionArn))).at(-1)).toBe('ExecutionAborted');
  });

  it('chooses mocked responses by test case, with numbered and ranged invocation keys', async () => {
    const e = engine({
      mockConfig: {
        StateMachines: { M: { TestCases: { Flaky: { Call: 'CallMock' } } } },
        MockedResponses: {
          CallMock: {
            '0-1': { Throw: { Error: 'Transient', Cause: 'busy' } },
            '2': { Return: { ok: true } },
          },
        },
      },
    });
    const definition = {
      StartAt: 'Call',
      States: {
        Call: {
          Type: 'Task',
          Resource: 'arn:aws:states:::lambda:invoke',
          Parameters: { FunctionName: 'f' },
          Retry: [{ ErrorEquals: ['Transient'], MaxAttempts: 3 }],
          End: true,
        },
      },
    };
    const { stateMachineArn } = await e.createStateMachine({
      name: 'M',
      definition: JSON.stringify(definition),
      roleArn: ROLE,
    });
    const { executionArn } = await e.startExecution({ stateMachineArn: `${stateMachineArn}#Flaky` });
    const described = await e.awaitExecution(String(executionArn));
    expect(JSON.parse(String(described.output))).toEqual({ ok: true });
    expect((await historyTypes(e, String(executionArn))).filter((t) => t === 'TaskFailed')).toHaveLength(2);
    expect((await rejects(e.startExecution({ stateMachineArn: `${stateMachineArn}#Nope` }))).code).toBe(
      'InvalidArn',
    );
  });

  it('runs child executions with states:startExecution.sync:2', async () => {
    const e = engine();
    const child = await e.createStateMachine({
      name: 'Child',
      definition: JSON.stringify({
        StartAt: 'A',
        States: { A: { Type: 'Pass', Result: { done: true }, End: true } },
      }),
      roleArn: ROLE,
    });
    const { described } = await run(e, {
      StartAt: 'Start',
      States: {
        Start: {
          Type: 'Task',
          Resource: 'arn:aws:states:::states:startExecution.sync:2',
          Parameters: { StateMachineArn: child.stateMachineArn, Input: { x: 1 } },
          OutputPath: '$.Output',
          End: true,
        },
      },
    });
    expect(JSON.parse(String(described.output))).toEqual({ done: true });
  });
});

describe('limits', () => {
  it('fails an execution whose history would exceed 25,000 events', async () => {
    const e = engine();
    const { described } = await run(e, {
      StartAt: 'Loop',
      States: {
        Loop: { Type: 'Pass', Next: 'Again' },
        Again: {
          Type: 'Choice',
          Choices: [{ Variable: '$.stop', IsPresent: true, Next: 'End' }],
          Default: 'Loop',
        },
        End: { Type: 'Succeed' },
      },
    });
    expect(described.status).toBe('FAILED');
    expect(described.error).toBe('States.Runtime');
    expect(described.cause).toContain('25000');
  });

  it('fails with States.DataLimitExceeded when a state output exceeds 256 KiB', async () => {
    const e = engine();
    const { described } = await run(
      e,
      {
        StartAt: 'Big',
        States: {
          Big: { Type: 'Pass', Parameters: { 'a.$': '$.s', 'b.$': '$.s' }, End: true },
        },
      },
      { s: 'x'.repeat(200_000) },
    );
    expect(described.status).toBe('FAILED');
    expect(described.error).toBe('States.DataLimitExceeded');
  });
});

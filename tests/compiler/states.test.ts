/** The typed ASL state builders (lib/compiler/states): what each renders, and the graph's rules. */
import { describe, expect, it } from 'vitest';
import {
  Choice,
  Fail,
  InvokeActivity,
  LambdaInvoke,
  Parallel,
  Pass,
  StartExecution,
  StateGraph,
  Succeed,
} from '../../lib/compiler/states/index.ts';

describe('state builders', () => {
  it('render their ASL fields in order, leaving out what was not given', () => {
    expect(new Pass('P', { output: { a: 1 }, next: 'Q' }).toAsl()).toEqual({
      Type: 'Pass',
      Output: { a: 1 },
      Next: 'Q',
    });
    expect(JSON.stringify(new Pass('P', { assign: { x: 1 }, comment: 'c' }).toAsl())).toBe(
      '{"Type":"Pass","Comment":"c","Assign":{"x":1},"End":true}',
    );
    expect(
      JSON.stringify(
        new Choice('C', {
          choices: [{ condition: '{% true %}', assign: { y: 2 }, next: 'A' }],
          default: 'B',
          output: '{% 1 %}',
        }).toAsl(),
      ),
    ).toBe(
      '{"Type":"Choice","Choices":[{"Condition":"{% true %}","Assign":{"y":2},"Next":"A"}],"Default":"B","Output":"{% 1 %}"}',
    );
    expect(JSON.stringify(new Fail('F', { error: 'E', cause: 'why' }).toAsl())).toBe(
      '{"Type":"Fail","Error":"E","Cause":"why"}',
    );
    expect(JSON.stringify(new Succeed('S', { output: 'x' }).toAsl())).toBe('{"Type":"Succeed","Output":"x"}');
  });

  it('render a Lambda call with the catalog placeholder, its retriers and catchers', () => {
    const task = new LambdaInvoke('Run', {
      lambda: 'stepRunner',
      payload: { a: 1 },
      timeoutSeconds: 60,
      output: '{% $states.result %}',
      retry: [{ ErrorEquals: ['E'], MaxAttempts: 2 }],
      catch: [{ errorEquals: ['States.ALL'], next: 'Failed' }],
      next: 'Check',
    });
    expect(JSON.stringify(task.toAsl())).toBe(
      '{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Arguments":{"FunctionName":"${StepRunnerFunctionArn}","Payload":{"a":1}},"TimeoutSeconds":60,"Output":"{% $states.result %}","Retry":[{"ErrorEquals":["E"],"MaxAttempts":2}],"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Failed"}],"Next":"Check"}',
    );
    expect(task.resources()).toEqual([
      { kind: 'lambda', handler: 'stepRunner', placeholder: 'StepRunnerFunctionArn' },
    ]);
    expect(task.historyEvents).toBe(5);
    // An empty Retry is left out.
    const waiting = new LambdaInvoke('Join', {
      lambda: 'join',
      payload: '{% {} %}',
      integrationPattern: 'waitForTaskToken',
      retry: [],
    });
    expect(waiting.toAsl()).toEqual({
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Arguments: { FunctionName: '${JoinFunctionArn}', Payload: '{% {} %}' },
      End: true,
    });
    expect(waiting.historyEvents).toBe(6);
  });

  it('render a child execution and an activity, naming what they use', () => {
    const child = new StartExecution('Part 1', { stateMachine: 'PartStateMachineArn1', input: '{% 1 %}' });
    expect(child.toAsl()).toEqual({
      Type: 'Task',
      Resource: 'arn:aws:states:::states:startExecution.sync:2',
      Arguments: { StateMachineArn: '${PartStateMachineArn1}', Input: '{% 1 %}' },
      End: true,
    });
    expect(child.resources()).toEqual([{ kind: 'stateMachine', placeholder: 'PartStateMachineArn1' }]);
    const activity = new InvokeActivity('Run a', {
      target: 'co-dex',
      arguments: { x: 1 },
      heartbeatSeconds: 60,
      next: 'Check a',
    });
    expect(activity.toAsl()).toEqual({
      Type: 'Task',
      Resource: '${AgentActivityArn_co_2ddex}',
      Arguments: { x: 1 },
      HeartbeatSeconds: 60,
      Next: 'Check a',
    });
    expect(activity.resources()).toEqual([
      { kind: 'activity', target: 'co-dex', placeholder: 'AgentActivityArn_co_2ddex' },
    ]);
  });
});

describe('StateGraph', () => {
  it('refuses a second state of the same name, naming it', () => {
    const graph = new StateGraph('A', [new Pass('A', { next: 'B' }), new Pass('B', {})]);
    expect(() => graph.add(new Pass('B', { output: 'the second' }))).toThrow(
      /^state "B" is defined twice: state names must be unique in a definition/,
    );
    // Nothing was overwritten.
    expect(graph.toAsl().States.B).toEqual({ Type: 'Pass', End: true });
  });

  it('refuses a name used inside a Parallel branch, and a branch repeating a name outside it', () => {
    const branch = new StateGraph('X', [new Pass('X', {})]);
    const graph = new StateGraph('Par', [new Parallel('Par', { branches: [branch], next: 'X' })]);
    expect(() => graph.add(new Pass('X', {}))).toThrow(/^state "X" is defined twice/);
    const twice = new StateGraph('Y', [new Pass('Y', {})]);
    expect(
      () =>
        new StateGraph('P', [
          new Parallel('P', { branches: [twice, new StateGraph('Y', [new Pass('Y', {})])] }),
        ]),
    ).toThrow(/^state "Y" is defined twice/);
  });

  it('renders its states in the order they were added, and refuses a StartAt it does not hold', () => {
    const graph = new StateGraph('B', [new Pass('B', { next: 'A' }), new Succeed('A', {})]);
    expect(Object.keys(graph.toAsl().States)).toEqual(['B', 'A']);
    expect(() => new StateGraph('Z', [new Pass('B', {})]).toAsl()).toThrow(/StartAt "Z" names no state/);
  });

  it('walks the happy path (each Choice its happy way) until it leaves the graph', () => {
    const graph = new StateGraph('Gate?', [
      new Choice('Gate?', {
        choices: [{ condition: '{% true %}', next: 'Gate' }],
        default: 'Run',
        happyPath: 'Gate',
      }),
      new LambdaInvoke('Gate', {
        lambda: 'gate',
        payload: {},
        integrationPattern: 'waitForTaskToken',
        next: 'Run',
      }),
      new LambdaInvoke('Run', { lambda: 'stepRunner', payload: {}, next: 'Elsewhere' }),
    ]);
    expect(graph.happyPath()).toEqual({ states: 3, historyEvents: 2 + 6 + 5 });
    const loop = new StateGraph('A', [new Pass('A', { next: 'B' }), new Pass('B', { next: 'A' })]);
    expect(() => loop.happyPath()).toThrow(/loops back to state "A"/);
  });

  it('lists the resources its states use, Parallel branches included, each once, in order of first use', () => {
    const branch = new StateGraph('Run', [
      new LambdaInvoke('Run', { lambda: 'stepRunner', payload: {}, next: 'Ask' }),
      new LambdaInvoke('Ask', { lambda: 'gate', payload: {} }),
    ]);
    const graph = new StateGraph('Gate', [
      new LambdaInvoke('Gate', { lambda: 'gate', payload: {}, next: 'Par' }),
      new Parallel('Par', { branches: [branch], next: 'Part' }),
      new StartExecution('Part', { stateMachine: 'StepStateMachineArn1', input: {} }),
    ]);
    expect(graph.resources()).toEqual([
      { kind: 'lambda', handler: 'gate', placeholder: 'GateFunctionArn' },
      { kind: 'lambda', handler: 'stepRunner', placeholder: 'StepRunnerFunctionArn' },
      { kind: 'stateMachine', placeholder: 'StepStateMachineArn1' },
    ]);
  });
});

/** The benchmark workloads: the same ASL definitions run on plangate's engine and on the peer. */

export interface Workload {
  readonly name: string;
  readonly definition: Record<string, unknown>;
  readonly input: unknown;
  /** States entered by one execution. */
  readonly transitions: number;
  /** Task state name → function name, for engines that dispatch per state. */
  readonly taskStates: readonly string[];
  /**
   * The same machine for the peer, when it differs: the peer has no `.waitForTaskToken`, so a
   * callback task there is a Task whose handler waits for the same responder (see {@link respondLater}).
   */
  readonly peerDefinition?: Record<string, unknown>;
  /** Task states call back (SendTaskSuccess) instead of returning their result. */
  readonly callback?: boolean;
}

const PASS_CHAIN_LENGTH = 1000;
const PARALLEL_BRANCHES = 100;
const MAP_ITEMS = 1000;
const TASK_CHAIN_LENGTH = 200;
const CALLBACK_CHAIN_LENGTH = 100;

/** The Lambda function every Task state of the task chain calls. */
export const NOOP_FUNCTION_ARN = 'arn:aws:lambda:us-east-1:123456789012:function:noop';

function passChain(): Workload {
  const states: Record<string, unknown> = {};
  for (let i = 0; i < PASS_CHAIN_LENGTH; i++) {
    states[`Pass${i}`] =
      i === PASS_CHAIN_LENGTH - 1 ? { Type: 'Pass', End: true } : { Type: 'Pass', Next: `Pass${i + 1}` };
  }
  return {
    name: `pass-chain-${PASS_CHAIN_LENGTH}`,
    definition: { StartAt: 'Pass0', States: states },
    input: { n: 1 },
    transitions: PASS_CHAIN_LENGTH,
    taskStates: [],
  };
}

function parallel(): Workload {
  const branches = Array.from({ length: PARALLEL_BRANCHES }, (_, i) => ({
    StartAt: `Branch${i}`,
    States: { [`Branch${i}`]: { Type: 'Pass', End: true } },
  }));
  return {
    name: `parallel-${PARALLEL_BRANCHES}-branches`,
    definition: { StartAt: 'Fan', States: { Fan: { Type: 'Parallel', Branches: branches, End: true } } },
    input: { n: 1 },
    transitions: 1 + PARALLEL_BRANCHES,
    taskStates: [],
  };
}

function map(): Workload {
  return {
    name: `map-${MAP_ITEMS}-items`,
    definition: {
      StartAt: 'Each',
      States: {
        Each: {
          Type: 'Map',
          ItemsPath: '$.items',
          ItemProcessor: { StartAt: 'Item', States: { Item: { Type: 'Pass', End: true } } },
          End: true,
        },
      },
    },
    input: { items: Array.from({ length: MAP_ITEMS }, (_, i) => ({ i })) },
    transitions: 1 + MAP_ITEMS,
    taskStates: [],
  };
}

function taskChain(): Workload {
  const states: Record<string, unknown> = {};
  const names: string[] = [];
  for (let i = 0; i < TASK_CHAIN_LENGTH; i++) {
    names.push(`Task${i}`);
    states[`Task${i}`] = {
      Type: 'Task',
      Resource: NOOP_FUNCTION_ARN,
      Retry: [{ ErrorEquals: ['States.TaskFailed'], IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2 }],
      ...(i === TASK_CHAIN_LENGTH - 1 ? { End: true } : { Next: `Task${i + 1}` }),
    };
  }
  return {
    name: `task-chain-${TASK_CHAIN_LENGTH}-with-retry`,
    definition: { StartAt: 'Task0', States: states },
    input: { n: 1 },
    transitions: TASK_CHAIN_LENGTH,
    taskStates: names,
  };
}

/** The Lambda function the peer's callback tasks call (plangate calls it through lambda:invoke.waitForTaskToken). */
export const CALLBACK_FUNCTION_ARN = 'arn:aws:lambda:us-east-1:123456789012:function:callback';

/**
 * A chain of callback tasks: each hands its task token to a function (`lambda:invoke.waitForTaskToken`)
 * and waits until the responder sends the result back with SendTaskSuccess.
 */
function callbackChain(): Workload {
  const states: Record<string, unknown> = {};
  const peerStates: Record<string, unknown> = {};
  const names: string[] = [];
  for (let i = 0; i < CALLBACK_CHAIN_LENGTH; i++) {
    names.push(`Callback${i}`);
    const next = i === CALLBACK_CHAIN_LENGTH - 1 ? { End: true } : { Next: `Callback${i + 1}` };
    states[`Callback${i}`] = {
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { FunctionName: 'callback', Payload: { 'token.$': '$$.Task.Token', 'input.$': '$' } },
      ...next,
    };
    peerStates[`Callback${i}`] = { Type: 'Task', Resource: CALLBACK_FUNCTION_ARN, ...next };
  }
  return {
    name: `callback-chain-${CALLBACK_CHAIN_LENGTH}`,
    definition: { StartAt: 'Callback0', States: states },
    peerDefinition: { StartAt: 'Callback0', States: peerStates },
    input: { n: 1 },
    transitions: CALLBACK_CHAIN_LENGTH,
    taskStates: names,
    callback: true,
  };
}

export const WORKLOADS: readonly Workload[] = [passChain(), parallel(), map(), taskChain(), callbackChain()];

/**
 * The responder of callback tasks: answers on a later turn of the event loop, as a worker
 * answering over the network would (the same for every engine).
 */
export function respondLater(answer: () => unknown): void {
  setImmediate(answer);
}

/** The Task handler of the task chain: succeeds at once with its input. */
export async function noop(event: unknown): Promise<unknown> {
  return event;
}

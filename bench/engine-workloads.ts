/** The benchmark workloads: the same ASL definitions run on plangate's engine and on the peer. */

export interface Workload {
  readonly name: string;
  readonly definition: Record<string, unknown>;
  readonly input: unknown;
  /** States entered by one execution. */
  readonly transitions: number;
  /** Task state name → function name, for engines that dispatch per state. */
  readonly taskStates: readonly string[];
}

const PASS_CHAIN_LENGTH = 1000;
const PARALLEL_BRANCHES = 100;
const MAP_ITEMS = 1000;
const TASK_CHAIN_LENGTH = 200;

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

export const WORKLOADS: readonly Workload[] = [passChain(), parallel(), map(), taskChain()];

/** The Task handler of the task chain: succeeds at once with its input. */
export async function noop(event: unknown): Promise<unknown> {
  return event;
}

/**
 * Workloads of the kill -9 test (crash.test.ts, crash-child.ts): small versions of the bench's
 * (Pass chain, Task chain with Retry, Parallel, Map, callback chain) and the loop a compiled
 * plan's rollback is (lib/compiler/rollback.ts: run one procedure, check it, go back for the
 * next), every Task with a Retry that takes an attempt cut short by a stop (States.TaskFailed)
 * and tries again.
 */

export const WORK_FUNCTION = 'arn:aws:lambda:us-east-1:123456789012:function:work';
export const CALLBACK_RESOURCE = 'arn:aws:states:::lambda:invoke.waitForTaskToken';

const RETRY = [{ ErrorEquals: ['States.TaskFailed'], IntervalSeconds: 1, MaxAttempts: 100, BackoffRate: 1 }];

export interface CrashWorkload {
  readonly name: string;
  readonly definition: Record<string, unknown>;
  readonly input: unknown;
  /** Whether the order of its events is fixed (chains) or interleaves (Parallel branches, Map iterations). */
  readonly sequential: boolean;
}

function chain(prefix: string, length: number, state: (i: number) => Record<string, unknown>) {
  const states: Record<string, unknown> = {};
  for (let i = 0; i < length; i++) {
    states[`${prefix}${i}`] = {
      ...state(i),
      ...(i === length - 1 ? { End: true } : { Next: `${prefix}${i + 1}` }),
    };
  }
  return { StartAt: `${prefix}0`, States: states };
}

const task = (i: number) => ({
  Type: 'Task',
  Resource: WORK_FUNCTION,
  Parameters: { 'n.$': '$.n', step: i },
  ResultPath: `$.r${i % 3}`,
  Retry: RETRY,
});

export const CRASH_WORKLOADS: readonly CrashWorkload[] = [
  {
    name: 'pass-chain',
    definition: chain('Pass', 80, (i) => ({ Type: 'Pass', Result: i, ResultPath: '$.at' })),
    input: { n: 1 },
    sequential: true,
  },
  { name: 'task-chain', definition: chain('Task', 12, task), input: { n: 2 }, sequential: true },
  {
    name: 'parallel',
    definition: {
      StartAt: 'Fan',
      States: {
        Fan: {
          Type: 'Parallel',
          Branches: Array.from({ length: 6 }, (_, b) => ({
            StartAt: `Work${b}`,
            States: {
              [`Work${b}`]: { ...task(b), Next: `After${b}` },
              [`After${b}`]: { Type: 'Pass', End: true },
            },
          })),
          End: true,
        },
      },
    },
    input: { n: 3 },
    sequential: false,
  },
  {
    name: 'map',
    definition: {
      StartAt: 'Each',
      States: {
        Each: {
          Type: 'Map',
          ItemsPath: '$.items',
          MaxConcurrency: 4,
          ItemProcessor: {
            StartAt: 'Item',
            States: {
              Item: {
                Type: 'Task',
                Resource: WORK_FUNCTION,
                Parameters: { 'n.$': '$.i', step: 'item' },
                Retry: RETRY,
                Next: 'Done',
              },
              Done: { Type: 'Pass', End: true },
            },
          },
          End: true,
        },
      },
    },
    input: { items: Array.from({ length: 8 }, (_, i) => ({ i })) },
    sequential: false,
  },
  {
    // The rollback loop's shape: the same two states entered again for each step undone.
    name: 'rollback-loop',
    definition: {
      StartAt: 'Roll back',
      States: {
        'Roll back': {
          Type: 'Task',
          Resource: WORK_FUNCTION,
          Parameters: { 'n.$': '$.n', 'step.$': "States.Format('undo {}', $.left)" },
          ResultPath: '$.undone',
          Retry: RETRY,
          Next: 'Check rollback',
        },
        'Check rollback': {
          Type: 'Task',
          Resource: WORK_FUNCTION,
          Parameters: { 'n.$': '$.n', 'step.$': "States.Format('check {}', $.left)" },
          ResultPath: '$.checked',
          Retry: RETRY,
          Next: 'Rolled back?',
        },
        'Rolled back?': {
          Type: 'Choice',
          Choices: [{ Variable: '$.left', NumericLessThanEquals: 1, Next: 'Done' }],
          Default: 'Next one',
        },
        'Next one': {
          Type: 'Pass',
          Parameters: { 'n.$': '$.n', 'left.$': 'States.MathAdd($.left, -1)' },
          Next: 'Roll back',
        },
        Done: { Type: 'Succeed' },
      },
    },
    input: { n: 6, left: 6 },
    sequential: true,
  },
  {
    name: 'callback-chain',
    definition: chain('Callback', 5, (i) => ({
      Type: 'Task',
      Resource: CALLBACK_RESOURCE,
      Parameters: {
        FunctionName: 'callback',
        Payload: { 'token.$': '$$.Task.Token', step: i, 'n.$': '$.n' },
      },
      ResultPath: `$.r${i % 2}`,
      Retry: RETRY,
    })),
    input: { n: 5 },
    sequential: true,
  },
];

/** What the task function answers (the same in the child and in the reference run). */
export function workResult(parameters: unknown): unknown {
  const { n, step } = parameters as { n: number; step: unknown };
  return { n, step, done: true };
}

/** Identity of one task call: its state and what it was called with (the token left out). */
export function callKey(stateName: string, parameters: unknown): string {
  const p = parameters as Record<string, unknown>;
  const payload = (p.Payload ?? p) as Record<string, unknown>;
  return `${stateName}|${payload.n}|${String(payload.step)}`;
}

/**
 * A discrete-event simulation of a compiled definition's happy path, walking the ASL itself:
 * a step-runner task (or a step machine's task) takes the step's duration, every other state takes no time, a Parallel
 * ends when its last branch ends, a join waits until every predecessor has signalled, and a
 * `startExecution.sync` task runs the child definition it names. Choices take their Default
 * (the happy path: no gate question, no retry). Used by the compile report and bench/dag.ts.
 */
import type { AslDefinition, AslState } from './asl.ts';
import { LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT, START_EXECUTION_SYNC } from './asl.ts';
import { PLACEHOLDERS, ref } from './placeholders.ts';
import { stepIdOfCall } from './step-machine.ts';

export interface SimulationProps {
  /** The definition to run. */
  readonly definition: AslDefinition;
  /** State to start from. @default the definition's StartAt */
  readonly startAt?: string;
  /** Child definitions by the `${…}` string their parent's StateMachineArn holds. */
  readonly children?: ReadonlyMap<string, AslDefinition>;
  /** How long each step's runner takes. */
  readonly duration: (stepId: string) => number;
}

export interface SimulationResult {
  /** When the start state's flow ended (its End, or the end of the state it started). */
  readonly makespan: number;
  readonly start: ReadonlyMap<string, number>;
  readonly finish: ReadonlyMap<string, number>;
}

type Continuation = (time: number) => void;

interface Pending {
  readonly time: number;
  readonly seq: number;
  readonly run: () => void;
}

/** A binary min-heap of pending events ordered by (time, seq). */
class EventQueue {
  private readonly heap: Pending[] = [];
  private seq = 0;

  push(time: number, run: () => void): void {
    const heap = this.heap;
    heap.push({ time, seq: this.seq++, run });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i] as Pending, heap[parent] as Pending)) break;
      [heap[i], heap[parent]] = [heap[parent] as Pending, heap[i] as Pending];
      i = parent;
    }
  }

  pop(): Pending | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l] as Pending, heap[m] as Pending)) m = l;
        if (r < heap.length && before(heap[r] as Pending, heap[m] as Pending)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m] as Pending, heap[i] as Pending];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Pending, b: Pending): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}

const RUNNER = ref(PLACEHOLDERS.stepRunner);
const CHECKER = ref(PLACEHOLDERS.contractChecker);
const JOIN = ref(PLACEHOLDERS.join);

export function simulate(props: SimulationProps): SimulationResult {
  const queue = new EventQueue();
  const start = new Map<string, number>();
  const finish = new Map<string, number>();
  const signalled = new Map<string, number>();
  const waiting = new Map<string, { missing: Set<string>; resume: Continuation }[]>();
  let makespan = Number.NaN;

  const runFlow = (states: Record<string, AslState>, name: string, time: number, end: Continuation) => {
    queue.push(time, () => step(states, name, time, end));
  };

  const follow = (states: Record<string, AslState>, state: AslState, time: number, end: Continuation) => {
    if (typeof state.Next === 'string') runFlow(states, state.Next, time, end);
    else queue.push(time, () => end(time));
  };

  const step = (states: Record<string, AslState>, name: string, time: number, end: Continuation) => {
    const state = states[name];
    if (!state) throw new Error(`simulation reached unknown state "${name}"`);
    switch (state.Type) {
      case 'Pass':
        return follow(states, state, time, end);
      case 'Choice':
        return runFlow(states, state.Default as string, time, end);
      case 'Succeed':
      case 'Fail':
        return queue.push(time, () => end(time));
      case 'Parallel': {
        const branches = state.Branches as AslDefinition[];
        let remaining = branches.length;
        let latest = time;
        for (const branch of branches) {
          runFlow(branch.States, branch.StartAt, time, (done) => {
            latest = Math.max(latest, done);
            remaining -= 1;
            if (remaining === 0) follow(states, state, latest, end);
          });
        }
        return;
      }
      case 'Task':
        return task(states, state, time, end);
      default:
        return follow(states, state, time, end);
    }
  };

  const task = (states: Record<string, AslState>, state: AslState, time: number, end: Continuation) => {
    const args = (state.Arguments ?? {}) as Record<string, unknown>;
    const payload = (args.Payload ?? {}) as Record<string, unknown>;
    const stepId = typeof payload.stepId === 'string' ? payload.stepId : undefined;
    // A step machine runs the step's runner, then its checker.
    const called = stepIdOfCall(state);
    if (called !== undefined) {
      start.set(called, time);
      const done = time + props.duration(called);
      finish.set(called, done);
      return follow(states, state, done, end);
    }
    if (state.Resource === START_EXECUTION_SYNC) {
      const child = props.children?.get(args.StateMachineArn as string);
      if (!child) throw new Error(`no child definition for ${String(args.StateMachineArn)}`);
      return runFlow(child.States, child.StartAt, time, (done) => follow(states, state, done, end));
    }
    if (state.Resource === LAMBDA_INVOKE && args.FunctionName === RUNNER && stepId) {
      start.set(stepId, time);
      const done = time + props.duration(stepId);
      return follow(states, state, done, end);
    }
    if (state.Resource === LAMBDA_INVOKE && args.FunctionName === CHECKER && stepId) {
      finish.set(stepId, time);
      return follow(states, state, time, end);
    }
    if (args.FunctionName === JOIN && stepId && payload.action === 'signal') {
      signalled.set(stepId, time);
      for (const successor of parseList(payload.successors)) {
        const waiters = waiting.get(successor) ?? [];
        for (const waiter of waiters) {
          waiter.missing.delete(stepId);
          if (waiter.missing.size === 0) waiter.resume(time);
        }
        waiting.set(
          successor,
          waiters.filter((w) => w.missing.size > 0),
        );
      }
      return follow(states, state, time, end);
    }
    if (state.Resource === LAMBDA_INVOKE_WAIT && args.FunctionName === JOIN && stepId) {
      const missing = new Set(parseList(payload.predecessors).filter((p) => !signalled.has(p)));
      if (missing.size === 0) return follow(states, state, time, end);
      const list = waiting.get(stepId) ?? [];
      list.push({ missing, resume: (released) => follow(states, state, released, end) });
      waiting.set(stepId, list);
      return;
    }
    return follow(states, state, time, end);
  };

  const definition = props.definition;
  runFlow(definition.States, props.startAt ?? definition.StartAt, 0, (done) => {
    makespan = done;
  });
  for (let next = queue.pop(); next; next = queue.pop()) next.run();
  if (Number.isNaN(makespan)) throw new Error('simulation deadlocked: a join was never released');
  return { makespan, start, finish };
}

/** Lists are embedded as JSONata literals (`{% ["a","b"] %}`) or plain arrays. */
function parseList(value: unknown): string[] {
  if (Array.isArray(value)) return value as string[];
  if (typeof value === 'string') {
    const match = /^\{% (.*) %\}$/.exec(value);
    if (match) return JSON.parse(match[1] as string) as string[];
  }
  return [];
}

/** The longest path through the dependency graph, weighted by duration. */
export function criticalPath(
  steps: readonly { readonly id: string; readonly dependsOn: readonly string[] }[],
  duration: (stepId: string) => number,
): number {
  const finish = new Map<string, number>();
  const byId = new Map(steps.map((s) => [s.id, s]));
  let longest = 0;
  const visit = (id: string): number => {
    const known = finish.get(id);
    if (known !== undefined) return known;
    // Iterative post-order keeps deep chains off the call stack.
    const stack: [string, number][] = [[id, 0]];
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as [string, number];
      const deps = byId.get(top[0])?.dependsOn ?? [];
      if (top[1] < deps.length) {
        const dep = deps[top[1]] as string;
        top[1] += 1;
        if (!finish.has(dep)) stack.push([dep, 0]);
      } else {
        const ready = Math.max(0, ...deps.map((d) => finish.get(d) as number));
        finish.set(top[0], ready + duration(top[0]));
        stack.pop();
      }
    }
    return finish.get(id) as number;
  };
  for (const s of steps) longest = Math.max(longest, visit(s.id));
  return longest;
}

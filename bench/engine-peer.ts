/**
 * The peer engine, aws-local-stepfunctions@3 (in memory), driven on the benchmark workloads.
 * It calls Node 22's Promise.withResolvers; plangate runs on Node 20, so the bench polyfills it here only.
 */
import { StateMachine } from 'aws-local-stepfunctions';

type JSONValue = Parameters<StateMachine['run']>[0];

import type { Workload } from './engine-workloads.ts';

interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

const promiseStatics = Promise as unknown as { withResolvers?: <T>() => Resolvers<T> };
promiseStatics.withResolvers ??= <T>(): Resolvers<T> => {
  let resolve!: Resolvers<T>['resolve'];
  let reject!: Resolvers<T>['reject'];
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
};

/** Runs the workload's definitions on the peer; Task states call `handler` (the bench's noop). */
export class PeerRunner {
  private readonly machine: StateMachine;
  private readonly handlers: Record<string, (input: JSONValue) => Promise<JSONValue>>;

  constructor(
    private readonly workload: Workload,
    handler: (event: unknown) => Promise<unknown>,
  ) {
    this.machine = new StateMachine((workload.peerDefinition ?? workload.definition) as never, {
      validationOptions: { checkArn: false, checkPaths: false },
    });
    this.handlers = Object.fromEntries(
      workload.taskStates.map((name) => [name, (input: JSONValue) => handler(input) as Promise<JSONValue>]),
    );
  }

  /** One execution; resolves to its output. */
  run(): Promise<unknown> {
    return this.machine.run(this.workload.input as JSONValue, {
      overrides: { taskResourceLocalHandlers: this.handlers },
    }).result;
  }

  /** One execution observed through the peer's event log: its output and the states it entered. */
  async runObserved(): Promise<{ output: unknown; statesEntered: number }> {
    const execution = this.machine.run(this.workload.input as JSONValue, {
      overrides: { taskResourceLocalHandlers: this.handlers },
    });
    let statesEntered = 0;
    const counting = (async () => {
      for await (const event of execution.eventLogs) if (event.type === 'StateEntered') statesEntered++;
    })();
    const output = await execution.result;
    await counting;
    return { output, statesEntered };
  }
}

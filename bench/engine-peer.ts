/**
 * The peer engine, aws-local-stepfunctions@3 (in memory), driven on the benchmark workloads.
 * It calls Node 22's Promise.withResolvers; plangate runs on Node 20, so the bench polyfills it here only.
 */
import { StateMachine } from 'aws-local-stepfunctions';

type JSONValue = Parameters<StateMachine['run']>[0];

import { noop, type Workload } from './engine-workloads.ts';

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

/** Builds a runner that executes `workload` once on the peer. */
export function peerRunner(workload: Workload): () => Promise<unknown> {
  const machine = new StateMachine(workload.definition as never, {
    validationOptions: { checkArn: false, checkPaths: false },
  });
  const taskResourceLocalHandlers = Object.fromEntries(
    workload.taskStates.map((name) => [name, (input: JSONValue) => noop(input) as Promise<JSONValue>]),
  );
  return () => machine.run(workload.input as JSONValue, { overrides: { taskResourceLocalHandlers } }).result;
}

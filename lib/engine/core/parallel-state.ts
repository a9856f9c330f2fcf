/** The Parallel state: branches run concurrently on copies of the variables; the first failure stops the others. */
import { StatesError } from '../types.ts';
import { jsonataValue, resolvePayloadTemplate } from './data.ts';
import type { StatesBlock } from './definition.ts';
import {
  applyResult,
  effectiveInput,
  enteredSeq,
  jsonataScope,
  runBlock,
  withRetryAndCatch,
} from './interpreter.ts';
import type { Frame, StateOutcome, StateRun } from './runtime.ts';
import { AbortedError } from './timers.ts';

export async function parallelState(run: StateRun): Promise<StateOutcome> {
  const { frame, state } = run;
  const branches = (state.Branches as StatesBlock[] | undefined) ?? [];
  return withRetryAndCatch(
    run,
    async () => {
      let input: unknown;
      if (run.language === 'JSONata') {
        input =
          state.Arguments === undefined
            ? run.rawInput
            : await jsonataValue(state.Arguments, jsonataScope(run), 'Arguments');
      } else {
        input = effectiveInput(run);
        if (state.Parameters !== undefined) {
          input = resolvePayloadTemplate(
            state.Parameters,
            input,
            run.context,
            frame.variables,
            'Parameters',
            frame.rt.expressions,
          );
        }
      }
      const started = frame.scope.emit('ParallelStateStarted');
      const prefix = `p${enteredSeq(run)}r${run.context.State.RetryCount ?? 0}b`;
      const results = await runConcurrently(frame, branches.length, (i, signal) => {
        const child: Frame = {
          rt: frame.rt,
          scope: frame.scope.child(`${prefix}${i}`, started.id),
          variables: { ...frame.variables },
          language: frame.language,
          signal,
          inBranch: true,
        };
        return runBlock(child, branches[i] as StatesBlock, input);
      });
      return applyResult(run, results);
    },
    () => frame.scope.emit('ParallelStateFailed'),
  );
}

/**
 * Runs `count` tasks at once (or `limit` at a time); the first failure aborts the rest and is
 * thrown once every task has settled. `onFailure` may decide to tolerate a failure.
 */
export async function runConcurrently(
  frame: Frame,
  count: number,
  work: (index: number, signal: AbortSignal) => Promise<unknown>,
  options: { limit?: number; tolerate?: (error: StatesError, index: number) => boolean } = {},
): Promise<unknown[]> {
  const results = new Array<unknown>(count);
  const controller = new AbortController();
  const relay = () => controller.abort(frame.signal.reason);
  frame.signal.addEventListener('abort', relay, { once: true });
  let failure: unknown;
  let next = 0;
  const worker = async () => {
    while (failure === undefined && next < count) {
      const i = next++;
      try {
        results[i] = await work(i, controller.signal);
      } catch (error) {
        if (failure !== undefined) continue;
        if (error instanceof StatesError && options.tolerate?.(error, i)) continue;
        failure = error;
        controller.abort(error instanceof StatesError ? new AbortedError(error) : error);
      }
    }
  };
  const limit = options.limit && options.limit > 0 ? Math.min(options.limit, count) : count;
  try {
    await Promise.all(Array.from({ length: limit }, worker));
  } finally {
    frame.signal.removeEventListener('abort', relay);
  }
  if (failure !== undefined) throw failure;
  return results;
}

/**
 * The Map state: items from ItemsPath/Items (or an inline ItemReader), ItemSelector, MaxConcurrency,
 * tolerated failures; INLINE iterations are part of the execution's history, DISTRIBUTED ones run
 * as a map run whose iterations stay out of the parent history, as on AWS.
 */
import { randomUUID } from 'node:crypto';
import { jsonataResultTypeError, jsonText } from '../dataflow/index.ts';
import { ExecutionHistory, type Scope } from '../persistence/execution-history.ts';
import { MemoryEngineStore } from '../persistence/store.ts';
import { StatesError } from '../types.ts';
import { jsonataValue, pathNumber, resolvePayloadTemplate, selectPath } from './data.ts';
import type { StatesBlock } from './definition.ts';
import {
  applyResult,
  effectiveInput,
  enteredSeq,
  errorOutput,
  jsonataScope,
  runBlock,
  withRetryAndCatch,
} from './interpreter.ts';
import { runConcurrently } from './parallel-state.ts';
import type { Frame, StateOutcome, StateRun } from './runtime.ts';
import { AbortedError } from './timers.ts';

export async function mapState(run: StateRun): Promise<StateOutcome> {
  const { frame, state } = run;
  const processor = (state.ItemProcessor ?? state.Iterator) as
    | (StatesBlock & { ProcessorConfig?: { Mode?: string } })
    | undefined;
  if (!processor) throw new StatesError('States.Runtime', 'Map state has no ItemProcessor');
  const distributed = processor.ProcessorConfig?.Mode === 'DISTRIBUTED';
  return withRetryAndCatch(
    run,
    async () => {
      const input = effectiveInput(run);
      const items = await mapItems(run, input);
      const limit = await maxConcurrency(run, input);
      const started = frame.scope.emit('MapStateStarted', { length: items.length });
      const tolerance = await toleratedFailures(run, input);
      let iterationScope: (index: number) => Scope;
      if (distributed) {
        const mapRunArn = `arn:aws:states:${frame.rt.region}:${frame.rt.accountId}:mapRun:${frame.rt.contextBase.StateMachine.Name}/${run.name}:${randomUUID()}`;
        frame.scope.emit('MapRunStarted', { mapRunArn });
        // map run iterations are child executions on AWS: their events are not in this history
        const detached = new ExecutionHistory({
          executionArn: frame.rt.executionArn,
          log: new MemoryEngineStore().openLog('map', 'run'),
          now: frame.rt.now,
          onDirty: () => {},
          persist: () => frame.rt.history.persist(),
        });
        iterationScope = (i) => detached.root(`i${i}`);
      } else {
        const prefix = `m${enteredSeq(run)}r${run.context.State.RetryCount ?? 0}i`;
        iterationScope = (i) => frame.scope.child(`${prefix}${i}`, started.id);
      }
      let failures = 0;
      const toleratedOutputs = new Map<number, unknown>();
      const results = await runConcurrently(
        frame,
        items.length,
        (index, signal) =>
          iteration(run, processor, items, index, iterationScope(index), signal, !distributed),
        {
          limit,
          tolerate: (error, index) => {
            failures++;
            if (!tolerance.configured) return false;
            const overCount = failures > tolerance.count;
            const overPercent = (failures / items.length) * 100 > tolerance.percentage;
            if (overCount || overPercent) return false;
            toleratedOutputs.set(index, errorOutput(error));
            return true;
          },
        },
      ).catch((error) => {
        if (distributed) frame.scope.emit('MapRunFailed');
        if (tolerance.configured && error instanceof StatesError) {
          throw new StatesError(
            'States.ExceedToleratedFailureThreshold',
            'The specified tolerated failure threshold was exceeded',
          );
        }
        throw error;
      });
      for (const [i, out] of toleratedOutputs) results[i] = out;
      if (distributed) frame.scope.emit('MapRunSucceeded');
      frame.scope.emit('MapStateSucceeded');
      return applyResult(run, results);
    },
    (error) => {
      // AWS records no MapStateFailed when the Map's own configuration fails at run time
      if (error.error !== 'States.Runtime') frame.scope.emit('MapStateFailed');
    },
  );
}

async function iteration(
  run: StateRun,
  processor: StatesBlock,
  items: unknown[],
  index: number,
  scope: Scope,
  signal: AbortSignal,
  withEvents: boolean,
): Promise<unknown> {
  const { frame, state } = run;
  const item = { Index: index, Value: items[index] };
  const details = { name: run.name, index };
  if (withEvents) scope.emit('MapIterationStarted', details);
  try {
    let itemInput: unknown = item.Value;
    const selector = state.ItemSelector ?? state.Parameters;
    if (run.language === 'JSONata') {
      if (state.ItemSelector !== undefined) {
        const context = { ...run.context, Map: { Item: item } };
        itemInput = await jsonataValue(state.ItemSelector, { ...jsonataScope(run), context }, 'ItemSelector');
      }
    } else if (selector !== undefined) {
      itemInput = resolvePayloadTemplate(
        selector,
        effectiveInput(run),
        { ...run.context, Map: { Item: item } },
        frame.variables,
        state.ItemSelector === undefined ? 'Parameters' : 'ItemSelector',
        frame.rt.expressions,
      );
    }
    const child: Frame = {
      rt: frame.rt,
      scope,
      variables: { ...frame.variables },
      language: frame.language,
      signal,
      mapItem: item,
      inBranch: false,
    };
    const output = await runBlock(child, processor, itemInput);
    if (withEvents) scope.emit('MapIterationSucceeded', details);
    return output;
  } catch (error) {
    if (withEvents)
      scope.emit(error instanceof AbortedError ? 'MapIterationAborted' : 'MapIterationFailed', details);
    throw error;
  }
}

async function mapItems(run: StateRun, input: unknown): Promise<unknown[]> {
  const { state, frame } = run;
  const reader = state.ItemReader as
    | { ReaderConfig?: unknown; Resource?: string; Arguments?: unknown }
    | undefined;
  let items: unknown;
  if (run.language === 'JSONata') {
    if (state.Items !== undefined) {
      items = await jsonataValue(state.Items, jsonataScope(run), 'Items');
      const expression =
        typeof state.Items === 'string' ? /^\{%([\s\S]*)%\}$/.exec(state.Items)?.[1]?.trim() : undefined;
      if (!Array.isArray(items) && expression !== undefined) {
        throw jsonataResultTypeError(expression, 'Items', 'array', items);
      }
    } else items = run.rawInput;
  } else if (reader !== undefined) {
    throw new StatesError(
      'States.Runtime',
      `ItemReader resource '${String(reader.Resource)}' is not supported`,
    );
  } else {
    items =
      state.ItemsPath === undefined
        ? input
        : selectPath(
            input,
            String(state.ItemsPath),
            run.context,
            frame.variables,
            'ItemsPath',
            frame.rt.expressions,
          );
  }
  if (!Array.isArray(items)) {
    // AWS shows the value itself: `... but was: "string"`, `... but was: {"foo":"bar"}`
    throw new StatesError(
      run.language === 'JSONata' ? 'States.QueryEvaluationError' : 'States.Runtime',
      `Map state input must be an array but was: ${jsonText(items)}`,
    );
  }
  return items;
}

async function maxConcurrency(run: StateRun, input: unknown): Promise<number> {
  const { state } = run;
  let value: unknown = state.MaxConcurrency;
  if (run.language === 'JSONata' && typeof value === 'string') {
    value = await jsonataValue(value, jsonataScope(run), 'MaxConcurrency');
  } else if (state.MaxConcurrencyPath !== undefined) {
    const path = String(state.MaxConcurrencyPath);
    const selected = selectPath(
      input,
      path,
      run.context,
      run.frame.variables,
      'MaxConcurrencyPath',
      run.frame.rt.expressions,
    );
    value = pathNumber('MaxConcurrencyPath', selected, 'integer', path, 0);
  }
  return typeof value === 'number' ? value : 0;
}

interface Tolerance {
  readonly configured: boolean;
  readonly count: number;
  readonly percentage: number;
}

async function toleratedFailures(run: StateRun, input: unknown): Promise<Tolerance> {
  const { state } = run;
  const read = async (
    field: 'ToleratedFailureCount' | 'ToleratedFailurePercentage',
    kind: 'integer' | 'float',
  ) => {
    let value: unknown = state[field];
    if (run.language === 'JSONata' && typeof value === 'string') {
      value = await jsonataValue(value, jsonataScope(run), field);
    } else if (state[`${field}Path`] !== undefined) {
      const path = String(state[`${field}Path`]);
      const selected = selectPath(
        input,
        path,
        run.context,
        run.frame.variables,
        `${field}Path`,
        run.frame.rt.expressions,
      );
      value = pathNumber(`${field}Path`, selected, kind, path);
    }
    return value as number | undefined;
  };
  const count = await read('ToleratedFailureCount', 'integer');
  const percentage = await read('ToleratedFailurePercentage', 'float');
  if (percentage !== undefined && (percentage < 0 || percentage > 100)) {
    throw new StatesError('States.Runtime', 'ToleratedFailurePercentage must be between 0 and 100.');
  }
  if (count !== undefined && count < 0) {
    throw new StatesError('States.Runtime', 'ToleratedFailureCount cannot be negative.');
  }
  return {
    configured: count !== undefined || percentage !== undefined,
    count: count ?? (percentage === undefined ? 0 : Number.POSITIVE_INFINITY),
    percentage: percentage ?? (count === undefined ? 0 : 100),
  };
}

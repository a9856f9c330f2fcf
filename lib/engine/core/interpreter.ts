/**
 * The Amazon States Language interpreter: runs a states block state by state in AWS's processing
 * order, emitting AWS-shaped history events through the execution's `ExecutionHistory`. On replay
 * (restart, redrive) states whose exit is already recorded are skipped with their recorded output
 * and variables.
 */

import { locateError } from '../dataflow/errors.ts';
import type { StoredEvent } from '../persistence/history.ts';
import { type QueryLanguage, StatesError } from '../types.ts';
import {
  applyInputPath,
  applyOutputPath,
  applyResultPath,
  assignVariables,
  choiceRuleMatches,
  type JsonataScope,
  jsonataCondition,
  jsonataValue,
  resolveDynamicValue,
  resolvePayloadTemplate,
  selectPath,
  timestampMillis,
  type Variables,
} from './data.ts';
import type { StateDefinition, StatesBlock } from './definition.ts';
import { MockedThrow } from './mock-config.ts';
import { errorMatches, type Retrier, retryDelaySeconds } from './retry.ts';
import type { ExecutionRuntime, Frame, StateOutcome, StateRun } from './runtime.ts';
import { AbortedError, sleepUntil } from './timers.ts';

/** AWS's quota of events in one execution's history. */
export const MAX_HISTORY_EVENTS = 25_000;

/** AWS's payload limit (256 KiB) for state input/output and task results. */
export const MAX_PAYLOAD_BYTES = 262_144;

const RETRYING_TYPES: ReadonlySet<string> = new Set(['Task', 'Map', 'Parallel']);

/** The mark of errors that no Retry or Catch may handle (States.Runtime, the engine's own DataLimitExceeded). */
const TERMINAL = Symbol('terminal');

/** Marks an error that no Retry or Catch may handle. */
export function terminal(error: StatesError): StatesError {
  Object.defineProperty(error, TERMINAL, { value: true });
  return error;
}

export function isTerminal(error: unknown): boolean {
  return (
    error instanceof StatesError &&
    (error.error === 'States.Runtime' || (error as { [TERMINAL]?: boolean })[TERMINAL] === true)
  );
}

/** Runs a states block from StartAt to its end; throws StatesError when it fails. */
export async function runBlock(frame: Frame, block: StatesBlock, input: unknown): Promise<unknown> {
  // Branches and iterations take turns state by state (each state yields once); the execution's
  // own thread runs states that finish synchronously back to back.
  const takesTurns = frame.inBranch || frame.mapItem !== undefined;
  let name = block.StartAt;
  let value = input;
  for (;;) {
    const state = block.States[name];
    if (!state) throw terminal(new StatesError('States.Runtime', `State '${name}' does not exist`));
    const running = runState(frame, name, state, value);
    const outcome = takesTurns || running instanceof Promise ? await running : running;
    if (outcome.next === undefined) return outcome.output;
    name = outcome.next;
    value = outcome.output;
  }
}

/**
 * A {@link StateRun} whose Context object is built when first read: most states of a JSONPath
 * chain never look at `$$`, and the object (and its EnteredTime text) would be garbage at once.
 */
class RunningState implements StateRun {
  readonly language: QueryLanguage;
  readonly enteredId: number;
  private builtContext: StateRun['context'] | undefined;

  constructor(
    readonly frame: Frame,
    readonly name: string,
    readonly state: StateDefinition,
    readonly rawInput: unknown,
    private readonly entered: StoredEvent,
    /** `<Type>StateExited` of this state's type. */
    readonly exitedType: string,
  ) {
    this.language = (state.QueryLanguage as QueryLanguage | undefined) ?? frame.language;
    this.enteredId = entered.id;
  }

  /** Spelled out when asked for (Map and Parallel name their scopes by it). */
  get enteredKey(): string {
    return this.entered.key;
  }

  get context(): StateRun['context'] {
    if (this.builtContext) return this.builtContext;
    const { rt, mapItem } = this.frame;
    const context: StateRun['context'] = {
      Execution: rt.contextBase.Execution,
      StateMachine: rt.contextBase.StateMachine,
      State: { EnteredTime: rt.texts.isoTime(this.entered.ts), Name: this.name },
    };
    // AWS shows State.RetryCount only for the states that can retry
    if (RETRYING_TYPES.has(this.state.Type)) context.State.RetryCount = 0;
    if (mapItem) context.Map = { Item: mapItem };
    this.builtContext = context;
    return context;
  }
}

interface StateEventTypes {
  readonly entered: string;
  readonly exited: string;
}

/** `<Type>StateEntered` / `<Type>StateExited` of each state type, shared by every event (the codec compares them by identity first). */
const STATE_EVENT_TYPES: ReadonlyMap<string, StateEventTypes> = new Map(
  ['Pass', 'Choice', 'Wait', 'Succeed', 'Fail', 'Task', 'Map', 'Parallel'].map((type) => [
    type,
    Object.freeze({ entered: `${type}StateEntered`, exited: `${type}StateExited` }),
  ]),
);

function stateEventTypes(stateType: string): StateEventTypes {
  // an unknown type fails at once (dispatch)
  return (
    STATE_EVENT_TYPES.get(stateType) ?? {
      entered: `${stateType}StateEntered`,
      exited: `${stateType}StateExited`,
    }
  );
}

/** Position of the state's `*StateEntered` event in its scope (names its branches and iterations). */
export function enteredSeq(run: StateRun): string {
  return run.enteredKey.slice(run.enteredKey.lastIndexOf('.') + 1);
}

function runState(
  frame: Frame,
  name: string,
  state: StateDefinition,
  rawInput: unknown,
): StateOutcome | Promise<StateOutcome> {
  const { scope, rt } = frame;
  const recorded = scope.peek();
  const types = stateEventTypes(state.Type);
  if (recorded && recorded.type === types.entered) {
    const exited = rt.history.exitOf(recorded.id);
    if (exited) {
      scope.skipPast(exited);
      const internal = exited.internal ?? {};
      if (internal.assigned) Object.assign(frame.variables, internal.assigned);
      const output = JSON.parse(String(exited.details?.output ?? 'null'));
      return internal.next === undefined ? { output } : { output, next: String(internal.next) };
    }
  }
  if (rt.history.length >= MAX_HISTORY_EVENTS) {
    throw terminal(
      new StatesError(
        'States.Runtime',
        `The execution reached the maximum number of history events (${MAX_HISTORY_EVENTS}) before entering the state '${name}'.`,
      ),
    );
  }
  const entered = scope.emitEntered(types.entered, name, rt.texts.of(rawInput));
  const run = new RunningState(frame, name, state, rawInput, entered, types.exited);
  try {
    const outcome = dispatch(run);
    // a Task locates its errors itself (one promise hop fewer per task)
    return outcome instanceof Promise && run.state.Type !== 'Task' ? settled(run, outcome) : outcome;
  } catch (error) {
    throw failureOf(run, error);
  }
}

async function settled(run: StateRun, outcome: Promise<StateOutcome>): Promise<StateOutcome> {
  try {
    return await outcome;
  } catch (error) {
    throw failureOf(run, error);
  }
}

/** Runs the state by its type; simple JSONPath states without Assign finish synchronously. */
function dispatch(run: StateRun): StateOutcome | Promise<StateOutcome> {
  switch (run.state.Type) {
    case 'Pass':
      return exitAfter(run, passState(run));
    case 'Choice':
      return exitAfter(run, choiceState(run));
    case 'Wait':
      return exitAfter(run, waitState(run));
    case 'Succeed':
      return exitAfter(run, succeedState(run));
    case 'Fail':
      return failState(run);
    case 'Task':
      return run.frame.rt.compoundStates.task(run);
    case 'Map':
      return run.frame.rt.compoundStates.map(run);
    case 'Parallel':
      return run.frame.rt.compoundStates.parallel(run);
    default:
      throw terminal(new StatesError('States.Runtime', `Unsupported state type '${run.state.Type}'`));
  }
}

function exitAfter(
  run: StateRun,
  outcome: StateOutcome | Promise<StateOutcome>,
): StateOutcome | Promise<StateOutcome> {
  return outcome instanceof Promise
    ? outcome.then((done) => exitSimple(run, done))
    : exitSimple(run, outcome);
}

/** Locates data-flow errors and records EvaluationFailed for JSONata evaluation failures. */
export function failureOf(run: StateRun, error: unknown): unknown {
  if (error instanceof AbortedError || !(error instanceof StatesError)) return error;
  if ((error as { located?: boolean }).located) return error;
  const located = locateError(error, { stateName: run.name, enteredEventId: run.enteredId }) as StatesError;
  if (located !== error && isTerminal(error)) terminal(located);
  if (located.error === 'States.QueryEvaluationError' && !(error as { reported?: boolean }).reported) {
    run.frame.scope.emit('EvaluationFailed', { error: located.error, cause: located.cause, state: run.name });
  }
  Object.defineProperty(located, 'located', { value: true });
  return located;
}

/** Emits `<Type>StateExited` with what replay needs to skip the state next time. */
export function exitState(run: StateRun, outcome: StateOutcome, assigned?: Variables): StateOutcome {
  const output = run.frame.rt.texts.of(outcome.output);
  checkPayloadSize(output, run);
  const exited = run instanceof RunningState ? run.exitedType : stateEventTypes(run.state.Type).exited;
  run.frame.scope.emitExited(
    exited,
    run.name,
    output,
    run.enteredId,
    outcome.next,
    assigned && hasKeys(assigned) ? assigned : undefined,
  );
  return outcome;
}

function hasKeys(object: object): boolean {
  for (const _ in object) return true;
  return false;
}

function checkPayloadSize(text: string, run: StateRun): void {
  if (text.length > MAX_PAYLOAD_BYTES / 4 && Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
    throw terminal(
      new StatesError(
        'States.DataLimitExceeded',
        `The state/task '${run.name}' returned a result with a size exceeding the maximum number of bytes service limit.`,
      ),
    );
  }
}

/** `$states` for JSONata fields of this state. */
export function jsonataScope(
  run: StateRun,
  extra?: { result?: unknown; errorOutput?: unknown },
): JsonataScope {
  return {
    input: run.rawInput,
    context: run.context,
    variables: run.frame.variables,
    expressions: run.frame.rt.expressions,
    ...extra,
  };
}

/** The state's effective input (JSONPath InputPath). */
export function effectiveInput(run: StateRun): unknown {
  if (run.language === 'JSONata') return run.rawInput;
  const path = run.state.InputPath as string | null | undefined;
  // no path: the Context object is not needed (and not built)
  if (path === undefined) return run.rawInput;
  return applyInputPath(run.rawInput, path, run.context, run.frame.variables, run.frame.rt.expressions);
}

/**
 * Applies the result of a state (Task/Map/Parallel/Pass) in AWS's order: JSONPath ResultSelector →
 * Assign → ResultPath → OutputPath; JSONata Output and Assign, both seeing `$states.result`.
 * Returns the state output and the assigned variables (not yet visible to the caller's frame).
 */
export function applyResult(
  run: StateRun,
  result: unknown,
  options: { readonly selector?: boolean } = {},
): AppliedResult | Promise<AppliedResult> {
  if (run.language === 'JSONata' || run.state.Assign !== undefined)
    return applyResultEvaluated(run, result, options);
  const { state, frame } = run;
  let selected = result;
  if (options.selector !== false && state.ResultSelector !== undefined) {
    selected = resolvePayloadTemplate(
      state.ResultSelector,
      result,
      run.context,
      frame.variables,
      'ResultSelector',
      frame.rt.expressions,
    );
  }
  const placed = applyResultPath(
    run.rawInput,
    selected,
    state.ResultPath as string | null | undefined,
    frame.rt.expressions,
  );
  const output = outputPathOf(run, placed);
  return { output, assigned: NONE_ASSIGNED };
}

/** The state's output after JSONPath OutputPath; the Context object is built only for a path. */
function outputPathOf(run: StateRun, value: unknown): unknown {
  const path = run.state.OutputPath as string | null | undefined;
  if (path === undefined) return value;
  return applyOutputPath(value, path, run.context, run.frame.variables, run.frame.rt.expressions);
}

/** A state's output and the variables it assigned. */
export interface AppliedResult {
  readonly output: unknown;
  readonly assigned: Variables;
}

/** No Assign: shared, never written (commitVariables only reads it). */
const NONE_ASSIGNED: Variables = Object.freeze({}) as Variables;

/** {@link applyResult} for JSONata states and states with Assign (evaluation may be asynchronous). */
async function applyResultEvaluated(
  run: StateRun,
  result: unknown,
  options: { readonly selector?: boolean },
): Promise<AppliedResult> {
  const { state, frame } = run;
  if (run.language === 'JSONata') {
    const scope = jsonataScope(run, { result });
    const assigned = state.Assign === undefined ? {} : await assignVariables(state.Assign, 'JSONata', scope);
    const output = state.Output === undefined ? result : await jsonataValue(state.Output, scope, 'Output');
    return { output, assigned };
  }
  let selected = result;
  if (options.selector !== false && state.ResultSelector !== undefined) {
    selected = resolvePayloadTemplate(
      state.ResultSelector,
      result,
      run.context,
      frame.variables,
      'ResultSelector',
      frame.rt.expressions,
    );
  }
  const assigned =
    state.Assign === undefined
      ? {}
      : await assignVariables(state.Assign, 'JSONPath', jsonataScope(run, { result: selected }));
  const placed = applyResultPath(
    run.rawInput,
    selected,
    state.ResultPath as string | null | undefined,
    frame.rt.expressions,
  );
  const output = outputPathOf(run, placed);
  return { output, assigned };
}

/** Makes assigned variables visible to the following states of the frame. */
export function commitVariables(run: StateRun, assigned: Variables): void {
  if (assigned === NONE_ASSIGNED) return;
  for (const k of Object.keys(assigned)) run.frame.variables[k] = assigned[k];
}

function nextOf(state: StateDefinition): string | undefined {
  return state.End === true ? undefined : (state.Next as string | undefined);
}

const NO_SELECTOR = { selector: false } as const;

function passState(run: StateRun): StateOutcome | Promise<StateOutcome> {
  const { state } = run;
  let result: unknown = run.rawInput;
  if (run.language === 'JSONPath') {
    const input = effectiveInput(run);
    result = input;
    if (Object.hasOwn(state, 'Result')) result = state.Result;
    else if (state.Parameters !== undefined) {
      result = resolvePayloadTemplate(
        state.Parameters,
        input,
        run.context,
        run.frame.variables,
        'Parameters',
        run.frame.rt.expressions,
      );
    }
  }
  const applied = applyResult(run, result, NO_SELECTOR);
  if (applied instanceof Promise) return applied.then((a) => passed(run, a));
  return passed(run, applied);
}

function passed(run: StateRun, { output, assigned }: AppliedResult): StateOutcome {
  commitVariables(run, assigned);
  return withAssigned({ output, next: nextOf(run.state) }, assigned);
}

function withAssigned(outcome: { output: unknown; next?: string }, assigned: Variables): StateOutcome {
  return assigned === NONE_ASSIGNED ? outcome : { ...outcome, assigned };
}

function choiceState(run: StateRun): StateOutcome | Promise<StateOutcome> {
  if (run.language === 'JSONata') return jsonataChoiceState(run);
  const { state, frame } = run;
  const choices = (state.Choices as Array<Record<string, unknown>>) ?? [];
  const input = effectiveInput(run);
  for (const rule of choices) {
    if (choiceRuleMatches(rule, input, run.context, frame.variables, frame.rt.expressions))
      return choose(run, rule, String(rule.Next));
  }
  if (typeof state.Default === 'string') return choose(run, state, state.Default);
  throw noChoiceMatched(run);
}

function noChoiceMatched(run: StateRun): StatesError {
  return new StatesError(
    'States.NoChoiceMatched',
    `No Matches! at ${run.name}, state input: ${JSON.stringify(run.rawInput)}`,
  );
}

async function jsonataChoiceState(run: StateRun): Promise<StateOutcome> {
  const { state } = run;
  const choices = (state.Choices as Array<Record<string, unknown>>) ?? [];
  const scope = jsonataScope(run);
  for (const rule of choices) {
    if (await jsonataCondition(rule.Condition, scope)) {
      return choose(run, rule, String(rule.Next));
    }
  }
  if (typeof state.Default === 'string') return choose(run, state, state.Default);
  throw noChoiceMatched(run);
}

function choose(
  run: StateRun,
  holder: Record<string, unknown>,
  next: string,
): StateOutcome | Promise<StateOutcome> {
  if (run.language === 'JSONata' || holder.Assign !== undefined) return chooseEvaluated(run, holder, next);
  const input = effectiveInput(run);
  const output = outputPathOf(run, input);
  return { output, next };
}

/** {@link choose} for JSONata states and choices with Assign. */
async function chooseEvaluated(
  run: StateRun,
  holder: Record<string, unknown>,
  next: string,
): Promise<StateOutcome> {
  const { state } = run;
  if (run.language === 'JSONata') {
    const scope = jsonataScope(run);
    const assigned =
      holder.Assign === undefined ? {} : await assignVariables(holder.Assign, 'JSONata', scope);
    const outputTemplate = holder.Output ?? state.Output;
    const output =
      outputTemplate === undefined ? run.rawInput : await jsonataValue(outputTemplate, scope, 'Output');
    commitVariables(run, assigned);
    return withAssigned({ output, next }, assigned);
  }
  const input = effectiveInput(run);
  const assigned =
    holder.Assign === undefined
      ? {}
      : await assignVariables(holder.Assign, 'JSONPath', jsonataScope(run, { result: input }));
  const output = outputPathOf(run, input);
  commitVariables(run, assigned);
  return withAssigned({ output, next }, assigned);
}

async function waitState(run: StateRun): Promise<StateOutcome> {
  const { state, frame } = run;
  const { rt } = frame;
  const input = effectiveInput(run);
  let untilMs: number;
  const enteredAt = rt.history.eventAt(run.enteredId).ts;
  if (run.language === 'JSONata') {
    const scope = jsonataScope(run);
    if (state.Seconds !== undefined) {
      const seconds = await jsonataValue(state.Seconds, scope, 'Seconds');
      untilMs = enteredAt + scaled(rt, Number(seconds) * 1000);
    } else {
      const text = await jsonataValue(state.Timestamp, scope, 'Timestamp');
      const at = timestampMillis(text);
      if (at === undefined) {
        throw new StatesError(
          'States.QueryEvaluationError',
          `The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: ${String(text)}`,
        );
      }
      untilMs = enteredAt + scaled(rt, at - enteredAt);
    }
  } else if (state.Seconds !== undefined) {
    untilMs = enteredAt + scaled(rt, Number(state.Seconds) * 1000);
  } else if (state.SecondsPath !== undefined) {
    const path = String(state.SecondsPath);
    const seconds = selectPath(input, path, run.context, frame.variables, 'SecondsPath', rt.expressions);
    if (typeof seconds !== 'number' || !Number.isInteger(seconds)) {
      throw new StatesError(
        'States.Runtime',
        `The SecondsPath parameter cannot be parsed as a long value: ${path} == ${JSON.stringify(seconds)}`,
      );
    }
    if (seconds < 0) {
      throw new StatesError(
        'States.Runtime',
        `The SecondsPath parameter references a negative value: ${path} == ${seconds}`,
      );
    }
    untilMs = enteredAt + scaled(rt, seconds * 1000);
  } else {
    const isPath = state.TimestampPath !== undefined;
    const text = isPath
      ? selectPath(
          input,
          String(state.TimestampPath),
          run.context,
          frame.variables,
          'TimestampPath',
          rt.expressions,
        )
      : state.Timestamp;
    const at = timestampMillis(text);
    if (at === undefined) {
      throw new StatesError(
        'States.Runtime',
        isPath
          ? `The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: ${String(state.TimestampPath)} == ${String(text)}`
          : `The Timestamp parameter does not reference a valid ISO-8601 extended offset date-time format string: ${String(text)}`,
      );
    }
    untilMs = enteredAt + scaled(rt, at - enteredAt);
  }
  try {
    await sleepUntil(untilMs, rt.now, frame.signal);
  } catch (error) {
    if (error instanceof AbortedError) frame.scope.emit('WaitStateAborted');
    throw error;
  }
  if (run.language === 'JSONata') {
    const { output, assigned } = await applyResult(run, run.rawInput);
    commitVariables(run, assigned);
    return withAssigned({ output, next: nextOf(state) }, assigned);
  }
  const assigned =
    state.Assign === undefined
      ? {}
      : await assignVariables(state.Assign, 'JSONPath', jsonataScope(run, { result: input }));
  const output = outputPathOf(run, input);
  commitVariables(run, assigned);
  return withAssigned({ output, next: nextOf(state) }, assigned);
}

async function jsonataSucceedState(run: StateRun): Promise<StateOutcome> {
  const { output, assigned } = await applyResult(run, run.rawInput);
  return withAssigned({ output }, assigned);
}

/** A duration scaled by the engine's time scale (negative durations do not wait). */
export function scaled(rt: ExecutionRuntime, ms: number): number {
  return Math.max(0, ms) * rt.timeScale;
}

function succeedState(run: StateRun): StateOutcome | Promise<StateOutcome> {
  if (run.language === 'JSONata') return jsonataSucceedState(run);
  const input = effectiveInput(run);
  const output = outputPathOf(run, input);
  return { output };
}

async function failState(run: StateRun): Promise<never> {
  const { state, frame } = run;
  let error: unknown = state.Error;
  let cause: unknown = state.Cause;
  if (run.language === 'JSONata') {
    const scope = jsonataScope(run);
    if (error !== undefined) error = await jsonataValue(error, scope, 'Error');
    if (cause !== undefined) cause = await jsonataValue(cause, scope, 'Cause');
  } else {
    if (state.ErrorPath !== undefined) {
      error = resolveDynamicValue(
        state.ErrorPath,
        run.rawInput,
        run.context,
        frame.variables,
        'ErrorPath',
        frame.rt.expressions,
      );
    }
    if (state.CausePath !== undefined) {
      cause = resolveDynamicValue(
        state.CausePath,
        run.rawInput,
        run.context,
        frame.variables,
        'CausePath',
        frame.rt.expressions,
      );
    }
  }
  throw new FailStateError(
    error === undefined || error === null ? undefined : String(error),
    cause === undefined || cause === null ? undefined : String(cause),
  );
}

/** The failure raised by a Fail state (may have no Error or Cause). */
export class FailStateError extends StatesError {
  constructor(
    readonly failError: string | undefined,
    readonly failCause: string | undefined,
  ) {
    super(failError ?? '', failCause);
  }
}

/** Task timeouts: their `*TimedOut` events carry no cause, their error output an empty one (as AWS records). */
const TIMEOUT_ERRORS: ReadonlySet<string> = new Set(['States.Timeout', 'States.HeartbeatTimeout']);

/** `{ Error, Cause }` as a Catch sees it. */
export function errorOutput(error: StatesError): Record<string, unknown> {
  if (error instanceof MockedThrow) {
    // a mocked timeout stands for one: its Cause is AWS's empty one, where other causeless throws have null
    const missingCause = TIMEOUT_ERRORS.has(error.error) ? '' : null;
    return { Error: error.mockedError ?? null, Cause: error.mockedCause ?? missingCause };
  }
  if (error instanceof FailStateError) {
    const out: Record<string, unknown> = {};
    if (error.failError !== undefined) out.Error = error.failError;
    if (error.failCause !== undefined) out.Cause = error.failCause;
    return out;
  }
  const out: Record<string, unknown> = { Error: error.error };
  if (error.cause !== undefined) out.Cause = error.cause;
  else if (TIMEOUT_ERRORS.has(error.error)) out.Cause = '';
  return out;
}

/** Normalises anything thrown while a state ran into a StatesError (or rethrows aborts). */
export function asStatesError(error: unknown): StatesError {
  if (error instanceof AbortedError) throw error;
  if (error instanceof StatesError) return error;
  return terminal(new StatesError('States.Runtime', error instanceof Error ? error.message : String(error)));
}

/**
 * Runs `attempt` with the state's Retry and Catch: retries by the first matching retrier (each
 * retrier counts its own attempts), then the first matching catcher; uncatchable errors pass.
 * `onFailed` emits the state's final failure event (MapStateFailed, ParallelStateFailed).
 */
export async function withRetryAndCatch(
  run: StateRun,
  attempt: () => Promise<{ output: unknown; assigned: Variables }>,
  onFailed?: (error: StatesError) => void,
): Promise<StateOutcome> {
  const retries = new RetryCounts();
  for (;;) {
    try {
      const { output, assigned } = await attempt();
      return exitAttempt(run, output, assigned);
    } catch (error) {
      const caught = await retryOrCatch(run, error, retries, onFailed);
      if (caught !== RETRY) return caught;
    }
  }
}

/** A state's successful attempt: its variables assigned and its exit recorded. */
export function exitAttempt(run: StateRun, output: unknown, assigned: Variables): StateOutcome {
  commitVariables(run, assigned);
  return exitState(run, { output, next: nextOf(run.state) }, assigned);
}

/** Attempts per retrier of one state, counted from the first failure (most states never fail). */
export class RetryCounts {
  private attempts: number[] | undefined;

  /** Attempts so far, one count per retrier of the state. */
  of(retriers: readonly Retrier[]): number[] {
    this.attempts ??= new Array<number>(retriers.length).fill(0);
    return this.attempts;
  }
}

/** {@link retryOrCatch}: the state runs its attempt again. */
export const RETRY: unique symbol = Symbol('retry');

/**
 * After a failed attempt (the error as thrown): waits out the retry interval and answers
 * {@link RETRY} when a retrier matches and has attempts left, else the outcome of the first
 * matching catcher; throws the located failure when neither takes it (and for uncatchable errors).
 */
export async function retryOrCatch(
  run: StateRun,
  error: unknown,
  retries: RetryCounts,
  onFailed?: (error: StatesError) => void,
): Promise<StateOutcome | typeof RETRY> {
  const { state, frame } = run;
  const failure = failureOf(run, asStatesError(error)) as StatesError;
  if (isTerminal(failure)) {
    onFailed?.(failure);
    throw failure;
  }
  const retriers = (state.Retry as Retrier[] | undefined) ?? [];
  const index = retriers.findIndex((r) => errorMatches(r.ErrorEquals, failure.error));
  const retrier = retriers[index];
  const attempts = retries.of(retriers);
  if (retrier && (attempts[index] ?? 0) < (retrier.MaxAttempts ?? 3)) {
    const delay = retryDelaySeconds(retrier, attempts[index] ?? 0);
    attempts[index] = (attempts[index] ?? 0) + 1;
    run.context.State.RetryCount = (run.context.State.RetryCount ?? 0) + 1;
    const failedAt = frame.rt.history.eventAt(frame.scope.lastEventId).ts;
    await sleepUntil(failedAt + scaled(frame.rt, delay * 1000), frame.rt.now, frame.signal);
    return RETRY;
  }
  onFailed?.(failure);
  const catchers = (state.Catch as Array<Record<string, unknown>> | undefined) ?? [];
  const catcher = catchers.find((c) => errorMatches(c.ErrorEquals as string[], failure.error));
  if (!catcher) throw failure;
  return catchWith(run, catcher, errorOutput(failure));
}

async function catchWith(
  run: StateRun,
  catcher: Record<string, unknown>,
  error: Record<string, unknown>,
): Promise<StateOutcome> {
  const next = String(catcher.Next);
  if (run.language === 'JSONata') {
    const scope = jsonataScope(run, { errorOutput: error });
    const assigned =
      catcher.Assign === undefined ? {} : await assignVariables(catcher.Assign, 'JSONata', scope);
    const output = catcher.Output === undefined ? error : await jsonataValue(catcher.Output, scope, 'Output');
    commitVariables(run, assigned);
    return exitState(run, { output, next }, assigned);
  }
  const assigned =
    catcher.Assign === undefined
      ? {}
      : await assignVariables(catcher.Assign, 'JSONPath', jsonataScope(run, { errorOutput: error }));
  const output = applyResultPath(
    run.rawInput,
    error,
    catcher.ResultPath as string | null | undefined,
    run.frame.rt.expressions,
  );
  commitVariables(run, assigned);
  return exitState(run, { output, next }, assigned);
}

/** Exits a simple state, recording the variables it assigned. */
function exitSimple(run: StateRun, outcome: StateOutcome): StateOutcome {
  return exitState(run, outcome, outcome.assigned);
}

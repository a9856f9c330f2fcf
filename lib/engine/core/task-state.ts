/**
 * The Task state: Parameters/Arguments, the service call (mocked, in-process resource, child
 * execution, `.waitForTaskToken` callback or activity worker), TimeoutSeconds/HeartbeatSeconds, and AWS's
 * Lambda*, Activity* and Task* history events. A task whose outcome is in the history is never
 * called again: replay takes the recorded result.
 */

import { NOT_TRUNCATED, type StoredEvent } from '../persistence/history.ts';
import type { Scope } from '../persistence/journal.ts';
import { StatesError, type TaskInvocation } from '../types.ts';
import { jsonataValue, pathNumber, resolvePayloadTemplate, selectPath } from './data.ts';
import {
  applyResult,
  asStatesError,
  effectiveInput,
  exitAttempt,
  failureOf,
  isTerminal,
  jsonataScope,
  MAX_PAYLOAD_BYTES,
  RETRY,
  RetryCounts,
  retryOrCatch,
  scaled,
} from './interpreter.ts';
import { MockedThrow } from './mock-config.ts';
import type { StateOutcome, StateRun } from './runtime.ts';
import { assertUsableParameters } from './service-parameters.ts';
import type { ResourceKind, TaskPlan } from './task-plan.ts';
import {
  newTaskToken,
  type TaskTokenRegistry,
  type TokenOutcome,
  type TokenWaiter,
  tokenHashMember,
} from './task-tokens.ts';
import { AbortedError, type AbortWatcher, type AbortWatchers, sleepUntil } from './timers.ts';

/** The failure of an attempt that was under way when the engine stopped (see lib/engine/persistence/README.md). */
export const INTERRUPTED = {
  error: 'States.TaskFailed',
  cause:
    'The engine stopped while this task was running; whether the call completed is unknown, so it is not taken as done.',
} as const;

/** Lambda and activity events name no resource type: one shared, never written object. */
const NO_IDS: Readonly<Record<string, never>> = Object.freeze({});

/**
 * Runs a Task state with its Retry and Catch (the loop of `withRetryAndCatch`, in one async
 * function: a task takes half the promise hops), and locates its errors as the interpreter does
 * for every state (see `failureOf`).
 */
export async function taskState(run: StateRun): Promise<StateOutcome> {
  try {
    const plan = run.frame.rt.taskPlans.planOf(run.state);
    let retries: RetryCounts | undefined;
    for (;;) {
      try {
        let begun = beginAttempt(run, plan);
        if (begun instanceof Preparing) begun = (await begun.ready).begun;
        let result: unknown;
        if (begun instanceof RecordedResult) result = begun.value;
        else {
          // awaited here, not in a function of its own: one promise hop fewer per task
          let resultText: string;
          try {
            result = await begun;
            resultText = resultTextOf(run, plan, result);
          } catch (error) {
            throw error instanceof RecordedFailure ? error.failure : callFailed(run, plan, error);
          }
          callSucceeded(run, plan, resultText);
        }
        const applied = applyResult(run, result);
        const { output, assigned } = applied instanceof Promise ? await applied : applied;
        return exitAttempt(run, output, assigned);
      } catch (error) {
        retries ??= new RetryCounts();
        const caught = await retryOrCatch(run, error, retries);
        if (caught !== RETRY) return caught;
      }
    }
  } catch (error) {
    if (
      error instanceof AbortedError ||
      (run.frame.inBranch && error instanceof StatesError && !isTerminal(error))
    ) {
      run.frame.scope.emit('TaskStateAborted');
    }
    throw failureOf(run, error);
  }
}

/** An attempt whose result replay found in the history: nothing is called. */
class RecordedResult {
  constructor(readonly value: unknown) {}
}

/** An attempt that evaluates its parameters or durations first (JSONata, TimeoutSeconds...). */
class Preparing {
  constructor(readonly ready: Promise<{ readonly begun: Promise<unknown> | RecordedResult }>) {}
}

/**
 * Starts an attempt: records `*Scheduled` and `*Started` and makes the call (whose promise it
 * returns; {@link callSucceeded} / {@link callFailed} record how it ended), or takes the recorded
 * result on replay. Synchronous unless the parameters or durations need evaluating.
 */
function beginAttempt(run: StateRun, plan: TaskPlan): Promise<unknown> | RecordedResult | Preparing {
  // `.sync` tasks have a token too ($$.Task.Token): SendTaskSuccess/Failure on it ends them, as on AWS
  const token = plan.kind.pattern === 'request' ? undefined : newTaskToken(run.frame.rt.random);
  if (token) run.context.Task = { Token: token };
  if (run.language === 'JSONata' || plan.timeout || plan.heartbeat)
    return new Preparing(prepared(run, plan, token));
  return callTask(run, plan, token, taskParameters(run), undefined, undefined);
}

async function prepared(
  run: StateRun,
  plan: TaskPlan,
  token: string | undefined,
): Promise<{ readonly begun: Promise<unknown> | RecordedResult }> {
  const parameters = run.language === 'JSONata' ? await taskArguments(run) : taskParameters(run);
  const timeoutSeconds = plan.timeout ? await durationField(run, 'TimeoutSeconds') : undefined;
  const heartbeatSeconds = plan.heartbeat ? await durationField(run, 'HeartbeatSeconds') : undefined;
  return { begun: callTask(run, plan, token, parameters, timeoutSeconds, heartbeatSeconds) };
}

/** The call's result text, size-checked (a failure here is the call's: `*Failed` records it). */
function resultTextOf(run: StateRun, plan: TaskPlan, result: unknown): string {
  const resultText = run.frame.rt.texts.of(result);
  const text = resultText ?? 'null';
  if (text.length > MAX_PAYLOAD_BYTES / 4 && Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
    throw new StatesError(
      'States.DataLimitExceeded',
      `The state/task '${plan.resource}' returned a result with a size exceeding the maximum number of bytes service limit.`,
    );
  }
  return resultText;
}

function callSucceeded(run: StateRun, plan: TaskPlan, resultText: string): void {
  const { scope } = run.frame;
  if (resultText === undefined)
    scope.emit(plan.events.succeeded, { ...plan.ids, output: resultText, outputDetails: NOT_TRUNCATED });
  else scope.emitTaskEvent(plan.events.succeeded, plan.ids, resultText);
}

/** Records how the call failed (`*Failed` / `*TimedOut`); returns what the attempt throws. */
function callFailed(run: StateRun, plan: TaskPlan, error: unknown): unknown {
  if (error instanceof AbortedError) return error;
  const { frame } = run;
  // a call that ended because its branch or execution was stopped was aborted, not failed
  if (frame.signal.aborted) return new AbortedError(frame.signal.reason);
  const failure = asStatesError(error);
  const timedOut = failure.error === 'States.Timeout' || failure.error === 'States.HeartbeatTimeout';
  const details: Record<string, unknown> = { ...plan.ids };
  if (!(failure instanceof MockedThrow) || failure.mockedError !== undefined) details.error = failure.error;
  if (failure.cause !== undefined) details.cause = failure.cause;
  frame.scope.emit(timedOut ? plan.events.timedOut : plan.events.failed, details);
  return failure;
}

function callTask(
  run: StateRun,
  plan: TaskPlan,
  token: string | undefined,
  parameters: unknown,
  timeoutSeconds: number | undefined,
  heartbeatSeconds: number | undefined,
): Promise<unknown> | RecordedResult {
  const { frame } = run;
  const { rt, scope } = frame;
  const { resource, kind, events } = plan;
  const ids = plan.ids ?? NO_IDS;
  // parameters AWS would not use fail the execution before anything is scheduled
  if (plan.checkParameters) assertUsableParameters(plan.checkParameters, parameters);
  // an activity nobody mocks waits for a worker: it starts when one takes it with GetActivityTask
  const worker = kind.family === 'Activity' && !rt.mocks?.mocks(run.name);
  // a task already scheduled stays so on replay, even if its activity was deleted since
  const recorded = worker ? scope.peek()?.type : undefined;
  if (recorded === 'ActivityScheduleFailed') {
    // a history written before the engine answered as AWS does (below): replayed as it was
    const failed = scope.emit('ActivityScheduleFailed');
    throw new StatesError(String(failed.details?.error), String(failed.details?.cause));
  }
  if (worker && recorded !== 'ActivityScheduled' && !rt.activities.exists(resource)) {
    // AWS schedules nothing: the execution fails (test_activities::test_activity_task_on_deleted)
    throw new StatesError('States.Runtime', `The activity ${resource} does not exist.`);
  }

  const scheduledEvent =
    kind.family !== 'Task' && timeoutSeconds === undefined && heartbeatSeconds === undefined
      ? scope.emitScheduled(events.scheduled, resource, rt.texts.of(parameters))
      : emitScheduled(run, plan, parameters, token, timeoutSeconds, heartbeatSeconds);
  // on replay: whether this attempt had started before the engine stopped
  const startedBefore = !worker && scope.peek()?.type === events.started;
  // TimeoutSeconds counts from the start; a worker's task starts later (ActivityStarted when one
  // takes it) but times out counting from when it was queued
  const clockStart = worker
    ? scheduledEvent
    : kind.family === 'Activity'
      ? scope.emit(events.started, { workerName: 'plangate' })
      : scope.emitTaskEvent(events.started, plan.ids);

  // with time scaled to 0 nothing waits, so nothing can time out either
  const timed = rt.timeScale > 0;
  const timeoutAt =
    timeoutSeconds === undefined || !timed ? undefined : clockStart.ts + scaled(rt, timeoutSeconds * 1000);
  const heartbeatMs =
    heartbeatSeconds === undefined || !timed ? undefined : scaled(rt, heartbeatSeconds * 1000);

  const recordedOutcome = takeRecordedOutcome(run, kind);
  if (recordedOutcome) return new RecordedResult(recordedOutcome.value);
  if (startedBefore && !rt.mocks?.mocks(run.name) && scope.peek()?.type !== 'TaskSubmitted') {
    // The engine stopped while this call was under way (killed, or closed): it may or may not
    // have run. It is not silently made again: the attempt fails, and the state's Retry and
    // Catch take it from there, as for any failed attempt.
    if (token) rt.tokens.close(String(scheduledEvent.internal?.tokenHash));
    const failed = scope.emit(events.failed, {
      ...ids,
      error: INTERRUPTED.error,
      cause: INTERRUPTED.cause,
    });
    throw new StatesError(String(failed.details?.error), String(failed.details?.cause));
  }

  let calling: Promise<unknown>;
  try {
    calling = call(run, plan, parameters, token, scheduledEvent, timeoutAt, heartbeatMs, timeoutSeconds);
  } catch (error) {
    // recorded at once, as a call that fails later is when it does
    return Promise.reject(new RecordedFailure(callFailed(run, plan, error)));
  }
  // whoever received the parameters may change them from now on: texts are taken afresh
  rt.texts.forget();
  return calling;
}

/** A call that failed before it returned a promise, its failure already recorded. */
class RecordedFailure {
  constructor(readonly failure: unknown) {}
}

/** A task's `*Scheduled` event in full: a service integration's, or one with a timeout or heartbeat. */
function emitScheduled(
  run: StateRun,
  plan: TaskPlan,
  parameters: unknown,
  token: string | undefined,
  timeoutSeconds: number | undefined,
  heartbeatSeconds: number | undefined,
): StoredEvent {
  const { kind } = plan;
  const scheduled: Record<string, unknown> =
    kind.family === 'Task'
      ? {
          resourceType: kind.resourceType,
          resource: kind.resourceName,
          region: run.frame.rt.region,
          parameters: redact(run.frame.rt.texts.of(parameters), token),
        }
      : { resource: plan.resource, input: run.frame.rt.texts.of(parameters), inputDetails: NOT_TRUNCATED };
  if (timeoutSeconds !== undefined) scheduled.timeoutInSeconds = timeoutSeconds;
  // Lambda's events have no heartbeat
  if (heartbeatSeconds !== undefined && kind.family !== 'LambdaFunction')
    scheduled.heartbeatInSeconds = heartbeatSeconds;
  return run.frame.scope.emit(
    plan.events.scheduled,
    scheduled,
    token ? tokenHashMember(token, run.frame.rt.journal.memoryOnly) : undefined,
  );
}

/** The effective parameters of a JSONata task (Arguments, else the input). */
async function taskArguments(run: StateRun): Promise<unknown> {
  const { state } = run;
  return state.Arguments === undefined
    ? run.rawInput
    : jsonataValue(state.Arguments, jsonataScope(run), 'Arguments');
}

/** The effective parameters of a JSONPath task (Parameters, else the effective input). */
function taskParameters(run: StateRun): unknown {
  const { state } = run;
  const input = effectiveInput(run);
  if (state.Parameters === undefined) return input;
  const { variables, rt } = run.frame;
  return resolvePayloadTemplate(
    state.Parameters,
    input,
    run.context,
    variables,
    'Parameters',
    rt.expressions,
  );
}

/** TimeoutSeconds / HeartbeatSeconds from their literal, *Path or JSONata form. */
async function durationField(
  run: StateRun,
  field: 'TimeoutSeconds' | 'HeartbeatSeconds',
): Promise<number | undefined> {
  const { state } = run;
  let value: unknown = state[field];
  if (run.language === 'JSONata' && typeof value === 'string') {
    value = await jsonataValue(value, jsonataScope(run), field);
  } else if (state[`${field}Path`] !== undefined) {
    const path = String(state[`${field}Path`]);
    const { variables, rt } = run.frame;
    const selected = selectPath(
      effectiveInput(run),
      path,
      run.context,
      variables,
      `${field}Path`,
      rt.expressions,
    );
    value = pathNumber(`${field}Path`, selected, 'integer', path);
  }
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new StatesError(
      'States.Runtime',
      `The ${field} value must be a positive integer, but was ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** On replay: the recorded result of this call, consuming its events. */
function takeRecordedOutcome(run: StateRun, kind: ResourceKind): { value: unknown } | undefined {
  const { scope } = run.frame;
  let next = scope.peek();
  // a `.sync`/callback task's TaskSubmitted or a worker's ActivityStarted precedes the outcome
  if (next?.type === 'TaskSubmitted' || next?.type === 'ActivityStarted') {
    const after = run.frame.rt.journal.recorded(nextKey(next));
    if (!after || !isOutcome(after.type, kind)) return undefined;
    scope.emit(next.type);
    next = after;
  }
  if (!next || !isOutcome(next.type, kind)) return undefined;
  const event = scope.emit(next.type);
  if (event.type.endsWith('Succeeded')) return { value: JSON.parse(String(event.details?.output ?? 'null')) };
  const error = event.details?.error as string | undefined;
  const cause = event.details?.cause as string | undefined;
  throw error === undefined ? new MockedThrow(undefined, cause) : new StatesError(error, cause);
}

function nextKey(event: StoredEvent): string {
  const dot = event.key.lastIndexOf('.');
  return `${event.key.slice(0, dot)}.${Number(event.key.slice(dot + 1)) + 1}`;
}

function isOutcome(type: string, kind: ResourceKind): boolean {
  return (
    type === `${kind.family}Succeeded` || type === `${kind.family}Failed` || type === `${kind.family}TimedOut`
  );
}

function call(
  run: StateRun,
  plan: TaskPlan,
  parameters: unknown,
  token: string | undefined,
  scheduled: StoredEvent,
  timeoutAt: number | undefined,
  heartbeatMs: number | undefined,
  timeoutSeconds: number | undefined,
): Promise<unknown> {
  const { frame, name } = run;
  const { rt } = frame;
  const { resource, kind } = plan;
  if (rt.mocks?.mocks(name)) {
    if (kind.pattern !== 'request') emitSubmitted(run, plan, {});
    return Promise.resolve(rt.mocks.invoke(name));
  }
  if (kind.pattern === 'token' && token && timeoutAt === undefined) {
    // nothing but a stop or a failing sibling (the frame's signal) or a failed dispatch can end
    // this call early: no controller of its own
    return callbackTask(run, plan, parameters, token, scheduled, heartbeatMs, timeoutSeconds, frame.signal);
  }
  if (plan.child || kind.pattern !== 'request' || kind.family === 'Activity' || timeoutAt !== undefined) {
    return guardedCall(run, plan, parameters, token, scheduled, timeoutAt, heartbeatMs, timeoutSeconds);
  }
  // nothing but a stop or a failing sibling can end this call early: the frame's signal says both
  const persisted = rt.journal.persist();
  const invocation = taskInvocation(run, resource, parameters, undefined, timeoutSeconds, frame.signal);
  return persisted === undefined
    ? rt.invokeResource(invocation)
    : persisted.then(() => rt.invokeResource(invocation));
}

/** A child execution, a callback task or a task with a deadline: raced against its timeouts. */
async function guardedCall(
  run: StateRun,
  plan: TaskPlan,
  parameters: unknown,
  token: string | undefined,
  scheduled: StoredEvent,
  timeoutAt: number | undefined,
  heartbeatMs: number | undefined,
  timeoutSeconds: number | undefined,
): Promise<unknown> {
  const { frame } = run;
  const { rt, scope } = frame;
  const { resource, kind, child: isChild } = plan;
  const controller = new AbortController();
  // Through the frame's one shared listener: a fan-out of many guarded calls on one branch
  // signal would otherwise add a listener each (and Node warns past ten).
  const relay: AbortWatcher = { aborted: (reason) => controller.abort(reason) };
  const watchers = rt.abortWatchers.of(frame.signal);
  if (frame.signal.aborted) controller.abort(frame.signal.reason);
  else watchers.add(relay);
  const recordedSubmit = scope.peek();
  // a `.sync` task also ends with SendTaskSuccess/Failure on its token (by its hash after a
  // restart); the call's end (the finally below aborts the controller) closes the token
  const tokenAnswer =
    kind.pattern === 'sync' && token !== undefined
      ? syncTokenAnswer(
          run,
          scheduled,
          recordedSubmit?.type === 'TaskSubmitted' ? undefined : token,
          controller.signal,
        )
      : undefined;
  try {
    const guarded = <T>(work: Promise<T>) => withDeadline(work, timeoutAt, rt.now, controller.signal);
    // the call's own result, or the output SendTaskSuccess gave the `.sync` task's token first
    const synced = async (work: Promise<unknown>): Promise<unknown> => {
      const first = await guarded(tokenAnswer ? Promise.race([work, tokenAnswer]) : work);
      return first instanceof TokenAnswer ? first.output : first;
    };
    if (kind.family === 'Activity')
      return await guarded(activityTask(run, scheduled, heartbeatMs, controller.signal));
    if (isChild && kind.pattern !== 'token') {
      let childArn: string;
      if (recordedSubmit?.type === 'TaskSubmitted') {
        scope.emit('TaskSubmitted');
        childArn = String(JSON.parse(String(recordedSubmit.details?.output ?? '{}')).ExecutionArn);
      } else {
        await rt.journal.persist();
        const started = await rt.startChildExecution(parameters, rt.executionArn);
        if (kind.pattern === 'request')
          return { ExecutionArn: started.ExecutionArn, StartDate: started.StartDate };
        emitSubmitted(run, plan, started);
        childArn = started.ExecutionArn;
      }
      return await synced(childResult(rt.awaitChildExecution(childArn, controller.signal), kind));
    }
    if (kind.pattern === 'token' && token) {
      return await callbackTask(
        run,
        plan,
        parameters,
        token,
        scheduled,
        heartbeatMs,
        timeoutSeconds,
        controller.signal,
        guarded,
      );
    }
    await rt.journal.persist();
    return await synced(
      rt.invokeResource(
        taskInvocation(run, resource, parameters, undefined, timeoutSeconds, controller.signal),
      ),
    );
  } finally {
    watchers.delete(relay);
    controller.abort(CALL_ENDED);
  }
}

/**
 * A `.waitForTaskToken` task: hands its token out with the dispatch (once the events naming the
 * token's hash are written) and waits for SendTaskSuccess/Failure. `signal` ends both; `guarded`
 * races each against the task's deadline, when it has one.
 */
async function callbackTask(
  run: StateRun,
  plan: TaskPlan,
  parameters: unknown,
  token: string,
  scheduled: StoredEvent,
  heartbeatMs: number | undefined,
  timeoutSeconds: number | undefined,
  signal: AbortSignal,
  guarded: <T>(work: Promise<T>) => Promise<T> = unguarded,
): Promise<unknown> {
  const { frame } = run;
  const { rt, scope } = frame;
  const recordedSubmit = scope.peek();
  const replayed = recordedSubmit?.type === 'TaskSubmitted';
  // the token is handed out below, unless it was before the restart (then only its hash is known)
  const waiting = replayed
    ? waitForToken(run, String(scheduled.internal?.tokenHash), undefined, heartbeatMs, signal)
    : waitForToken(run, undefined, token, heartbeatMs, signal);
  // Awaited below; when the dispatch fails first (or outlives the task's deadline, or the engine
  // shuts down), nobody will.
  waiting.outcome.catch(noop);
  if (replayed) scope.emit('TaskSubmitted');
  else {
    try {
      const persisted = rt.journal.persist();
      if (persisted) await persisted;
      const invocation = taskInvocation(run, plan.resource, parameters, token, timeoutSeconds, signal);
      const dispatched = await guarded(rt.invokeResource(invocation));
      emitSubmitted(run, plan, dispatched);
    } catch (error) {
      waiting.stop();
      throw error;
    }
  }
  return await guarded(waiting.outcome);
}

/** A `.sync` child execution's end as the task's result (`.sync:2` parses its Output), or States.TaskFailed. */
async function childResult(ended: Promise<Record<string, unknown>>, kind: ResourceKind): Promise<unknown> {
  const described = await ended;
  if (described.Status !== 'SUCCEEDED') throw new StatesError('States.TaskFailed', JSON.stringify(described));
  return kind.resourceName.endsWith('.sync:2') && typeof described.Output === 'string'
    ? { ...described, Output: JSON.parse(described.Output) }
    : described;
}

/** The output SendTaskSuccess gave a `.sync` task's token, told apart from the call's own result. */
class TokenAnswer {
  constructor(readonly output: unknown) {}
}

/**
 * Waits for SendTaskSuccess/Failure on a `.sync` task's token (`token`, or after a restart the
 * hash its TaskScheduled recorded): resolves with the success's output, rejects with the failure.
 * No heartbeat: HeartbeatSeconds does not apply to `.sync` tasks.
 */
function syncTokenAnswer(
  run: StateRun,
  scheduled: StoredEvent,
  token: string | undefined,
  signal: AbortSignal,
): Promise<TokenAnswer> {
  const hash = token === undefined ? String(scheduled.internal?.tokenHash) : undefined;
  const answer = waitForToken(run, hash, token, undefined, signal).outcome.then(
    (output) => new TokenAnswer(output),
  );
  // the call's end aborts the wait; nobody awaits the answer then
  answer.catch(noop);
  return answer;
}

/**
 * What the resource invoker gets for a call. One literal per shape: cheaper than spreading
 * optional members on every call of the hot path.
 */
function taskInvocation(
  run: StateRun,
  resource: string,
  parameters: unknown,
  taskToken: string | undefined,
  timeoutSeconds: number | undefined,
  signal: AbortSignal,
): TaskInvocation {
  const { rt } = run.frame;
  const stateName = run.name;
  const { executionArn, stateMachineArn, texts: payloadTexts } = rt;
  if (taskToken === undefined) {
    return timeoutSeconds === undefined
      ? { resource, parameters, stateName, executionArn, stateMachineArn, signal, payloadTexts }
      : {
          resource,
          parameters,
          stateName,
          executionArn,
          stateMachineArn,
          timeoutSeconds,
          signal,
          payloadTexts,
        };
  }
  return timeoutSeconds === undefined
    ? { resource, parameters, stateName, executionArn, stateMachineArn, taskToken, signal, payloadTexts }
    : {
        resource,
        parameters,
        stateName,
        executionArn,
        stateMachineArn,
        taskToken,
        timeoutSeconds,
        signal,
        payloadTexts,
      };
}

function unguarded<T>(work: Promise<T>): Promise<T> {
  return work;
}

/** TaskSubmitted: the service's answer to a `.sync` or `.waitForTaskToken` request. */
function emitSubmitted(run: StateRun, plan: TaskPlan, output: unknown): void {
  // an integration may have remembered its answer's text (lambda:invoke does)
  run.frame.scope.emitTaskEvent('TaskSubmitted', plan.ids, run.frame.rt.texts.of(output ?? {}));
}

/**
 * Why a finished call's signal is aborted (stops whatever the call left running); one shared
 * reason, because `abort()` without one builds a DOMException with a stack trace each time.
 */
const CALL_ENDED = new AbortedError('the task call ended');

/** Races `work` against the task deadline (States.Timeout) and the abort signal. */
function withDeadline<T>(
  work: Promise<T>,
  deadline: number | undefined,
  now: () => number,
  signal: AbortSignal,
): Promise<T> {
  // nothing to race: no deadline (the signal only ever stops the deadline's timer)
  if (deadline === undefined) return work;
  work.catch(() => undefined); // settled after the race was lost: nobody waits for it any more
  const guards: Array<Promise<T>> = [work];
  const local = new AbortController();
  const relay = () => local.abort(signal.reason);
  signal.addEventListener('abort', relay, { once: true });
  if (deadline !== undefined) {
    guards.push(
      sleepUntil(deadline, now, local.signal).then(() => {
        throw new StatesError('States.Timeout', undefined);
      }),
    );
  }
  return Promise.race(guards).finally(() => {
    signal.removeEventListener('abort', relay);
    local.abort(CALL_ENDED);
  });
}

/**
 * A task waiting for SendTaskSuccess/Failure on the token with this hash; heartbeats re-arm the
 * heartbeat timer. A class, not closures: one object per callback task.
 */
class TokenWait implements TokenWaiter, AbortWatcher {
  readonly outcome: Promise<unknown>;
  private resolve: (value: unknown) => void = noop;
  private reject: (error: unknown) => void = noop;
  private timer: NodeJS.Timeout | undefined;
  private waiting = true;
  /** Where the outcome's event goes, once an outcome arrived. */
  private outcomeAt: { readonly seq: number; readonly fromId: number } | undefined;
  private readonly watchers: Set<AbortWatcher>;

  constructor(
    private readonly scope: Scope,
    private readonly tokens: TaskTokenRegistry,
    /** The token's hash, when it was handed out before a restart (the token is unknown then). */
    private readonly hash: string | undefined,
    /** The token itself when this engine handed it out. */
    private readonly token: string | undefined,
    private readonly heartbeatMs: number | undefined,
    signal: AbortSignal,
    watchers: AbortWatchers,
  ) {
    this.outcome = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.watchers = watchers.of(signal);
    this.watchers.add(this);
    if (token !== undefined) tokens.registerToken(token, this);
    else tokens.register(String(hash), this);
    this.heartbeat();
  }

  complete(result: TokenOutcome): void {
    if (!this.finish()) return;
    // the task records the outcome as the next event of its scope
    this.outcomeAt = { seq: this.scope.nextSeq, fromId: this.scope.journal.length + 1 };
    if (result.kind === 'success') this.resolve(result.output);
    else this.reject(new MockedThrow(result.error, result.cause));
  }

  heartbeat(): void {
    if (this.heartbeatMs === undefined || !this.waiting) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.finish()) this.reject(new StatesError('States.HeartbeatTimeout', undefined));
    }, this.heartbeatMs);
  }

  outcomeHandedToLog(): boolean {
    const at = this.outcomeAt;
    return at !== undefined && this.scope.journal.handedToLog(this.scope.id, at.seq, at.fromId) === true;
  }

  aborted(reason: unknown): void {
    if (this.finish()) this.reject(reason instanceof StatesError ? reason : new AbortedError(reason));
  }

  /** Stops waiting (the dispatch failed): the token is closed, the outcome rejects with an abort. */
  stop(): void {
    this.aborted(CALL_ENDED);
  }

  private finish(): boolean {
    if (!this.waiting) return false;
    this.waiting = false;
    clearTimeout(this.timer);
    if (this.token !== undefined) this.tokens.closeToken(this.token);
    else this.tokens.close(String(this.hash));
    this.watchers.delete(this);
    return true;
  }
}

function noop(): void {}

/** Waits for SendTaskSuccess/Failure on a token handed out now or, by its hash, before a restart (see {@link TokenWait}). */
function waitForToken(
  run: StateRun,
  hash: string | undefined,
  token: string | undefined,
  heartbeatMs: number | undefined,
  signal: AbortSignal,
): TokenWait {
  const { scope, rt } = run.frame;
  return new TokenWait(scope, rt.tokens, hash, token, heartbeatMs, signal, rt.abortWatchers);
}

/**
 * An activity task: queued for a worker (again, after a restart, when no worker had taken it);
 * once one takes it, waits for SendTaskSuccess/Failure on the token it got, with heartbeats
 * counted from that moment (a worker cannot send one before it has the token).
 */
function activityTask(
  run: StateRun,
  scheduled: StoredEvent,
  heartbeatMs: number | undefined,
  signal: AbortSignal,
): Promise<unknown> {
  const { rt, scope } = run.frame;
  const recordedStart = scope.peek();
  if (recordedStart?.type === 'ActivityStarted') {
    scope.emit('ActivityStarted');
    return waitForToken(run, String(recordedStart.internal?.tokenHash), undefined, heartbeatMs, signal)
      .outcome;
  }
  return new Promise((resolve, reject) => {
    let withdraw = () => {};
    const onAbort = () => {
      withdraw();
      reject(new AbortedError(signal.reason));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    withdraw = rt.activities.enqueue(String(run.state.Resource), {
      input: String(scheduled.details?.input),
      start: (workerName) => {
        signal.removeEventListener('abort', onAbort);
        const token = newTaskToken(rt.random);
        scope.emit(
          'ActivityStarted',
          workerName === undefined ? undefined : { workerName },
          tokenHashMember(token, rt.journal.memoryOnly),
        );
        // the token is only good once a restarted engine can find its hash (with strict durability
        // GetActivityTask also waits for the sync before it answers)
        rt.journal.persist()?.catch(() => undefined);
        waitForToken(run, undefined, token, heartbeatMs, signal).outcome.then(resolve, reject);
        return token;
      },
    });
  });
}

/** Task tokens never reach the history: replaced where the definition placed them. */
function redact(text: string, token: string | undefined): string {
  return token && text.includes(token) ? text.replaceAll(token, '<task token>') : text;
}

/**
 * The Task state: Parameters/Arguments, the service call (mocked, in-process resource, child
 * execution, `.waitForTaskToken` callback or activity worker), TimeoutSeconds/HeartbeatSeconds, and AWS's
 * Lambda*, Activity* and Task* history events. A task whose outcome is in the history is never
 * called again: replay takes the recorded result.
 *
 * Read top down: {@link taskState} runs attempts under the state's Retry and Catch; a
 * {@link TaskAttempt} evaluates what the call needs and records `*Scheduled`; its
 * {@link ScheduledCall} makes the call the resource asks for and waits for its end.
 */

import type { Scope } from '../persistence/execution-history.ts';
import { NOT_TRUNCATED, type StoredEvent } from '../persistence/history.ts';
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
import type { ExecutionRuntime, StateOutcome, StateRun } from './runtime.ts';
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
 * Why a finished call's signal is aborted (stops whatever the call left running); one shared
 * reason, because `abort()` without one builds a DOMException with a stack trace each time.
 */
const CALL_ENDED = new AbortedError('the task call ended');

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
        // a draining engine begins no attempt: it runs afresh after the restart
        const held = run.frame.rt.calls.admit(run.frame.signal);
        if (held) await held;
        const attempt = new TaskAttempt(run, plan);
        const begun = attempt.begin();
        const start = begun instanceof Promise ? await begun : begun;
        let result: unknown;
        if (start.replayed) result = start.result;
        else {
          // awaited here, not in a function of its own: one promise hop fewer per task
          let resultText: string | undefined;
          try {
            result = await start.call;
            resultText = attempt.resultText(result);
          } catch (error) {
            throw attempt.failed(error);
          }
          attempt.succeeded(resultText);
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

/** How an attempt began: replay found its outcome in the history, or its call is under way. */
type AttemptStart =
  | { readonly replayed: true; readonly result: unknown }
  | { readonly replayed: false; readonly call: Promise<unknown> };

/** The durations a task state sets (TimeoutSeconds, HeartbeatSeconds), once evaluated. */
interface TaskDurations {
  readonly timeoutSeconds: number | undefined;
  readonly heartbeatSeconds: number | undefined;
}

const NO_DURATIONS: TaskDurations = Object.freeze({ timeoutSeconds: undefined, heartbeatSeconds: undefined });

/**
 * One attempt of a Task state: evaluates what the call needs, records `*Scheduled` and `*Started`
 * and starts the call, or takes the outcome replay finds; then records how the call ended
 * ({@link succeeded} / {@link failed}).
 */
class TaskAttempt {
  private readonly rt: ExecutionRuntime;
  /** `.sync` and `.waitForTaskToken` tasks have one ($$.Task.Token): SendTaskSuccess/Failure on it ends them, as on AWS. */
  private readonly token: string | undefined;
  /** The call's failure once it is recorded (a call that fails before it returns a promise is recorded at once). */
  private failure: unknown;

  constructor(
    private readonly run: StateRun,
    private readonly plan: TaskPlan,
  ) {
    this.rt = run.frame.rt;
    this.token = plan.kind.pattern === 'request' ? undefined : newTaskToken(this.rt.random);
    if (this.token) run.context.Task = { Token: this.token };
  }

  /** Starts the attempt; synchronous unless the parameters or durations need evaluating (JSONata, TimeoutSeconds...). */
  begin(): AttemptStart | Promise<AttemptStart> {
    const { run, plan } = this;
    if (run.language === 'JSONata' || plan.timeout || plan.heartbeat) return this.beginEvaluated();
    return this.schedule(taskParameters(run), NO_DURATIONS);
  }

  private async beginEvaluated(): Promise<AttemptStart> {
    const { run, plan } = this;
    const parameters = run.language === 'JSONata' ? await taskArguments(run) : taskParameters(run);
    const timeoutSeconds = plan.timeout ? await durationField(run, 'TimeoutSeconds') : undefined;
    const heartbeatSeconds = plan.heartbeat ? await durationField(run, 'HeartbeatSeconds') : undefined;
    return this.schedule(parameters, { timeoutSeconds, heartbeatSeconds });
  }

  /**
   * Records `*Scheduled` and `*Started` and starts the call, or takes the outcome replay finds;
   * throws when AWS would schedule nothing, and for an attempt a stopped engine interrupted.
   */
  private schedule(parameters: unknown, durations: TaskDurations): AttemptStart {
    const { run, plan, rt, token } = this;
    const { scope } = run.frame;
    const { resource, kind, events } = plan;
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

    const { timeoutSeconds, heartbeatSeconds } = durations;
    const scheduled =
      kind.family !== 'Task' && timeoutSeconds === undefined && heartbeatSeconds === undefined
        ? scope.emitScheduled(events.scheduled, resource, rt.texts.of(parameters))
        : this.emitScheduled(parameters, durations);
    // on replay: whether this attempt had started before the engine stopped
    const startedBefore = !worker && scope.peek()?.type === events.started;
    // TimeoutSeconds counts from the start; a worker's task starts later (ActivityStarted when one
    // takes it) but times out counting from when it was queued
    const clockStart = worker
      ? scheduled
      : kind.family === 'Activity'
        ? scope.emit(events.started, { workerName: 'plangate' })
        : scope.emitTaskEvent(events.started, plan.ids);

    const recordedOutcome = this.takeRecordedOutcome();
    if (recordedOutcome) return recordedOutcome;
    if (startedBefore && !rt.mocks?.mocks(run.name) && scope.peek()?.type !== 'TaskSubmitted') {
      // The engine stopped while this call was under way (killed, or closed): it may or may not
      // have run. It is not silently made again: the attempt fails, and the state's Retry and
      // Catch take it from there, as for any failed attempt.
      if (token) rt.tokens.close(String(scheduled.internal?.tokenHash));
      const failed = scope.emit(events.failed, {
        ...(plan.ids ?? NO_IDS),
        error: INTERRUPTED.error,
        cause: INTERRUPTED.cause,
      });
      throw new StatesError(String(failed.details?.error), String(failed.details?.cause));
    }

    // with time scaled to 0 nothing waits, so nothing can time out either
    const timed = rt.timeScale > 0;
    const call = new ScheduledCall({
      run,
      plan,
      token,
      parameters,
      timeoutSeconds,
      scheduled,
      timeoutAt:
        timeoutSeconds === undefined || !timed
          ? undefined
          : clockStart.ts + scaled(rt, timeoutSeconds * 1000),
      heartbeatMs: heartbeatSeconds === undefined || !timed ? undefined : scaled(rt, heartbeatSeconds * 1000),
    });
    let calling: Promise<unknown>;
    try {
      calling = call.start();
    } catch (error) {
      // recorded at once, as a call that fails later is when it does
      return { replayed: false, call: Promise.reject(this.failed(error)) };
    }
    // whoever received the parameters may change them from now on: texts are taken afresh
    rt.texts.forget();
    return { replayed: false, call: calling };
  }

  /**
   * The call's result as JSON text, size-checked (a failure here is the call's: `*Failed` records
   * it); undefined for a call that returned nothing (a mock can).
   */
  resultText(result: unknown): string | undefined {
    if (result === undefined) return undefined;
    const text = this.rt.texts.of(result);
    if (text.length > MAX_PAYLOAD_BYTES / 4 && Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
      throw new StatesError(
        'States.DataLimitExceeded',
        `The state/task '${this.plan.resource}' returned a result with a size exceeding the maximum number of bytes service limit.`,
      );
    }
    return text;
  }

  /** Records `*Succeeded` with the result's text. */
  succeeded(resultText: string | undefined): void {
    const { scope } = this.run.frame;
    const { plan } = this;
    if (resultText === undefined)
      scope.emit(plan.events.succeeded, { ...plan.ids, output: resultText, outputDetails: NOT_TRUNCATED });
    else scope.emitTaskEvent(plan.events.succeeded, plan.ids, resultText);
  }

  /** Records how the call failed (`*Failed` / `*TimedOut`), once; returns what the attempt throws. */
  failed(error: unknown): unknown {
    if (this.failure !== undefined) return this.failure;
    if (error instanceof AbortedError) return error;
    const { frame } = this.run;
    // a call that ended because its branch or execution was stopped was aborted, not failed
    if (frame.signal.aborted) return new AbortedError(frame.signal.reason);
    const failure = asStatesError(error);
    const timedOut = failure.error === 'States.Timeout' || failure.error === 'States.HeartbeatTimeout';
    const details: Record<string, unknown> = { ...this.plan.ids };
    if (!(failure instanceof MockedThrow) || failure.mockedError !== undefined) details.error = failure.error;
    if (failure.cause !== undefined) details.cause = failure.cause;
    frame.scope.emit(timedOut ? this.plan.events.timedOut : this.plan.events.failed, details);
    this.failure = failure;
    return failure;
  }

  /** A task's `*Scheduled` event in full: a service integration's, or one with a timeout or heartbeat. */
  private emitScheduled(parameters: unknown, durations: TaskDurations): StoredEvent {
    const { run, plan, rt, token } = this;
    const { kind } = plan;
    const scheduled: Record<string, unknown> =
      kind.family === 'Task'
        ? {
            resourceType: kind.resourceType,
            resource: kind.resourceName,
            region: rt.region,
            parameters: redact(rt.texts.of(parameters), token),
          }
        : { resource: plan.resource, input: rt.texts.of(parameters), inputDetails: NOT_TRUNCATED };
    if (durations.timeoutSeconds !== undefined) scheduled.timeoutInSeconds = durations.timeoutSeconds;
    // Lambda's events have no heartbeat
    if (durations.heartbeatSeconds !== undefined && kind.family !== 'LambdaFunction')
      scheduled.heartbeatInSeconds = durations.heartbeatSeconds;
    return run.frame.scope.emit(
      plan.events.scheduled,
      scheduled,
      token ? tokenHashMember(token, rt.history.memoryOnly) : undefined,
    );
  }

  /** On replay: the recorded outcome of this call, consuming its events; throws a recorded failure. */
  private takeRecordedOutcome(): AttemptStart | undefined {
    const { scope } = this.run.frame;
    const { kind } = this.plan;
    let next = scope.peek();
    // a `.sync`/callback task's TaskSubmitted or a worker's ActivityStarted precedes the outcome
    if (next?.type === 'TaskSubmitted' || next?.type === 'ActivityStarted') {
      const after = this.rt.history.recorded(nextKey(next));
      if (!after || !isOutcome(after.type, kind)) return undefined;
      scope.emit(next.type);
      next = after;
    }
    if (!next || !isOutcome(next.type, kind)) return undefined;
    const event = scope.emit(next.type);
    if (event.type.endsWith('Succeeded'))
      return { replayed: true, result: JSON.parse(String(event.details?.output ?? 'null')) };
    const error = event.details?.error as string | undefined;
    const cause = event.details?.cause as string | undefined;
    throw error === undefined ? new MockedThrow(undefined, cause) : new StatesError(error, cause);
  }
}

/** What a {@link ScheduledCall} is made of. */
interface ScheduledCallProps {
  readonly run: StateRun;
  readonly plan: TaskPlan;
  readonly token: string | undefined;
  /** The effective parameters (Parameters or Arguments, evaluated). */
  readonly parameters: unknown;
  readonly timeoutSeconds: number | undefined;
  /** The attempt's `*Scheduled` event (its input, and its token's hash after a restart). */
  readonly scheduled: StoredEvent;
  /** When the task times out (epoch ms, scaled); undefined: never. */
  readonly timeoutAt: number | undefined;
  /** How long a heartbeat keeps the task alive (scaled); undefined: no heartbeat needed. */
  readonly heartbeatMs: number | undefined;
}

/**
 * A task call whose `*Scheduled` (and `*Started`) is recorded: made the way its resource asks for
 * (a mock, an in-process call, a child execution, a callback, an activity worker), raced against
 * its deadline and heartbeat when it has them.
 */
class ScheduledCall {
  private readonly run: StateRun;
  private readonly plan: TaskPlan;
  private readonly rt: ExecutionRuntime;
  private readonly token: string | undefined;
  private readonly parameters: unknown;
  private readonly timeoutSeconds: number | undefined;
  private readonly scheduled: StoredEvent;
  private readonly timeoutAt: number | undefined;
  private readonly heartbeatMs: number | undefined;

  constructor(props: ScheduledCallProps) {
    this.run = props.run;
    this.plan = props.plan;
    this.rt = props.run.frame.rt;
    this.token = props.token;
    this.parameters = props.parameters;
    this.timeoutSeconds = props.timeoutSeconds;
    this.scheduled = props.scheduled;
    this.timeoutAt = props.timeoutAt;
    this.heartbeatMs = props.heartbeatMs;
  }

  /** Makes the call; resolves with its result. */
  start(): Promise<unknown> {
    const { run, plan, rt, token, timeoutAt } = this;
    const { frame, name } = run;
    const { kind } = plan;
    if (rt.mocks?.mocks(name)) {
      if (kind.pattern !== 'request') this.emitSubmitted({});
      return Promise.resolve(rt.mocks.invoke(name));
    }
    if (kind.pattern === 'token' && token && timeoutAt === undefined) {
      // nothing but a stop or a failing sibling (the frame's signal) or a failed dispatch can end
      // this call early: no controller of its own
      return this.callback(token, frame.signal, unguarded);
    }
    if (plan.child || kind.pattern !== 'request' || kind.family === 'Activity' || timeoutAt !== undefined) {
      return this.guarded();
    }
    // nothing but a stop or a failing sibling can end this call early: the frame's signal says both
    const persisted = rt.history.persist();
    const invocation = this.invocation(undefined, frame.signal);
    return persisted === undefined
      ? rt.invokeResource(invocation)
      : persisted.then(() => rt.invokeResource(invocation));
  }

  /** A child execution, a callback task, an activity or a task with a deadline: raced against its timeouts. */
  private async guarded(): Promise<unknown> {
    const { run, plan, rt, token } = this;
    const { frame } = run;
    const { scope } = frame;
    const { kind } = plan;
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
        ? this.syncTokenAnswer(
            recordedSubmit?.type === 'TaskSubmitted' ? undefined : token,
            controller.signal,
          )
        : undefined;
    try {
      const deadline = <T>(work: Promise<T>) => withDeadline(work, this.timeoutAt, rt.now, controller.signal);
      // the call's own result, or the output SendTaskSuccess gave the `.sync` task's token first
      const synced = async (work: Promise<unknown>): Promise<unknown> =>
        await deadline(tokenAnswer ? Promise.race([work, tokenAnswer]) : work);
      if (kind.family === 'Activity') return await deadline(this.activity(controller.signal));
      if (plan.child && kind.pattern !== 'token') {
        let childArn: string;
        if (recordedSubmit?.type === 'TaskSubmitted') {
          scope.emit('TaskSubmitted');
          childArn = String(JSON.parse(String(recordedSubmit.details?.output ?? '{}')).ExecutionArn);
        } else {
          await rt.history.persist();
          const started = await rt.startChildExecution(this.parameters, rt.executionArn);
          if (kind.pattern === 'request')
            return { ExecutionArn: started.ExecutionArn, StartDate: started.StartDate };
          this.emitSubmitted(started);
          childArn = started.ExecutionArn;
        }
        return await synced(childResult(rt.awaitChildExecution(childArn, controller.signal), kind));
      }
      if (kind.pattern === 'token' && token) return await this.callback(token, controller.signal, deadline);
      await rt.history.persist();
      return await synced(rt.invokeResource(this.invocation(undefined, controller.signal)));
    } finally {
      watchers.delete(relay);
      controller.abort(CALL_ENDED);
    }
  }

  /**
   * A `.waitForTaskToken` task: hands its token out with the dispatch (once the events naming the
   * token's hash are written) and waits for SendTaskSuccess/Failure. `signal` ends both; `deadline`
   * races each against the task's deadline, when it has one.
   */
  private async callback(
    token: string,
    signal: AbortSignal,
    deadline: <T>(work: Promise<T>) => Promise<T>,
  ): Promise<unknown> {
    const { rt } = this;
    const { scope } = this.run.frame;
    const replayed = scope.peek()?.type === 'TaskSubmitted';
    // the token is handed out below, unless it was before the restart (then only its hash is known)
    const waiting = this.waitForToken(
      replayed ? { hash: String(this.scheduled.internal?.tokenHash) } : { token },
      this.heartbeatMs,
      signal,
    );
    // Awaited below; when the dispatch fails first (or outlives the task's deadline, or the engine
    // shuts down), nobody will.
    waiting.outcome.catch(noop);
    if (replayed) scope.emit('TaskSubmitted');
    else {
      try {
        const persisted = rt.history.persist();
        if (persisted) await persisted;
        const dispatched = await deadline(rt.invokeResource(this.invocation(token, signal)));
        this.emitSubmitted(dispatched);
      } catch (error) {
        waiting.stop();
        throw error;
      }
    }
    return await deadline(waiting.outcome);
  }

  /**
   * An activity task: queued for a worker (again, after a restart, when no worker had taken it);
   * once one takes it, waits for SendTaskSuccess/Failure on the token it got, with heartbeats
   * counted from that moment (a worker cannot send one before it has the token).
   */
  private activity(signal: AbortSignal): Promise<unknown> {
    const { rt, heartbeatMs } = this;
    const { scope } = this.run.frame;
    const recordedStart = scope.peek();
    if (recordedStart?.type === 'ActivityStarted') {
      scope.emit('ActivityStarted');
      return this.waitForToken({ hash: String(recordedStart.internal?.tokenHash) }, heartbeatMs, signal)
        .outcome;
    }
    return new Promise((resolve, reject) => {
      let withdraw = () => {};
      const onAbort = () => {
        withdraw();
        reject(new AbortedError(signal.reason));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      withdraw = rt.activities.enqueue(String(this.run.state.Resource), {
        input: String(this.scheduled.details?.input),
        start: (workerName) => {
          signal.removeEventListener('abort', onAbort);
          const token = newTaskToken(rt.random);
          scope.emit(
            'ActivityStarted',
            workerName === undefined ? undefined : { workerName },
            tokenHashMember(token, rt.history.memoryOnly),
          );
          // the token is only good once a restarted engine can find its hash (with strict durability
          // GetActivityTask also waits for the sync before it answers)
          rt.history.persist()?.catch(() => undefined);
          this.waitForToken({ token }, heartbeatMs, signal).outcome.then(resolve, reject);
          return token;
        },
      });
    });
  }

  /**
   * Waits for SendTaskSuccess/Failure on a `.sync` task's token (`token`, or after a restart the
   * hash its TaskScheduled recorded): resolves with the success's output, rejects with the failure.
   * No heartbeat: HeartbeatSeconds does not apply to `.sync` tasks.
   */
  private syncTokenAnswer(token: string | undefined, signal: AbortSignal): Promise<unknown> {
    const handedOut = token === undefined ? { hash: String(this.scheduled.internal?.tokenHash) } : { token };
    const answer = this.waitForToken(handedOut, undefined, signal).outcome;
    // the call's end aborts the wait; nobody awaits the answer then
    answer.catch(noop);
    return answer;
  }

  /** Waits for SendTaskSuccess/Failure on a token handed out now or, by its hash, before a restart. */
  private waitForToken(
    handedOut: HandedOutToken,
    heartbeatMs: number | undefined,
    signal: AbortSignal,
  ): TokenWait {
    const { rt } = this;
    return new TokenWait({
      scope: this.run.frame.scope,
      tokens: rt.tokens,
      handedOut,
      heartbeatMs,
      signal,
      watchers: rt.abortWatchers,
    });
  }

  /** TaskSubmitted: the service's answer to a `.sync` or `.waitForTaskToken` request. */
  private emitSubmitted(output: unknown): void {
    // an integration may have remembered its answer's text (lambda:invoke does)
    this.run.frame.scope.emitTaskEvent('TaskSubmitted', this.plan.ids, this.rt.texts.of(output ?? {}));
  }

  /**
   * What the resource invoker gets for a call. One literal per shape: cheaper than spreading
   * optional members on every call of the hot path.
   */
  private invocation(taskToken: string | undefined, signal: AbortSignal): TaskInvocation {
    const { rt, parameters, timeoutSeconds } = this;
    const { resource } = this.plan;
    const stateName = this.run.name;
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
}

function unguarded<T>(work: Promise<T>): Promise<T> {
  return work;
}

function noop(): void {}

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

/** The key of the event after `event` in its scope. */
function nextKey(event: StoredEvent): string {
  const dot = event.key.lastIndexOf('.');
  return `${event.key.slice(0, dot)}.${Number(event.key.slice(dot + 1)) + 1}`;
}

function isOutcome(type: string, kind: ResourceKind): boolean {
  return (
    type === `${kind.family}Succeeded` || type === `${kind.family}Failed` || type === `${kind.family}TimedOut`
  );
}

/** A `.sync` child execution's end as the task's result (`.sync:2` parses its Output), or States.TaskFailed. */
async function childResult(ended: Promise<Record<string, unknown>>, kind: ResourceKind): Promise<unknown> {
  const described = await ended;
  if (described.Status !== 'SUCCEEDED') throw new StatesError('States.TaskFailed', JSON.stringify(described));
  return kind.resourceName.endsWith('.sync:2') && typeof described.Output === 'string'
    ? { ...described, Output: JSON.parse(described.Output) }
    : described;
}

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
  const local = new AbortController();
  const relay = () => local.abort(signal.reason);
  signal.addEventListener('abort', relay, { once: true });
  const timedOut = sleepUntil(deadline, now, local.signal).then(() => {
    throw new StatesError('States.Timeout', undefined);
  });
  return Promise.race([work, timedOut]).finally(() => {
    signal.removeEventListener('abort', relay);
    local.abort(CALL_ENDED);
  });
}

/** Task tokens never reach the history: replaced where the definition placed them. */
function redact(text: string, token: string | undefined): string {
  return token && text.includes(token) ? text.replaceAll(token, '<task token>') : text;
}

/** A token handed out now, or the hash of one handed out before a restart (the token is unknown then). */
type HandedOutToken = { readonly token: string } | { readonly hash: string };

/** What a {@link TokenWait} is made of. */
interface TokenWaitProps {
  /** The task's scope: its outcome is the scope's next event. */
  readonly scope: Scope;
  readonly tokens: TaskTokenRegistry;
  readonly handedOut: HandedOutToken;
  /** How long a heartbeat keeps the task alive; undefined: no heartbeat needed. */
  readonly heartbeatMs: number | undefined;
  /** Ends the wait (the task's end, a stop, a failing sibling). */
  readonly signal: AbortSignal;
  readonly watchers: AbortWatchers;
}

/**
 * A task waiting for SendTaskSuccess/Failure on its token; heartbeats re-arm the heartbeat timer.
 * A class, not closures: one object per callback task.
 */
class TokenWait implements TokenWaiter, AbortWatcher {
  readonly outcome: Promise<unknown>;
  private resolve: (value: unknown) => void = noop;
  private reject: (error: unknown) => void = noop;
  private timer: NodeJS.Timeout | undefined;
  private waiting = true;
  /** Where the outcome's event goes, once an outcome arrived. */
  private outcomeAt: { readonly seq: number; readonly fromId: number } | undefined;
  private readonly scope: Scope;
  private readonly tokens: TaskTokenRegistry;
  /** The token itself when this engine handed it out. */
  private readonly token: string | undefined;
  /** The token's hash, when it was handed out before a restart. */
  private readonly hash: string | undefined;
  private readonly heartbeatMs: number | undefined;
  private readonly watchers: Set<AbortWatcher>;

  constructor(props: TokenWaitProps) {
    this.scope = props.scope;
    this.tokens = props.tokens;
    this.token = 'token' in props.handedOut ? props.handedOut.token : undefined;
    this.hash = 'hash' in props.handedOut ? props.handedOut.hash : undefined;
    this.heartbeatMs = props.heartbeatMs;
    this.outcome = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.watchers = props.watchers.of(props.signal);
    this.watchers.add(this);
    if (this.token !== undefined) this.tokens.registerToken(this.token, this);
    else this.tokens.register(String(this.hash), this);
    this.heartbeat();
  }

  complete(result: TokenOutcome): void {
    if (!this.finish()) return;
    // the task records the outcome as the next event of its scope
    this.outcomeAt = { seq: this.scope.nextSeq, fromId: this.scope.history.length + 1 };
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
    return at !== undefined && this.scope.history.handedToLog(this.scope.id, at.seq, at.fromId) === true;
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

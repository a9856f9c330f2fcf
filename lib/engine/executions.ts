/**
 * The executions' lifecycle: an execution begins with ExecutionStarted, runs the interpreter until
 * it ends (or the engine closes), is rebuilt from its history when the engine starts again and
 * resumes if it was running, can be redriven, and lets go of its history once it has finished.
 * Every execution's history is its only state.
 */
import { type ArnScope, executionArn as buildExecutionArn, parseExecutionArn } from './core/arn.ts';
import type { StatesBlock } from './core/definition.ts';
import { MAX_HISTORY_EVENTS, runBlock } from './core/interpreter.ts';
import { PayloadTexts } from './core/json-text.ts';
import { mapState } from './core/map-state.ts';
import { type MockConfig, MockedTestCase } from './core/mock-config.ts';
import { parallelState } from './core/parallel-state.ts';
import { RandomPool } from './core/random.ts';
import type { CompoundStates, EngineState, ExecutionRuntime, Frame } from './core/runtime.ts';
import { TaskCalls } from './core/task-calls.ts';
import { TaskPlans } from './core/task-plan.ts';
import { taskState } from './core/task-state.ts';
import type { TaskTokenRegistry } from './core/task-tokens.ts';
import { AbortedError, AbortWatchers } from './core/timers.ts';
import { ExpressionCache } from './dataflow/expression-cache.ts';
import type { FlushScheduler } from './durability.ts';
import {
  applyTerminal,
  type ExecutionFields,
  type ExecutionRecord,
  type FinishedExecutionSummary,
  isTerminalEvent,
  newExecutionRecord,
  type StopReason,
  summaryOf,
} from './execution-record.ts';
import { ExecutionHistory } from './persistence/execution-history.ts';
import type { StoredEvent } from './persistence/history.ts';
import { type EngineStore, type ExecutionLog, MemoryEngineStore } from './persistence/store.ts';
import { type QueryLanguage, type ResourceInvoker, SfnServiceError, StatesError } from './types.ts';

/** Child executions (`states:startExecution`), which go through the API like any other start. */
export interface ChildExecutions {
  /** Starts a child execution; returns its ARN and start date. */
  start(parameters: unknown): Promise<{ ExecutionArn: string; StartDate: Date }>;
  /** Waits for a child execution to end; returns its DescribeExecution output. */
  awaitEnd(executionArn: string, signal: AbortSignal): Promise<Record<string, unknown>>;
}

/** Readonly props of {@link Executions}. */
export interface ExecutionsProps {
  readonly scope: ArnScope;
  readonly store: EngineStore;
  readonly flushes: FlushScheduler;
  /** The engine has no store directory: histories are never released (nothing could reread them). */
  readonly memoryOnly: boolean;
  readonly invokeResource: ResourceInvoker;
  readonly mockConfig: MockConfig | undefined;
  readonly tokens: TaskTokenRegistry;
  readonly activities: ExecutionRuntime['activities'];
  readonly children: ChildExecutions;
  readonly now: () => number;
  readonly timeScale: number;
}

/** What StartExecution resolved and checked before an execution begins. */
export interface ExecutionStart {
  readonly arn: string;
  readonly name: string;
  readonly machineName: string;
  readonly machineArn: string;
  readonly versionArn?: string;
  readonly aliasArn?: string;
  readonly definitionText: string;
  readonly roleArn: string;
  readonly testCase?: string;
  readonly mocks: MockedTestCase | undefined;
  /** The input as given, and parsed. */
  readonly input: string;
  readonly parsedInput: unknown;
  readonly express: boolean;
}

/**
 * Parsed definitions by their text, so that starting an execution does not parse its machine
 * again. The interpreter only reads definitions (data flow builds new values), so executions share them.
 */
class ParsedDefinitions {
  private static readonly MAX_ENTRIES = 64;
  private readonly byText = new Map<string, StatesBlock>();

  parse(text: string): StatesBlock {
    let block = this.byText.get(text);
    if (!block) {
      if (this.byText.size >= ParsedDefinitions.MAX_ENTRIES) this.byText.clear();
      block = JSON.parse(text) as StatesBlock;
      this.byText.set(text, block);
    }
    return block;
  }
}

/** The state types whose handlers live in their own modules (they import the interpreter). */
const COMPOUND_STATES: CompoundStates = Object.freeze({
  task: taskState,
  map: mapState,
  parallel: parallelState,
});

/** Every execution of one engine, by ARN, and what runs them. */
export class Executions {
  private readonly records = new Map<string, ExecutionRecord>();
  /** What the interpreter keeps across this engine's executions (and no other engine's). */
  private readonly engineState: EngineState;
  /** The resource invoker, with the calls under way counted (for the drain before a stop). */
  private readonly invokeResource: ResourceInvoker;
  private readonly definitions = new ParsedDefinitions();
  /** The store's reference of each definition text started lately. */
  private readonly definitionRefs = new Map<string, string>();
  private isClosed = false;

  constructor(private readonly props: ExecutionsProps) {
    const abortWatchers = new AbortWatchers();
    const calls = new TaskCalls(abortWatchers);
    this.engineState = {
      compoundStates: COMPOUND_STATES,
      expressions: new ExpressionCache(),
      taskPlans: new TaskPlans(),
      texts: new PayloadTexts(),
      random: new RandomPool(),
      abortWatchers,
      calls,
    };
    this.invokeResource = calls.tracked(props.invokeResource);
  }

  /**
   * Before a clean stop: no task attempt begins any more, and the calls under way end and record
   * their outcomes (at most `timeoutMs`); answers how many are still under way.
   */
  drain(timeoutMs: number): Promise<number> {
    return this.engineState.calls.drain(timeoutMs);
  }

  /** Whether the engine has closed: nothing begins or ends any more. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** The execution stored under exactly this ARN. */
  find(arn: string): ExecutionRecord | undefined {
    return this.records.get(arn);
  }

  /** The execution an ARN names; AWS's ExecutionDoesNotExist when there is none. */
  get(arn: unknown): ExecutionRecord {
    const { scope } = this.props;
    const ref = parseExecutionArn(scope, arn);
    const e =
      this.records.get(buildExecutionArn(scope, ref.machineName, ref.name)) ?? this.records.get(String(arn));
    if (!e) throw new SfnServiceError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return e;
  }

  all(): IterableIterator<ExecutionRecord> {
    return this.records.values();
  }

  /** Writes ExecutionStarted and starts the runner. */
  begin(start: ExecutionStart): ExecutionRecord {
    const { express } = start;
    const log = express
      ? new MemoryEngineStore().openLog(start.machineName, start.name)
      : this.props.store.openLog(start.machineName, start.name);
    const history = this.historyFor(start.arn, log, []);
    const started = history.root('').emit(
      'ExecutionStarted',
      {
        input: start.input,
        inputDetails: { truncated: false },
        roleArn: start.roleArn,
        ...(start.versionArn ? { stateMachineVersionArn: start.versionArn } : {}),
        ...(start.aliasArn ? { stateMachineAliasArn: start.aliasArn } : {}),
      },
      {
        // EXPRESS histories live in memory only; durable ones refer to the definition the store keeps
        ...(express
          ? { definition: start.definitionText }
          : { definitionRef: this.definitionRef(start.definitionText) }),
        stateMachineArn: start.machineArn,
        express,
        ...(start.testCase === undefined ? {} : { testCase: start.testCase }),
      },
    );
    const record = newExecutionRecord({
      arn: start.arn,
      name: start.name,
      machineName: start.machineName,
      machineArn: start.machineArn,
      versionArn: start.versionArn,
      aliasArn: start.aliasArn,
      definition: this.definitions.parse(start.definitionText),
      input: start.input,
      startDate: started.ts,
      roleArn: start.roleArn,
      ...(start.testCase === undefined ? {} : { testCase: start.testCase }),
      express,
      history,
    });
    this.records.set(start.arn, record);
    this.launch(record, start.mocks, start.parsedInput);
    return record;
  }

  /** Runs a failed, timed-out or aborted execution again from where it stopped (RedriveExecution); returns when. */
  redrive(e: ExecutionRecord): number {
    const redriveDate = this.props.now();
    e.redriveCount++;
    e.redriveDate = redriveDate;
    e.status = 'RUNNING';
    e.stopDate = undefined;
    e.error = undefined;
    e.cause = undefined;
    e.output = undefined;
    const history = this.holdHistory(e);
    history.record('!redrive', e.redriveCount, history.length, 'ExecutionRedriven', {
      redriveCount: e.redriveCount,
    });
    history.forgetFailedStates();
    this.launch(e);
    return redriveDate;
  }

  /** Aborts a running execution (StopExecution) and resolves once it has recorded ExecutionAborted. */
  async stop(e: ExecutionRecord, reason: { error?: string; cause?: string }): Promise<void> {
    e.controller.abort({ kind: 'stop', ...reason } satisfies StopReason);
    await e.done;
  }

  /** Resolves once the execution has ended, or the engine closed. */
  async awaitEnd(e: ExecutionRecord): Promise<void> {
    while (e.status === 'RUNNING' && !this.isClosed) await e.done;
  }

  /** The record with its input, output and definition, read from the history if it was summarized. */
  hydrated(e: ExecutionRecord): ExecutionRecord {
    if (!e.summarized) return e;
    const history = this.historyOf(e);
    const full = this.recordFromHistory(
      e.machineName,
      e.name,
      history.events,
      this.props.store.openLog(e.machineName, e.name),
    );
    if (!full) throw new Error(`the history of ${e.arn} cannot be read`);
    e.definition = full.definition;
    e.input = full.input;
    if (full.output !== undefined) e.output = full.output;
    e.summarized = false;
    return e;
  }

  /**
   * An execution's history: held while it runs; once a durable execution has finished, its
   * events are only weakly held (a long-lived engine does not keep every history in memory,
   * and the collector does not have to trace them) and reread from the store when needed.
   */
  historyOf(e: ExecutionRecord): ExecutionHistory {
    const held = e.history ?? e.released?.deref();
    if (held) return held;
    const log = this.props.store.openLog(e.machineName, e.name);
    const history = this.historyFor(e.arn, log, log.readAll());
    e.released = new WeakRef(history);
    return history;
  }

  /** The definition an execution ran, from its ExecutionStarted event (kept inline, or by reference in the store). */
  definitionTextOf(started: StoredEvent): string | undefined {
    const internal = started.internal ?? {};
    return typeof internal.definition === 'string'
      ? internal.definition
      : this.props.store.getDefinition(String(internal.definitionRef));
  }

  /**
   * Rebuilds every stored execution: a finished one from its store summary when there is one
   * (its history is read only when asked for), any other from its history; running ones resume.
   */
  resumeStored(): void {
    const { store, scope, tokens } = this.props;
    const summaries = store.readSummaries();
    for (const { machineName, executionName } of store.listLogs()) {
      const summary = summaries.get(`${machineName}\t${executionName}`) as
        | FinishedExecutionSummary
        | undefined;
      if (summary) {
        this.records.set(
          buildExecutionArn(scope, machineName, executionName),
          this.summarizedRecord(machineName, executionName, summary),
        );
        continue;
      }
      const log = store.openLog(machineName, executionName);
      const record = this.recordFromHistory(machineName, executionName, log.readAll(), log);
      if (!record) continue;
      this.records.set(record.arn, record);
      const history = record.history as ExecutionHistory;
      if (record.status === 'RUNNING') {
        for (const hash of waitingTokenHashes(history)) tokens.expect(hash);
        this.launch(record);
      } else {
        // finished: its history is reread from the store when asked for, and a summary spares
        // the next restart from reading it
        record.history = undefined;
        store.noteFinished(machineName, executionName, summaryOf(record));
      }
    }
  }

  /** Stops running executions without recording anything (they resume on restart) and hands their pending events over. */
  close(): void {
    this.isClosed = true;
    for (const e of this.records.values()) {
      if (e.status === 'RUNNING') e.controller.abort({ kind: 'shutdown' } satisfies StopReason);
      e.history?.close();
    }
  }

  /** Runs (or resumes) the interpreter for an execution until it ends or the engine closes. */
  private launch(e: ExecutionRecord, mocks?: MockedTestCase, parsedInput?: unknown): void {
    const { props } = this;
    const history = this.holdHistory(e);
    e.controller = new AbortController();
    e.done = new Promise<void>((resolve) => {
      e.settle = resolve;
    });
    const mocked =
      mocks ??
      (e.testCase === undefined
        ? undefined
        : MockedTestCase.select(props.mockConfig, e.machineName, e.testCase));
    const startedIso = new Date(e.startDate).toISOString();
    const state = this.engineState;
    // every member spelled out (no spread): the interpreter reads this object on every state
    const rt: ExecutionRuntime = {
      compoundStates: state.compoundStates,
      expressions: state.expressions,
      taskPlans: state.taskPlans,
      texts: state.texts,
      random: state.random,
      abortWatchers: state.abortWatchers,
      calls: state.calls,
      executionArn: e.arn,
      stateMachineArn: e.versionArn ?? e.machineArn,
      region: props.scope.region,
      accountId: props.scope.accountId,
      history,
      contextBase: {
        Execution: {
          Id: e.arn,
          Input: parsedInput ?? JSON.parse(e.input),
          StartTime: startedIso,
          Name: e.name,
          RoleArn: e.roleArn,
          RedriveCount: e.redriveCount,
          ...(e.redriveDate === undefined ? {} : { RedriveTime: new Date(e.redriveDate).toISOString() }),
        },
        StateMachine: { Id: e.versionArn ?? e.machineArn, Name: e.machineName },
      },
      invokeResource: this.invokeResource,
      mocks: mocked,
      tokens: props.tokens,
      activities: props.activities,
      timeScale: props.timeScale,
      now: props.now,
      signal: e.controller.signal,
      startChildExecution: (parameters) => props.children.start(parameters),
      awaitChildExecution: (arn, signal) => props.children.awaitEnd(arn, signal),
    };
    const root = history.root('');
    root.skipPast(history.eventAt(1)); // ExecutionStarted is always the first event
    const frame: Frame = {
      rt,
      scope: root,
      variables: {},
      language: (e.definition.QueryLanguage as QueryLanguage | undefined) ?? 'JSONPath',
      signal: e.controller.signal,
      inBranch: false,
    };
    let timer: NodeJS.Timeout | undefined;
    const timeoutSeconds = e.definition.TimeoutSeconds;
    if (typeof timeoutSeconds === 'number' && props.timeScale > 0) {
      const deadline = e.startDate + timeoutSeconds * 1000 * props.timeScale;
      timer = setTimeout(
        () => e.controller.abort({ kind: 'timeout' } satisfies StopReason),
        Math.max(0, deadline - props.now()),
      );
    }
    const input = rt.contextBase.Execution.Input;
    runBlock(frame, e.definition, input)
      .then(
        (output) =>
          this.finish(e, root, 'ExecutionSucceeded', {
            output: JSON.stringify(output),
            outputDetails: { truncated: false },
          }),
        (error) => this.fail(e, root, error),
      )
      .finally(() => {
        clearTimeout(timer);
        e.settle();
      });
  }

  private fail(e: ExecutionRecord, root: ReturnType<ExecutionHistory['root']>, error: unknown): void {
    const reason = e.controller.signal.reason as StopReason | undefined;
    if (reason?.kind === 'shutdown' || this.isClosed) return;
    if (reason?.kind === 'stop') {
      this.finish(e, root, 'ExecutionAborted', {
        ...(reason.error === undefined ? {} : { error: reason.error }),
        ...(reason.cause === undefined ? {} : { cause: reason.cause }),
      });
      return;
    }
    if (reason?.kind === 'timeout') {
      this.finish(e, root, 'ExecutionTimedOut', {
        error: 'States.Timeout',
        cause: 'The execution timed out',
      });
      return;
    }
    if (error instanceof AbortedError || !(error instanceof StatesError)) {
      const cause = error instanceof Error ? error.message : String(error);
      this.finish(e, root, 'ExecutionFailed', { error: 'States.Runtime', cause });
      return;
    }
    const details: Record<string, unknown> = {};
    const out = errorFields(error);
    if (out.error !== undefined) details.error = out.error;
    if (out.cause !== undefined) details.cause = out.cause;
    this.finish(e, root, 'ExecutionFailed', details);
  }

  private finish(
    e: ExecutionRecord,
    root: ReturnType<ExecutionHistory['root']>,
    type: string,
    details: Record<string, unknown>,
  ): void {
    if (this.isClosed) return;
    const history = this.holdHistory(e);
    if (history.length >= MAX_HISTORY_EVENTS && type === 'ExecutionSucceeded') {
      type = 'ExecutionFailed';
      details = {
        error: 'States.Runtime',
        cause: `The execution reached the maximum number of history events (${MAX_HISTORY_EVENTS}).`,
      };
    }
    const event = root.emit(type, details);
    applyTerminal(e, event);
    history.close();
    if (!e.express) this.props.store.noteFinished(e.machineName, e.name, summaryOf(e));
    this.releaseHistory(e);
  }

  /** An execution as its history tells it; undefined when it cannot run (no start, definition gone). */
  private recordFromHistory(
    machineName: string,
    executionName: string,
    events: StoredEvent[],
    log: ExecutionLog,
  ): ExecutionRecord | undefined {
    const first = events[0];
    if (first?.type !== 'ExecutionStarted') return undefined;
    const internal = first.internal ?? {};
    const details = first.details ?? {};
    const definitionText = this.definitionTextOf(first);
    if (definitionText === undefined) return undefined; // its definition is gone: nothing to run
    const arn = buildExecutionArn(this.props.scope, machineName, executionName);
    const history = this.historyFor(arn, log, events);
    const testCase = typeof internal.testCase === 'string' ? internal.testCase : undefined;
    const record = newExecutionRecord({
      arn,
      name: executionName,
      machineName,
      machineArn: String(internal.stateMachineArn),
      ...(typeof details.stateMachineVersionArn === 'string'
        ? { versionArn: details.stateMachineVersionArn }
        : {}),
      ...(typeof details.stateMachineAliasArn === 'string' ? { aliasArn: details.stateMachineAliasArn } : {}),
      definition: this.definitions.parse(definitionText),
      input: String(details.input),
      startDate: first.ts,
      roleArn: String(details.roleArn),
      ...(testCase === undefined ? {} : { testCase }),
      express: false,
      history,
    });
    let last: StoredEvent | undefined;
    for (const ev of events) {
      if (ev.type === 'ExecutionRedriven') {
        record.redriveCount++;
        record.redriveDate = ev.ts;
        record.status = 'RUNNING';
        record.error = undefined;
        record.cause = undefined;
        record.stopDate = undefined;
        last = undefined;
      } else if (isTerminalEvent(ev)) last = ev;
    }
    if (last) applyTerminal(record, last);
    return record;
  }

  /** A finished execution known from its summary; {@link hydrated} reads the rest when needed. */
  private summarizedRecord(
    machineName: string,
    executionName: string,
    summary: FinishedExecutionSummary,
  ): ExecutionRecord {
    const fields: ExecutionFields = {
      arn: buildExecutionArn(this.props.scope, machineName, executionName),
      name: executionName,
      machineName,
      machineArn: summary.machineArn,
      ...(summary.versionArn === undefined ? {} : { versionArn: summary.versionArn }),
      ...(summary.aliasArn === undefined ? {} : { aliasArn: summary.aliasArn }),
      definition: { StartAt: '', States: {} },
      input: '',
      summarized: true,
      startDate: summary.startDate,
      roleArn: summary.roleArn,
      ...(summary.testCase === undefined ? {} : { testCase: summary.testCase }),
      express: false,
      history: undefined,
    };
    const record = newExecutionRecord(fields);
    record.status = summary.status;
    record.redriveCount = summary.redriveCount;
    if (summary.redriveDate !== undefined) record.redriveDate = summary.redriveDate;
    if (summary.stopDate !== undefined) record.stopDate = summary.stopDate;
    if (summary.error !== undefined) record.error = summary.error;
    if (summary.cause !== undefined) record.cause = summary.cause;
    return record;
  }

  /** The history, held again (the execution runs again). */
  private holdHistory(e: ExecutionRecord): ExecutionHistory {
    const history = this.historyOf(e);
    e.history = history;
    e.released = undefined;
    return history;
  }

  /** Lets go of a finished execution's history when the store keeps it (not in memory, not EXPRESS). */
  private releaseHistory(e: ExecutionRecord): void {
    if (this.props.memoryOnly || e.express || !e.history) return;
    e.released = new WeakRef(e.history);
    e.history = undefined;
  }

  private historyFor(executionArn: string, log: ExecutionLog, stored: StoredEvent[]): ExecutionHistory {
    const { flushes } = this.props;
    return new ExecutionHistory({
      executionArn,
      log,
      stored,
      now: this.props.now,
      onDirty: (history) => flushes.historyDirty(history),
      persist: () => flushes.persist(),
      memoryOnly: this.props.memoryOnly,
    });
  }

  /** The store's reference to a definition, kept once per text. */
  private definitionRef(text: string): string {
    let ref = this.definitionRefs.get(text);
    if (ref === undefined) {
      if (this.definitionRefs.size >= 64) this.definitionRefs.clear();
      ref = this.props.store.putDefinition(text);
      this.definitionRefs.set(text, ref);
    }
    return ref;
  }
}

/** The Error and Cause an execution failed by a StatesError records (a Fail state's and a mock's as they were given). */
function errorFields(error: StatesError): { error?: string; cause?: string } {
  const e = error as StatesError & {
    mockedError?: string;
    mockedCause?: string;
    failError?: string;
    failCause?: string;
  };
  if ('mockedError' in e)
    return {
      ...(e.mockedError ? { error: e.mockedError } : {}),
      ...(e.mockedCause ? { cause: e.mockedCause } : {}),
    };
  if ('failError' in e)
    return { ...(e.failError ? { error: e.failError } : {}), ...(e.failCause ? { cause: e.failCause } : {}) };
  return { error: error.error, ...(error.cause === undefined ? {} : { cause: error.cause }) };
}

/** Token hashes of `.waitForTaskToken` tasks and started activity tasks in a history that have no outcome yet. */
function waitingTokenHashes(history: ExecutionHistory): string[] {
  const hashes: string[] = [];
  for (const e of history.events) {
    const hash = e.internal?.tokenHash;
    if (typeof hash !== 'string') continue;
    const dot = e.key.lastIndexOf('.');
    const seq = Number(e.key.slice(dot + 1));
    // a callback task: TaskScheduled (with the hash), Started, Submitted, then the outcome;
    // an activity: ActivityStarted (with the hash), then the outcome
    const outcome = seq + (e.type === 'ActivityStarted' ? 1 : 3);
    if (!history.recorded(`${e.key.slice(0, dot)}.${outcome}`)) hashes.push(hash);
  }
  return hashes;
}

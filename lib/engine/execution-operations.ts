/**
 * What the execution operations do: start (asynchronous and synchronous), describe, list, read
 * the history of, stop and redrive executions, and answer their tasks' tokens
 * (SendTaskSuccess/Failure/Heartbeat). The executions themselves run in `Executions`.
 */
import type * as sfn from '@aws-sdk/client-sfn';
import {
  type ArnScope,
  assertValidName,
  executionArn as buildExecutionArn,
  expressExecutionArn,
  parseStateMachineArn,
} from './core/arn.ts';
import { MAX_PAYLOAD_BYTES } from './core/interpreter.ts';
import { type MockConfig, MockedTestCase } from './core/mock-config.ts';
import type { MachineRegistry } from './core/registry.ts';
import { assertTokenShape, type TaskTokenRegistry } from './core/task-tokens.ts';
import { AbortedError } from './core/timers.ts';
import type { FlushScheduler } from './durability.ts';
import { type ExecutionRecord, redriveState } from './execution-record.ts';
import type { Executions } from './executions.ts';
import { decodePageToken, encodePageToken, pageSize, paginate } from './pagination.ts';
import { toHistoryEvent } from './persistence/history.ts';
import { DEFAULT_LOGGING, DEFAULT_TRACING, type StateMachineOperations } from './state-machine-operations.ts';
import { SfnServiceError, StatesError } from './types.ts';

/** Readonly props of {@link ExecutionOperations}. */
export interface ExecutionOperationsProps {
  readonly scope: ArnScope;
  readonly registry: MachineRegistry;
  readonly stateMachines: StateMachineOperations;
  readonly executions: Executions;
  readonly tokens: TaskTokenRegistry;
  readonly flushes: FlushScheduler;
  readonly mockConfig: MockConfig | undefined;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

export class ExecutionOperations {
  private readonly scope: ArnScope;
  private readonly registry: MachineRegistry;
  private readonly stateMachines: StateMachineOperations;
  private readonly executions: Executions;
  private readonly tokens: TaskTokenRegistry;
  private readonly flushes: FlushScheduler;
  private readonly mockConfig: MockConfig | undefined;
  private readonly now: () => number;

  constructor(props: ExecutionOperationsProps) {
    this.scope = props.scope;
    this.registry = props.registry;
    this.stateMachines = props.stateMachines;
    this.executions = props.executions;
    this.tokens = props.tokens;
    this.flushes = props.flushes;
    this.mockConfig = props.mockConfig;
    this.now = props.now;
  }

  async startExecution(input: sfn.StartExecutionInput): Promise<sfn.StartExecutionOutput> {
    this.flushes.refuseWhileFaulted();
    const record = this.begin(input, false);
    await this.flushes.persist();
    return { executionArn: record.arn, startDate: new Date(record.startDate) };
  }

  async startSyncExecution(input: sfn.StartSyncExecutionInput): Promise<sfn.StartSyncExecutionOutput> {
    this.flushes.refuseWhileFaulted();
    const record = this.begin(input, true);
    await record.done;
    // METADATA_ONLY: everything but the execution's data (its input and output)
    const withData = input.includedData !== 'METADATA_ONLY';
    const out: sfn.StartSyncExecutionOutput = {
      executionArn: record.arn,
      stateMachineArn: record.machineArn,
      name: record.name,
      startDate: new Date(record.startDate),
      stopDate: new Date(record.stopDate ?? this.now()),
      status:
        record.status === 'SUCCEEDED' ? 'SUCCEEDED' : record.status === 'TIMED_OUT' ? 'TIMED_OUT' : 'FAILED',
      ...(withData ? { input: record.input, inputDetails: { included: true } } : {}),
      billingDetails: { billedMemoryUsedInMB: 64, billedDurationInMilliseconds: 100 },
    };
    if (record.output !== undefined && withData) {
      out.output = record.output;
      out.outputDetails = { included: true };
    }
    if (record.error !== undefined) out.error = record.error;
    if (record.cause !== undefined) out.cause = record.cause;
    return out;
  }

  async describeExecution(input: sfn.DescribeExecutionInput): Promise<sfn.DescribeExecutionOutput> {
    await this.flushes.persist();
    const e = this.executions.hydrated(this.executions.get(input.executionArn));
    // METADATA_ONLY: everything but the execution's data (its input and output)
    const withData = input.includedData !== 'METADATA_ONLY';
    const redrive = redriveState(e);
    const out: sfn.DescribeExecutionOutput = {
      executionArn: e.arn,
      stateMachineArn: e.machineArn,
      name: e.name,
      status: e.status,
      startDate: new Date(e.startDate),
      ...(withData ? { input: e.input, inputDetails: { included: true } } : {}),
      redriveCount: e.redriveCount,
      redriveStatus: redrive.status,
      ...(redrive.reason === undefined ? {} : { redriveStatusReason: redrive.reason }),
    };
    if (e.versionArn) out.stateMachineVersionArn = e.versionArn;
    if (e.aliasArn) out.stateMachineAliasArn = e.aliasArn;
    if (e.stopDate !== undefined) out.stopDate = new Date(e.stopDate);
    if (e.output !== undefined && withData) {
      out.output = e.output;
      out.outputDetails = { included: true };
    }
    if (e.error !== undefined) out.error = e.error;
    if (e.cause !== undefined) out.cause = e.cause;
    if (e.redriveDate !== undefined) out.redriveDate = new Date(e.redriveDate);
    return out;
  }

  /** The definition, role and configuration the execution ran with (a version's, when it ran one). */
  async describeStateMachineForExecution(
    input: sfn.DescribeStateMachineForExecutionInput,
  ): Promise<sfn.DescribeStateMachineForExecutionOutput> {
    const e = this.executions.get(input.executionArn);
    const started = this.executions.historyOf(e).events[0];
    const definition = started && this.executions.definitionTextOf(started);
    if (definition === undefined) throw new Error(`the definition ${e.arn} ran cannot be read`);
    const machine = this.registry.find(e.machineName);
    const version =
      e.versionArn === undefined
        ? undefined
        : machine?.versions.find((v) => `${machine.arn}:${v.version}` === e.versionArn);
    const revisionId =
      version?.revisionId ?? (machine?.definition === definition ? machine.revisionId : undefined);
    return {
      stateMachineArn: e.machineArn,
      name: e.machineName,
      definition,
      roleArn: e.roleArn,
      updateDate: new Date(machine?.updateDate ?? machine?.creationDate ?? e.startDate),
      loggingConfiguration: (machine?.loggingConfiguration as sfn.LoggingConfiguration) ?? DEFAULT_LOGGING,
      tracingConfiguration: (machine?.tracingConfiguration as sfn.TracingConfiguration) ?? DEFAULT_TRACING,
      ...(revisionId === undefined ? {} : { revisionId }),
    };
  }

  async listExecutions(input: sfn.ListExecutionsInput): Promise<sfn.ListExecutionsOutput> {
    await this.flushes.persist();
    const ofMachine =
      input.stateMachineArn === undefined ? () => true : this.executionsOf(input.stateMachineArn);
    const redriven = input.redriveFilter;
    const all = [...this.executions.all()]
      .filter((e) => !e.express && ofMachine(e))
      .filter((e) => input.statusFilter === undefined || e.status === input.statusFilter)
      .filter((e) => redriven === undefined || (redriven === 'REDRIVEN') === e.redriveCount > 0)
      .sort((a, b) => b.startDate - a.startDate)
      .map((e) => ({
        executionArn: e.arn,
        stateMachineArn: e.machineArn,
        stateMachineVersionArn: e.versionArn,
        stateMachineAliasArn: e.aliasArn,
        name: e.name,
        status: e.status,
        startDate: new Date(e.startDate),
        ...(e.stopDate === undefined ? {} : { stopDate: new Date(e.stopDate) }),
        redriveCount: e.redriveCount,
        ...(e.redriveDate === undefined ? {} : { redriveDate: new Date(e.redriveDate) }),
      }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { executions: page, nextToken };
  }

  /**
   * Which executions ListExecutions lists for a state machine ARN: all of the machine's, or with a
   * version or alias ARN only those that ran that version or were started through that alias.
   */
  private executionsOf(stateMachineArn: string): (e: ExecutionRecord) => boolean {
    const ref = parseStateMachineArn(this.scope, stateMachineArn);
    const machine = this.registry.get(ref.name, stateMachineArn);
    if (machine.type === 'EXPRESS') {
      throw new SfnServiceError(
        'StateMachineTypeNotSupported',
        'This operation is not supported by this type of state machine',
      );
    }
    if (ref.version !== undefined) {
      const versionArn = `${machine.arn}:${ref.version}`;
      return (e) => e.versionArn === versionArn;
    }
    if (ref.alias !== undefined) {
      const aliasArn = `${machine.arn}:${ref.alias}`;
      return (e) => e.aliasArn === aliasArn;
    }
    return (e) => e.machineName === machine.name;
  }

  async getExecutionHistory(input: sfn.GetExecutionHistoryInput): Promise<sfn.GetExecutionHistoryOutput> {
    await this.flushes.persist();
    const e = this.executions.get(input.executionArn);
    const events = this.executions.historyOf(e).events;
    const limit = pageSize(input.maxResults);
    const start = input.nextToken === undefined ? 0 : decodePageToken(input.nextToken);
    const includeData = input.includeExecutionData !== false;
    const page: sfn.HistoryEvent[] = [];
    for (let i = start; i < events.length && page.length < limit; i++) {
      const event = input.reverseOrder ? events[events.length - 1 - i] : events[i];
      if (event) page.push(toHistoryEvent(event, includeData));
    }
    const next = start + page.length;
    return { events: page, ...(next < events.length ? { nextToken: encodePageToken(next) } : {}) };
  }

  async stopExecution(input: sfn.StopExecutionInput): Promise<sfn.StopExecutionOutput> {
    const e = this.executions.get(input.executionArn);
    if (e.status !== 'RUNNING') {
      throw new SfnServiceError('ValidationException', `Execution is not running: '${e.arn}'`);
    }
    await this.executions.stop(e, {
      ...(input.error === undefined ? {} : { error: input.error }),
      ...(input.cause === undefined ? {} : { cause: input.cause }),
    });
    await this.flushes.persist();
    return { stopDate: new Date(e.stopDate ?? this.now()) };
  }

  async redriveExecution(input: sfn.RedriveExecutionInput): Promise<sfn.RedriveExecutionOutput> {
    this.flushes.refuseWhileFaulted();
    const e = this.executions.hydrated(this.executions.get(input.executionArn));
    const redrive = redriveState(e);
    if (redrive.status !== 'REDRIVABLE') {
      throw new SfnServiceError(
        'ExecutionNotRedrivable',
        `Execution is not redrivable: '${e.arn}'${redrive.reason ? ` (${redrive.reason})` : ''}`,
      );
    }
    const redriveDate = this.executions.redrive(e);
    await this.flushes.persist();
    return { redriveDate: new Date(redriveDate) };
  }

  async sendTaskSuccess(input: sfn.SendTaskSuccessInput): Promise<sfn.SendTaskSuccessOutput> {
    assertTokenShape(input.taskToken);
    let output: unknown;
    try {
      output = JSON.parse(String(input.output));
    } catch {
      throw new SfnServiceError('InvalidOutput', 'Invalid Output: the output must be a valid JSON text');
    }
    const text = String(input.output);
    // a UTF-16 unit takes at most 3 UTF-8 bytes: short texts cannot be over the limit
    if (text.length * 3 > MAX_PAYLOAD_BYTES && Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
      throw new SfnServiceError(
        'InvalidOutput',
        'Invalid Output: the output exceeds the maximum size of 256 KiB',
      );
    }
    const waiter = this.tokens.waiterFor(input.taskToken);
    waiter.complete({ kind: 'success', output });
    await this.flushes.outcomeRecorded(waiter);
    return {};
  }

  async sendTaskFailure(input: sfn.SendTaskFailureInput): Promise<sfn.SendTaskFailureOutput> {
    assertTokenShape(input.taskToken);
    const waiter = this.tokens.waiterFor(input.taskToken);
    waiter.complete({
      kind: 'failure',
      ...(input.error === undefined ? {} : { error: input.error }),
      ...(input.cause === undefined ? {} : { cause: input.cause }),
    });
    await this.flushes.outcomeRecorded(waiter);
    return {};
  }

  async sendTaskHeartbeat(input: sfn.SendTaskHeartbeatInput): Promise<sfn.SendTaskHeartbeatOutput> {
    this.tokens.waiterFor(input.taskToken).heartbeat();
    return {};
  }

  /** Resolves once the execution has ended (or the engine closed); for tests, the CLI and child executions. */
  async awaitExecution(executionArn: string): Promise<sfn.DescribeExecutionOutput> {
    await this.executions.awaitEnd(this.executions.get(executionArn));
    return this.describeExecution({ executionArn });
  }

  /** Validates a start request and begins the execution (or finds the same start made before). */
  private begin(input: sfn.StartExecutionInput, sync: boolean): ExecutionRecord {
    if (this.executions.closed)
      throw new SfnServiceError('ServiceUnavailable', 'The engine is shutting down', 503);
    const [machineArnText, testCase, ...rest] = String(input.stateMachineArn ?? '').split('#');
    if (rest.length > 0)
      throw new SfnServiceError('InvalidArn', `Invalid Arn: '${String(input.stateMachineArn)}'`);
    const ref = parseStateMachineArn(this.scope, machineArnText);
    const machine = this.registry.get(ref.name, String(machineArnText));
    if (sync && machine.type !== 'EXPRESS') {
      throw new SfnServiceError(
        'StateMachineTypeNotSupported',
        'This operation is not supported by this type of state machine',
      );
    }
    const mocks =
      testCase === undefined ? undefined : MockedTestCase.select(this.mockConfig, machine.name, testCase);
    let definitionText = machine.definition;
    let roleArn = machine.roleArn;
    let versionArn: string | undefined;
    let aliasArn: string | undefined;
    if (ref.version !== undefined || ref.alias !== undefined) {
      const version = this.stateMachines.resolveVersion(machine, ref);
      definitionText = version.definition;
      roleArn = version.roleArn;
      versionArn = `${machine.arn}:${version.version}`;
      if (ref.alias !== undefined) aliasArn = `${machine.arn}:${ref.alias}`;
    }
    const name = input.name ?? crypto.randomUUID();
    assertValidName(name, 'execution name');
    const inputText = input.input ?? '{}';
    let parsedInput: unknown;
    try {
      parsedInput = JSON.parse(inputText);
    } catch {
      throw new SfnServiceError(
        'InvalidExecutionInput',
        'Invalid Execution Input: the input must be a valid JSON text',
      );
    }
    if (Buffer.byteLength(inputText) > MAX_PAYLOAD_BYTES) {
      throw new SfnServiceError(
        'InvalidExecutionInput',
        'Invalid Execution Input: the input exceeds the maximum size of 256 KiB',
      );
    }
    const express = machine.type === 'EXPRESS';
    const arn = express
      ? expressExecutionArn(this.scope, machine.name, name)
      : buildExecutionArn(this.scope, machine.name, name);
    const existing = this.executions.find(arn);
    if (existing) {
      if (existing.status === 'RUNNING' && existing.input === inputText) return existing;
      throw new SfnServiceError('ExecutionAlreadyExists', `Execution Already Exists: '${arn}'`);
    }
    return this.executions.begin({
      arn,
      name,
      machineName: machine.name,
      machineArn: machine.arn,
      versionArn,
      aliasArn,
      definitionText,
      roleArn,
      ...(testCase === undefined ? {} : { testCase }),
      mocks,
      input: inputText,
      parsedInput,
      express,
    });
  }

  /**
   * `states:startExecution`: a child execution starts through `start` (the engine's StartExecution)
   * as any other; a refused start is the integration's error.
   */
  async startChild(
    parameters: unknown,
    start: (input: sfn.StartExecutionInput) => Promise<sfn.StartExecutionOutput>,
  ): Promise<{ ExecutionArn: string; StartDate: Date }> {
    const p = (parameters ?? {}) as { StateMachineArn?: unknown; Input?: unknown; Name?: unknown };
    const input = typeof p.Input === 'string' ? p.Input : JSON.stringify(p.Input ?? {});
    try {
      const out = await start({
        stateMachineArn: String(p.StateMachineArn),
        input,
        ...(typeof p.Name === 'string' ? { name: p.Name } : {}),
      });
      return { ExecutionArn: String(out.executionArn), StartDate: out.startDate ?? new Date() };
    } catch (error) {
      if (error instanceof SfnServiceError)
        throw new StatesError(
          startExecutionErrorName(error.code),
          `${error.message} (Service: AWSStepFunctions; Status Code: ${error.httpStatus}; Error Code: ${error.code})`,
        );
      throw error;
    }
  }

  /** Waits for a child execution to end (or `signal` to abort); its DescribeExecution output as the `.sync` integration returns it. */
  async awaitChild(arn: string, signal: AbortSignal): Promise<Record<string, unknown>> {
    const e = this.executions.get(arn);
    await Promise.race([
      e.done,
      new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(new AbortedError(signal.reason)), { once: true }),
      ),
    ]);
    while (e.status === 'RUNNING') await e.done;
    const d = await this.describeExecution({ executionArn: arn });
    const out: Record<string, unknown> = {
      ExecutionArn: d.executionArn,
      Input: d.input,
      InputDetails: { Included: true },
      Name: d.name,
      StartDate: d.startDate?.getTime(),
      StateMachineArn: d.stateMachineArn,
      Status: d.status,
      StopDate: d.stopDate?.getTime(),
    };
    if (d.output !== undefined) {
      out.Output = d.output;
      out.OutputDetails = { Included: true };
    }
    if (d.error !== undefined) out.Error = d.error;
    if (d.cause !== undefined) out.Cause = d.cause;
    return out;
  }
}

/** The errors StartExecution models (API_StartExecution.html); any other code is the SDK's service exception. */
const START_EXECUTION_MODELED: ReadonlySet<string> = new Set([
  'ExecutionAlreadyExists',
  'ExecutionLimitExceeded',
  'InvalidArn',
  'InvalidExecutionInput',
  'InvalidName',
  'StateMachineDeleting',
  'StateMachineDoesNotExist',
  'ValidationException',
  'KmsAccessDeniedException',
  'KmsInvalidStateException',
  'KmsThrottlingException',
]);

/**
 * How the optimized `states:startExecution` integration names a refused start: the modeled
 * exception (`ExecutionLimitExceeded` → `StepFunctions.ExecutionLimitExceededException`), or the
 * SDK's `AWSStepFunctionsException` for codes the API does not model (`ThrottlingException`).
 */
function startExecutionErrorName(code: string): string {
  if (!START_EXECUTION_MODELED.has(code)) return 'StepFunctions.AWSStepFunctionsException';
  return `StepFunctions.${code.endsWith('Exception') ? code : `${code}Exception`}`;
}

/** An execution as the engine tracks it in memory, and what a restarted engine keeps of a finished one. */
import type * as sfn from '@aws-sdk/client-sfn';
import type { StatesBlock } from './core/definition.ts';
import type { ExecutionHistory } from './persistence/execution-history.ts';
import type { StoredEvent } from './persistence/history.ts';

/** What a restarted engine keeps of a finished execution without reading its history (store summaries). */
export interface FinishedExecutionSummary {
  readonly machineArn: string;
  readonly versionArn?: string;
  readonly aliasArn?: string;
  readonly startDate: number;
  readonly roleArn: string;
  readonly testCase?: string;
  readonly status: sfn.ExecutionStatus;
  readonly stopDate?: number;
  readonly error?: string;
  readonly cause?: string;
  readonly redriveCount: number;
  readonly redriveDate?: number;
}

/** An execution as the engine tracks it in memory (rebuilt from its history at start-up). */
export interface ExecutionRecord {
  readonly arn: string;
  readonly name: string;
  readonly machineName: string;
  readonly machineArn: string;
  readonly versionArn?: string;
  readonly aliasArn?: string;
  /** Read from the history when first needed if the execution was known from its summary. */
  definition: StatesBlock;
  input: string;
  /** Known from its store summary: input, output and definition are read from the history when asked for. */
  summarized?: boolean;
  readonly startDate: number;
  readonly roleArn: string;
  readonly testCase?: string;
  readonly express: boolean;
  /** The history; a finished durable execution lets go of it (see `Executions.historyOf`). */
  history: ExecutionHistory | undefined;
  /** A finished durable execution's history while memory allows; reread from the store after. */
  released?: WeakRef<ExecutionHistory>;
  status: sfn.ExecutionStatus;
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
  redriveCount: number;
  redriveDate?: number;
  controller: AbortController;
  done: Promise<void>;
  settle: () => void;
}

/** What an execution is known by before it runs: everything but its run state. */
export type ExecutionFields = Omit<
  ExecutionRecord,
  'status' | 'redriveCount' | 'controller' | 'done' | 'settle'
>;

/** A new record, RUNNING, not yet launched. */
export function newExecutionRecord(fields: ExecutionFields): ExecutionRecord {
  return {
    ...fields,
    status: 'RUNNING',
    redriveCount: 0,
    controller: new AbortController(),
    done: Promise.resolve(),
    settle: () => {},
  };
}

/** The reason an execution's runner is aborted. */
export type StopReason =
  | { kind: 'stop'; error?: string; cause?: string }
  | { kind: 'timeout' }
  | { kind: 'shutdown' };

/** The status each terminal history event ends an execution with. */
const TERMINAL_STATUS: Readonly<Record<string, sfn.ExecutionStatus>> = Object.freeze({
  ExecutionSucceeded: 'SUCCEEDED',
  ExecutionFailed: 'FAILED',
  ExecutionTimedOut: 'TIMED_OUT',
  ExecutionAborted: 'ABORTED',
});

/** Whether a history event ends its execution. */
export function isTerminalEvent(event: StoredEvent): boolean {
  return TERMINAL_STATUS[event.type] !== undefined;
}

/** Takes the status, stop date, output, error and cause a terminal event records (nothing for any other event). */
export function applyTerminal(e: ExecutionRecord, event: StoredEvent): void {
  const status = TERMINAL_STATUS[event.type];
  if (!status) return;
  e.status = status;
  e.stopDate = event.ts;
  const d = event.details ?? {};
  if (status === 'SUCCEEDED') e.output = String(d.output);
  if (typeof d.error === 'string') e.error = d.error;
  if (typeof d.cause === 'string') e.cause = d.cause;
}

export function summaryOf(e: ExecutionRecord): FinishedExecutionSummary {
  return {
    machineArn: e.machineArn,
    ...(e.versionArn === undefined ? {} : { versionArn: e.versionArn }),
    ...(e.aliasArn === undefined ? {} : { aliasArn: e.aliasArn }),
    startDate: e.startDate,
    roleArn: e.roleArn,
    ...(e.testCase === undefined ? {} : { testCase: e.testCase }),
    status: e.status,
    ...(e.stopDate === undefined ? {} : { stopDate: e.stopDate }),
    ...(e.error === undefined ? {} : { error: e.error }),
    ...(e.cause === undefined ? {} : { cause: e.cause }),
    redriveCount: e.redriveCount,
    ...(e.redriveDate === undefined ? {} : { redriveDate: e.redriveDate }),
  };
}

/** Whether RedriveExecution may rerun the execution, and if not why, in AWS's words. */
export function redriveState(e: ExecutionRecord): { status: sfn.ExecutionRedriveStatus; reason?: string } {
  if (e.status === 'FAILED' || e.status === 'TIMED_OUT' || e.status === 'ABORTED')
    return e.express ? { status: 'NOT_REDRIVABLE' } : { status: 'REDRIVABLE' };
  return { status: 'NOT_REDRIVABLE', reason: `Execution is ${e.status} and cannot be redriven` };
}

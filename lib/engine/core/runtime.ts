/** What the interpreter needs from the engine while it runs one execution. */

import type { Journal } from '../persistence/journal.ts';
import type { ResourceInvoker } from '../types.ts';
import type { ActivityTask } from './activities.ts';
import type { MockedTestCase } from './mock-config.ts';
import type { TaskTokenRegistry } from './task-tokens.ts';

/** A states block: the machine itself, a Parallel branch or a Map ItemProcessor. */
export interface StatesBlock {
  readonly StartAt: string;
  readonly States: Record<string, StateDefinition>;
  readonly QueryLanguage?: QueryLanguage;
  readonly TimeoutSeconds?: number;
}

export type QueryLanguage = 'JSONPath' | 'JSONata';

/** One state as written in ASL (fields are read per state type). */
export type StateDefinition = Record<string, unknown> & { readonly Type: string };

/** The parts of the Context object that stay the same for the whole execution. */
export interface ExecutionContextBase {
  readonly Execution: {
    readonly Id: string;
    readonly Input: unknown;
    readonly StartTime: string;
    readonly Name: string;
    readonly RoleArn: string;
    readonly RedriveCount: number;
    readonly RedriveTime?: string;
  };
  readonly StateMachine: { readonly Id: string; readonly Name: string };
}

/** Engine services for one running execution. */
export interface ExecutionRuntime {
  readonly executionArn: string;
  readonly stateMachineArn: string;
  readonly region: string;
  readonly accountId: string;
  readonly journal: Journal;
  readonly contextBase: ExecutionContextBase;
  readonly invokeResource: ResourceInvoker;
  readonly mocks: MockedTestCase | undefined;
  readonly tokens: TaskTokenRegistry;
  /** Activity tasks for workers (GetActivityTask). */
  readonly activities: {
    /** Whether an activity with this ARN exists (CreateActivity, not deleted). */
    exists(activityArn: string): boolean;
    /** Queues a task; returns a function that withdraws it if no worker took it yet. */
    enqueue(activityArn: string, task: ActivityTask): () => void;
  };
  /** Multiplies every duration (1 = real time, 0 = no waiting). */
  readonly timeScale: number;
  readonly now: () => number;
  /** Aborted by StopExecution or the execution timeout. */
  readonly signal: AbortSignal;
  /** Starts a child execution; returns its ARN and start date (`states:startExecution`). */
  startChildExecution(
    parameters: unknown,
    parentArn: string,
  ): Promise<{ ExecutionArn: string; StartDate: Date }>;
  /** Waits for a child execution to end; returns its DescribeExecution output. */
  awaitChildExecution(executionArn: string, signal: AbortSignal): Promise<Record<string, unknown>>;
}

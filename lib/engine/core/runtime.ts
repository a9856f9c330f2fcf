/**
 * What the interpreter works with: the engine's services for one running execution, what the
 * engine keeps for all of its executions, and the frame and state run every state handler gets.
 */
import type { ExpressionCache } from '../dataflow/expression-cache.ts';
import type { Variables } from '../dataflow/index.ts';
import type { ExecutionHistory, Scope } from '../persistence/execution-history.ts';
import type { QueryLanguage, ResourceInvoker } from '../types.ts';
import type { ActivityTask } from './activities.ts';
import type { StateDefinition } from './definition.ts';
import type { PayloadTexts } from './json-text.ts';
import type { MockedTestCase } from './mock-config.ts';
import type { RandomPool } from './random.ts';
import type { TaskCalls } from './task-calls.ts';
import type { TaskPlans } from './task-plan.ts';
import type { TaskTokenRegistry } from './task-tokens.ts';
import type { AbortWatchers } from './timers.ts';

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

/**
 * What one engine keeps for all of its executions, and shares with no other engine: the
 * compound state handlers, caches of what its definitions fix, memos, random bytes.
 */
export interface EngineState {
  /** Task, Map and Parallel: handed in, since their modules import the interpreter. */
  readonly compoundStates: CompoundStates;
  /** Parsed JSONPath and compiled JSONata expressions of the engine's definitions. */
  readonly expressions: ExpressionCache;
  /** What each Task state's definition fixes about its calls. */
  readonly taskPlans: TaskPlans;
  /** The text of the payload serialized last, and of the last timestamp formatted. */
  readonly texts: PayloadTexts;
  /** Random bytes for task tokens. */
  readonly random: RandomPool;
  /** Who waits on each execution's and branch's abort signal. */
  readonly abortWatchers: AbortWatchers;
  /** The task calls under way, and whether new attempts wait for a stop (the drain). */
  readonly calls: TaskCalls;
}

/** Engine services for one running execution. */
export interface ExecutionRuntime extends EngineState {
  readonly executionArn: string;
  readonly stateMachineArn: string;
  readonly region: string;
  readonly accountId: string;
  readonly history: ExecutionHistory;
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

/** Where a states block runs: its event thread, variables and abort signal. */
export interface Frame {
  readonly rt: ExecutionRuntime;
  readonly scope: Scope;
  readonly variables: Variables;
  readonly language: QueryLanguage;
  readonly signal: AbortSignal;
  /** Context `Map.Item` inside a Map iteration. */
  readonly mapItem?: { readonly Index: number; readonly Value: unknown };
  /** Inside a Parallel branch (an uncaught Task failure there is followed by TaskStateAborted). */
  readonly inBranch: boolean;
}

/** One state being run. */
export interface StateRun {
  readonly frame: Frame;
  readonly name: string;
  readonly state: StateDefinition;
  readonly language: QueryLanguage;
  readonly rawInput: unknown;
  readonly enteredId: number;
  /** Key of the `*StateEntered` event (scope and position): stable across restarts and redrives. */
  readonly enteredKey: string;
  readonly context: Record<string, unknown> & {
    State: { Name: string; EnteredTime: string; RetryCount?: number };
  };
}

export interface StateOutcome {
  readonly output: unknown;
  /** Absent: the block ends here. */
  readonly next?: string;
  /** Variables a simple state (Pass, Choice, Wait, Succeed) assigned, for its exit event. */
  readonly assigned?: Variables;
}

/** Handlers of the state types that need more than a few lines (Task, Map, Parallel). */
export interface CompoundStates {
  task(run: StateRun): Promise<StateOutcome>;
  map(run: StateRun): Promise<StateOutcome>;
  parallel(run: StateRun): Promise<StateOutcome>;
}

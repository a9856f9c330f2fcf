/**
 * plangate's embedded Step Functions engine: the Step Functions API (same names and shapes as
 * @aws-sdk/client-sfn, one method per operation of ./operations.ts) over the ASL interpreter in
 * ./core, durable in a store directory. This class is the facade: it builds the engine's parts
 * and hands each operation to the part that does it (state machines, activities, tags,
 * executions); the executions' lifecycle is in ./executions.ts, when events reach the disk in
 * ./durability.ts.
 */
import type * as sfn from '@aws-sdk/client-sfn';
import { ActivityOperations } from './activity-operations.ts';
import { ActivityQueues } from './core/activities.ts';
import type { ArnScope } from './core/arn.ts';
import { parseMockConfig } from './core/mock-config.ts';
import { MachineRegistry } from './core/registry.ts';
import { TaskTokenRegistry } from './core/task-tokens.ts';
import { DEFAULT_SYNC_WINDOW_MS, type Durability, FlushScheduler } from './durability.ts';
import { ExecutionOperations } from './execution-operations.ts';
import { Executions } from './executions.ts';
import type { OperationOptions } from './operations.ts';
import { type EngineStore, FileEngineStore, MemoryEngineStore } from './persistence/store.ts';
import { StateMachineOperations } from './state-machine-operations.ts';
import { TagOperations } from './tag-operations.ts';
import type { ResourceInvoker, StepFunctionsEngine } from './types.ts';

export type { Durability } from './durability.ts';
export { peekStoredDefinitions, type StoredDefinitions } from './persistence/store.ts';

/** Options of {@link createEngine}. */
export interface EngineOptions {
  /** Store directory; `undefined` keeps everything in memory. @default '.plangate/engine' (via createEngine) */
  readonly storeDir?: string;
  /** Service integrations (Lambda, DynamoDB, EventBridge, ...). */
  readonly invokeResource: ResourceInvoker;
  /** A Step Functions Local MockConfigFile (object); executions choose a test case by `<arn>#<TestCase>`. @default none */
  readonly mockConfig?: object;
  /** Multiplies Wait, retry and timeout durations: 1 = real time, 0 = no waiting. @default 1 */
  readonly timeScale?: number;
  /** Milliseconds since the epoch. @default Date.now */
  readonly clock?: () => number;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** @default '123456789012' */
  readonly accountId?: string;
  /** How long GetActivityTask waits for a task before answering without one (AWS: 60). @default 60 */
  readonly activityPollSeconds?: number;
  /**
   * What a durable engine waits for before an effect outside it (a task call, a task token handed
   * out, an API answer that reports a state): `group` writes the events it depends on first
   * (`write(2)`, which kill -9 cannot undo) and syncs them to stable storage in groups, at most
   * `syncWindowMs` later; `strict` waits for that sync (fdatasync) before every such effect.
   * See lib/engine/persistence/README.md. @default 'group'
   */
  readonly durability?: Durability;
  /** The group window: longest time written events wait for their fdatasync (and pure transitions for their write). @default 20 */
  readonly syncWindowMs?: number;
}

export class Engine implements StepFunctionsEngine {
  private readonly store: EngineStore;
  private readonly flushes: FlushScheduler;
  private readonly activityQueues = new ActivityQueues();
  private readonly stateMachines: StateMachineOperations;
  private readonly activities: ActivityOperations;
  private readonly tags: TagOperations;
  private readonly executions: Executions;
  private readonly executionOperations: ExecutionOperations;
  private closed = false;

  constructor(options: EngineOptions) {
    const scope: ArnScope = {
      region: options.region ?? 'us-east-1',
      accountId: options.accountId ?? '123456789012',
    };
    if (options.durability !== undefined && options.durability !== 'group' && options.durability !== 'strict')
      throw new Error(`durability must be 'group' or 'strict', not '${String(options.durability)}'`);
    const memoryOnly = options.storeDir === undefined;
    const syncWindowMs = options.syncWindowMs ?? DEFAULT_SYNC_WINDOW_MS;
    this.store =
      options.storeDir === undefined
        ? new MemoryEngineStore()
        : new FileEngineStore({ dir: options.storeDir, syncWindowMs });
    this.flushes = new FlushScheduler({
      store: this.store,
      memoryOnly,
      durability: options.durability ?? 'group',
      syncWindowMs,
    });
    const registry = new MachineRegistry(this.store);
    const mockConfig = options.mockConfig === undefined ? undefined : parseMockConfig(options.mockConfig);
    const now = options.clock ?? Date.now;
    const tokens = new TaskTokenRegistry();
    this.stateMachines = new StateMachineOperations({ scope, registry, now });
    this.activities = new ActivityOperations({
      scope,
      registry,
      queues: this.activityQueues,
      flushes: this.flushes,
      pollSeconds: options.activityPollSeconds ?? 60,
      now,
    });
    this.tags = new TagOperations(scope, registry);
    this.executions = new Executions({
      scope,
      store: this.store,
      flushes: this.flushes,
      memoryOnly,
      invokeResource: options.invokeResource,
      mockConfig,
      tokens,
      // what executions see of activities: one object shared by all of them
      activities: {
        exists: (arn) => this.activities.find(arn) !== undefined,
        enqueue: (arn, task) => this.activityQueues.enqueue(arn, task),
      },
      children: {
        // Through this engine's StartExecution, as AWS's integration calls the API: what refuses
        // or observes a start there sees children too.
        start: (parameters) =>
          this.executionOperations.startChild(parameters, (input) => this.startExecution(input)),
        awaitEnd: (arn, signal) => this.executionOperations.awaitChild(arn, signal),
      },
      now,
      timeScale: options.timeScale ?? 1,
    });
    this.executionOperations = new ExecutionOperations({
      scope,
      registry,
      stateMachines: this.stateMachines,
      executions: this.executions,
      tokens,
      flushes: this.flushes,
      mockConfig,
      now,
    });
    this.executions.resumeStored();
  }

  /**
   * Before a clean stop ({@link close} after it): no task attempt begins any more (it runs
   * afresh after the restart) and the calls under way end and record their outcomes, so none is
   * found interrupted on the restart; at most `timeoutMs` (@default 10000). Answers how many
   * calls were still under way when it gave up waiting.
   */
  drain(options: { readonly timeoutMs?: number } = {}): Promise<number> {
    return this.executions.drain(options.timeoutMs ?? 10_000);
  }

  /** Writes pending events and stops running executions without recording anything (they resume on restart). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.flushes.stop();
    this.activityQueues.close();
    this.executions.close();
    this.store.write();
    await this.store.close();
  }

  /** What the store has done so far (bytes read, syncs, checkpoints): for the bench and tests. */
  storeStats(): ReturnType<EngineStore['stats']> {
    return this.store.stats();
  }

  /** Resolves once the execution has ended (or the engine closed); for tests, the CLI and child executions. */
  awaitExecution(executionArn: string): Promise<sfn.DescribeExecutionOutput> {
    return this.executionOperations.awaitExecution(executionArn);
  }

  // ---- state machines -------------------------------------------------------------------------

  createStateMachine(input: sfn.CreateStateMachineInput): Promise<sfn.CreateStateMachineOutput> {
    return this.stateMachines.createStateMachine(input);
  }

  updateStateMachine(input: sfn.UpdateStateMachineInput): Promise<sfn.UpdateStateMachineOutput> {
    return this.stateMachines.updateStateMachine(input);
  }

  describeStateMachine(input: sfn.DescribeStateMachineInput): Promise<sfn.DescribeStateMachineOutput> {
    return this.stateMachines.describeStateMachine(input);
  }

  listStateMachines(input: sfn.ListStateMachinesInput): Promise<sfn.ListStateMachinesOutput> {
    return this.stateMachines.listStateMachines(input);
  }

  deleteStateMachine(input: sfn.DeleteStateMachineInput): Promise<sfn.DeleteStateMachineOutput> {
    return this.stateMachines.deleteStateMachine(input);
  }

  publishStateMachineVersion(
    input: sfn.PublishStateMachineVersionInput,
  ): Promise<sfn.PublishStateMachineVersionOutput> {
    return this.stateMachines.publishStateMachineVersion(input);
  }

  listStateMachineVersions(
    input: sfn.ListStateMachineVersionsInput,
  ): Promise<sfn.ListStateMachineVersionsOutput> {
    return this.stateMachines.listStateMachineVersions(input);
  }

  deleteStateMachineVersion(
    input: sfn.DeleteStateMachineVersionInput,
  ): Promise<sfn.DeleteStateMachineVersionOutput> {
    return this.stateMachines.deleteStateMachineVersion(input);
  }

  createStateMachineAlias(
    input: sfn.CreateStateMachineAliasInput,
  ): Promise<sfn.CreateStateMachineAliasOutput> {
    return this.stateMachines.createStateMachineAlias(input);
  }

  describeStateMachineAlias(
    input: sfn.DescribeStateMachineAliasInput,
  ): Promise<sfn.DescribeStateMachineAliasOutput> {
    return this.stateMachines.describeStateMachineAlias(input);
  }

  updateStateMachineAlias(
    input: sfn.UpdateStateMachineAliasInput,
  ): Promise<sfn.UpdateStateMachineAliasOutput> {
    return this.stateMachines.updateStateMachineAlias(input);
  }

  listStateMachineAliases(
    input: sfn.ListStateMachineAliasesInput,
  ): Promise<sfn.ListStateMachineAliasesOutput> {
    return this.stateMachines.listStateMachineAliases(input);
  }

  deleteStateMachineAlias(
    input: sfn.DeleteStateMachineAliasInput,
  ): Promise<sfn.DeleteStateMachineAliasOutput> {
    return this.stateMachines.deleteStateMachineAlias(input);
  }

  validateStateMachineDefinition(
    input: sfn.ValidateStateMachineDefinitionInput,
  ): Promise<sfn.ValidateStateMachineDefinitionOutput> {
    return this.stateMachines.validateStateMachineDefinition(input);
  }

  // ---- executions -----------------------------------------------------------------------------

  startExecution(input: sfn.StartExecutionInput): Promise<sfn.StartExecutionOutput> {
    return this.executionOperations.startExecution(input);
  }

  startSyncExecution(input: sfn.StartSyncExecutionInput): Promise<sfn.StartSyncExecutionOutput> {
    return this.executionOperations.startSyncExecution(input);
  }

  describeExecution(input: sfn.DescribeExecutionInput): Promise<sfn.DescribeExecutionOutput> {
    return this.executionOperations.describeExecution(input);
  }

  describeStateMachineForExecution(
    input: sfn.DescribeStateMachineForExecutionInput,
  ): Promise<sfn.DescribeStateMachineForExecutionOutput> {
    return this.executionOperations.describeStateMachineForExecution(input);
  }

  listExecutions(input: sfn.ListExecutionsInput): Promise<sfn.ListExecutionsOutput> {
    return this.executionOperations.listExecutions(input);
  }

  getExecutionHistory(input: sfn.GetExecutionHistoryInput): Promise<sfn.GetExecutionHistoryOutput> {
    return this.executionOperations.getExecutionHistory(input);
  }

  stopExecution(input: sfn.StopExecutionInput): Promise<sfn.StopExecutionOutput> {
    return this.executionOperations.stopExecution(input);
  }

  redriveExecution(input: sfn.RedriveExecutionInput): Promise<sfn.RedriveExecutionOutput> {
    return this.executionOperations.redriveExecution(input);
  }

  sendTaskSuccess(input: sfn.SendTaskSuccessInput): Promise<sfn.SendTaskSuccessOutput> {
    return this.executionOperations.sendTaskSuccess(input);
  }

  sendTaskFailure(input: sfn.SendTaskFailureInput): Promise<sfn.SendTaskFailureOutput> {
    return this.executionOperations.sendTaskFailure(input);
  }

  sendTaskHeartbeat(input: sfn.SendTaskHeartbeatInput): Promise<sfn.SendTaskHeartbeatOutput> {
    return this.executionOperations.sendTaskHeartbeat(input);
  }

  // ---- activities -----------------------------------------------------------------------------

  createActivity(input: sfn.CreateActivityInput): Promise<sfn.CreateActivityOutput> {
    return this.activities.createActivity(input);
  }

  describeActivity(input: sfn.DescribeActivityInput): Promise<sfn.DescribeActivityOutput> {
    return this.activities.describeActivity(input);
  }

  listActivities(input: sfn.ListActivitiesInput): Promise<sfn.ListActivitiesOutput> {
    return this.activities.listActivities(input);
  }

  deleteActivity(input: sfn.DeleteActivityInput): Promise<sfn.DeleteActivityOutput> {
    return this.activities.deleteActivity(input);
  }

  /** A worker's long poll (see {@link ActivityOperations.getActivityTask}). */
  getActivityTask(
    input: sfn.GetActivityTaskInput,
    options?: OperationOptions,
  ): Promise<sfn.GetActivityTaskOutput> {
    return this.activities.getActivityTask(input, options);
  }

  // ---- tags -----------------------------------------------------------------------------------

  tagResource(input: sfn.TagResourceInput): Promise<sfn.TagResourceOutput> {
    return this.tags.tagResource(input);
  }

  untagResource(input: sfn.UntagResourceInput): Promise<sfn.UntagResourceOutput> {
    return this.tags.untagResource(input);
  }

  listTagsForResource(input: sfn.ListTagsForResourceInput): Promise<sfn.ListTagsForResourceOutput> {
    return this.tags.listTagsForResource(input);
  }
}

/** Creates an engine; `storeDir` defaults to `.plangate/engine` (pass `storeDir: undefined` explicitly for memory). */
export function createEngine(options: EngineOptions): Engine {
  const storeDir = 'storeDir' in options ? options.storeDir : '.plangate/engine';
  return new Engine({ ...options, ...(storeDir === undefined ? {} : { storeDir }) });
}

/**
 * plangate's embedded Step Functions engine: the Step Functions API (same names and shapes as
 * @aws-sdk/client-sfn) over the ASL interpreter in ./core, durable in a store directory.
 * Every execution's history is its only state: running executions resume from it at start-up.
 */
import type * as sfn from '@aws-sdk/client-sfn';
import { ActivityQueues } from './core/activities.ts';
import {
  type ArnScope,
  assertValidName,
  activityArn as buildActivityArn,
  executionArn as buildExecutionArn,
  stateMachineArn as buildMachineArn,
  expressExecutionArn,
  parseActivityArn,
  parseExecutionArn,
  parseStateMachineArn,
} from './core/arn.ts';
import { type Frame, MAX_PAYLOAD_BYTES, registerCompoundHandlers, runBlock } from './core/interpreter.ts';
import { mapState } from './core/map-state.ts';
import { type MockConfig, MockedTestCase, parseMockConfig } from './core/mock-config.ts';
import { parallelState } from './core/parallel-state.ts';
import {
  type ActivityRecord,
  type MachineRecord,
  MachineRegistry,
  newRevisionId,
  withTags,
} from './core/registry.ts';
import type { ExecutionRuntime, QueryLanguage, StatesBlock } from './core/runtime.ts';
import { taskState } from './core/task-state.ts';
import { assertTokenShape, TaskTokenRegistry, type TokenWaiter } from './core/task-tokens.ts';
import { AbortedError } from './core/timers.ts';
import { type StoredEvent, toHistoryEvent } from './persistence/history.ts';
import { Journal } from './persistence/journal.ts';
import { type EngineStore, FileStore, MemoryStore } from './persistence/store.ts';
import { type ResourceInvoker, SfnServiceError, StatesError, type StepFunctionsEngine } from './types.ts';
import { validateDefinition } from './validate/index.ts';

registerCompoundHandlers({ task: taskState, map: mapState, parallel: parallelState });

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

export type Durability = 'group' | 'strict';

/** What a restarted engine keeps of a finished execution without reading its history (store summaries). */
interface ExecutionSummary {
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
interface ExecutionRecord {
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
  /** The history; a finished durable execution lets go of it (see {@link Engine.historyOf}). */
  journal: Journal | undefined;
  /** A finished durable execution's history while memory allows; reread from the store after. */
  released?: WeakRef<Journal>;
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

const TERMINAL: Record<string, sfn.ExecutionStatus> = {
  ExecutionSucceeded: 'SUCCEEDED',
  ExecutionFailed: 'FAILED',
  ExecutionTimedOut: 'TIMED_OUT',
  ExecutionAborted: 'ABORTED',
};

/** The reason an execution's runner is aborted. */
type StopReason =
  | { kind: 'stop'; error?: string; cause?: string }
  | { kind: 'timeout' }
  | { kind: 'shutdown' };

const MAX_HISTORY_EVENTS = 25_000;

/** The group window (see {@link EngineOptions.syncWindowMs}). */
const DEFAULT_SYNC_WINDOW_MS = 20;

/** What AWS describes for a machine created without logging or tracing configuration. */
const DEFAULT_LOGGING: sfn.LoggingConfiguration = { level: 'OFF', includeExecutionData: false };
const DEFAULT_TRACING: sfn.TracingConfiguration = { enabled: false };

/** ValidateStateMachineDefinition: AWS's default and largest `maxResults`. */
const MAX_DIAGNOSTICS = 100;

/** AWS's default quota of activities per account and region. */
const MAX_ACTIVITIES = 10_000;

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

export class Engine implements StepFunctionsEngine {
  private readonly scope: ArnScope;
  private readonly store: EngineStore;
  private readonly registry: MachineRegistry;
  private readonly executions = new Map<string, ExecutionRecord>();
  private readonly tokens = new TaskTokenRegistry();
  private readonly activityQueues = new ActivityQueues();
  /** What executions see of activities (one object shared by all of them). */
  private readonly activityDispatch: ExecutionRuntime['activities'] = {
    exists: (arn) => this.findActivity(arn) !== undefined,
    enqueue: (arn, task) => this.activityQueues.enqueue(arn, task),
  };
  private readonly mockConfig: MockConfig | undefined;
  private readonly dirty = new Set<Journal>();
  private readonly definitions = new ParsedDefinitions();
  private readonly definitionRefs = new Map<string, string>();
  /** The pending flush of events nobody waits for (see {@link scheduleFlush}). */
  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private readonly strict: boolean;
  private readonly now: () => number;
  private readonly timeScale: number;
  private closed = false;

  constructor(private readonly options: EngineOptions) {
    this.scope = { region: options.region ?? 'us-east-1', accountId: options.accountId ?? '123456789012' };
    if (options.durability !== undefined && options.durability !== 'group' && options.durability !== 'strict')
      throw new Error(`durability must be 'group' or 'strict', not '${String(options.durability)}'`);
    this.store =
      options.storeDir === undefined
        ? new MemoryStore()
        : new FileStore({
            dir: options.storeDir,
            syncWindowMs: options.syncWindowMs ?? DEFAULT_SYNC_WINDOW_MS,
          });
    this.strict = options.durability === 'strict' && options.storeDir !== undefined;
    this.registry = new MachineRegistry(this.store);
    this.mockConfig = options.mockConfig === undefined ? undefined : parseMockConfig(options.mockConfig);
    this.now = options.clock ?? Date.now;
    this.timeScale = options.timeScale ?? 1;
    this.resumeStoredExecutions();
  }

  /** Writes pending events and stops running executions without recording anything (they resume on restart). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.flushAll();
    this.closed = true;
    this.activityQueues.close();
    for (const e of this.executions.values()) {
      if (e.status === 'RUNNING') e.controller.abort({ kind: 'shutdown' } satisfies StopReason);
      e.journal?.close();
    }
    this.store.write();
    await this.store.close();
  }

  /** What the store has done so far (bytes read, syncs, checkpoints): for the bench and tests. */
  storeStats(): ReturnType<EngineStore['stats']> {
    return this.store.stats();
  }

  // ---- state machines -------------------------------------------------------------------------

  async createStateMachine(input: sfn.CreateStateMachineInput): Promise<sfn.CreateStateMachineOutput> {
    assertValidName(input.name, 'State Machine name');
    const definition = this.checkedDefinition(input.definition);
    const type = input.type ?? 'STANDARD';
    if (type !== 'STANDARD' && type !== 'EXPRESS')
      throw new SfnServiceError('ValidationException', `Invalid type '${type}'`);
    const arn = buildMachineArn(this.scope, input.name);
    const tags = withTags(undefined, input.tags, arn);
    const existing = this.registry.find(input.name);
    if (existing) {
      if (
        existing.definition === definition &&
        existing.roleArn === input.roleArn &&
        existing.type === type
      ) {
        return { stateMachineArn: arn, creationDate: new Date(existing.creationDate) };
      }
      throw new SfnServiceError('StateMachineAlreadyExists', `State Machine Already Exists: '${arn}'`);
    }
    const machine: MachineRecord = {
      name: input.name,
      arn,
      definition,
      roleArn: input.roleArn ?? `arn:aws:iam::${this.scope.accountId}:role/plangate-engine`,
      type,
      creationDate: this.now(),
      revisionId: newRevisionId(),
      versions: [],
      nextVersion: 1,
      aliases: [],
      ...(input.loggingConfiguration ? { loggingConfiguration: input.loggingConfiguration } : {}),
      ...(input.tracingConfiguration ? { tracingConfiguration: input.tracingConfiguration } : {}),
      ...(tags.length > 0 ? { tags } : {}),
    };
    const out: sfn.CreateStateMachineOutput = {
      stateMachineArn: arn,
      creationDate: new Date(machine.creationDate),
    };
    if (input.publish) {
      const version = this.publish(machine, input.versionDescription);
      out.stateMachineVersionArn = `${arn}:${version}`;
    }
    this.registry.add(machine);
    return out;
  }

  async updateStateMachine(input: sfn.UpdateStateMachineInput): Promise<sfn.UpdateStateMachineOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    // a version or alias cannot be updated: AWS answers as for a machine that does not exist
    if (ref.version !== undefined || ref.alias !== undefined) {
      throw new SfnServiceError(
        'StateMachineDoesNotExist',
        `State Machine Does Not Exist: '${input.stateMachineArn}'`,
      );
    }
    const machine = this.registry.get(ref.name, String(input.stateMachineArn));
    if (input.definition !== undefined) machine.definition = this.checkedDefinition(input.definition);
    if (input.roleArn !== undefined) machine.roleArn = input.roleArn;
    if (input.loggingConfiguration) machine.loggingConfiguration = input.loggingConfiguration;
    if (input.tracingConfiguration) machine.tracingConfiguration = input.tracingConfiguration;
    machine.updateDate = this.now();
    machine.revisionId = newRevisionId();
    const out: sfn.UpdateStateMachineOutput = {
      updateDate: new Date(machine.updateDate),
      revisionId: machine.revisionId,
    };
    if (input.publish)
      out.stateMachineVersionArn = `${machine.arn}:${this.publish(machine, input.versionDescription)}`;
    this.registry.save();
    return out;
  }

  async describeStateMachine(input: sfn.DescribeStateMachineInput): Promise<sfn.DescribeStateMachineOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    const machine = this.registry.get(ref.name, String(input.stateMachineArn));
    let definition = machine.definition;
    let roleArn = machine.roleArn;
    let revisionId = machine.revisionId;
    let description: string | undefined = machine.description;
    let arn = machine.arn;
    if (ref.version !== undefined || ref.alias !== undefined) {
      const version = this.resolveVersion(machine, ref);
      definition = version.definition;
      roleArn = version.roleArn;
      revisionId = version.revisionId;
      description = version.description;
      arn = `${machine.arn}:${version.version}`;
    }
    return {
      stateMachineArn: arn,
      name: machine.name,
      status: 'ACTIVE',
      definition,
      roleArn,
      type: machine.type,
      creationDate: new Date(machine.creationDate),
      revisionId,
      ...(description ? { description } : {}),
      loggingConfiguration: (machine.loggingConfiguration as sfn.LoggingConfiguration) ?? DEFAULT_LOGGING,
      tracingConfiguration: (machine.tracingConfiguration as sfn.TracingConfiguration) ?? DEFAULT_TRACING,
    };
  }

  async listStateMachines(input: sfn.ListStateMachinesInput): Promise<sfn.ListStateMachinesOutput> {
    const all = this.registry
      .all()
      .sort((a, b) => a.creationDate - b.creationDate)
      .map((m) => ({
        stateMachineArn: m.arn,
        name: m.name,
        type: m.type,
        creationDate: new Date(m.creationDate),
      }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { stateMachines: page, ...(nextToken ? { nextToken } : {}) };
  }

  async deleteStateMachine(input: sfn.DeleteStateMachineInput): Promise<sfn.DeleteStateMachineOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    if (ref.version !== undefined)
      return this.deleteStateMachineVersion({ stateMachineVersionArn: input.stateMachineArn });
    if (ref.alias !== undefined)
      return this.deleteStateMachineAlias({ stateMachineAliasArn: input.stateMachineArn });
    if (this.registry.find(ref.name)) this.registry.remove(ref.name);
    return {};
  }

  async publishStateMachineVersion(
    input: sfn.PublishStateMachineVersionInput,
  ): Promise<sfn.PublishStateMachineVersionOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineArn);
    const machine = this.registry.get(ref.name, String(input.stateMachineArn));
    if (input.revisionId !== undefined && input.revisionId !== machine.revisionId) {
      throw new SfnServiceError('ConflictException', 'The revision id does not match the latest revision');
    }
    const latest = machine.versions.at(-1);
    if (latest && latest.revisionId === machine.revisionId) {
      return {
        stateMachineVersionArn: `${machine.arn}:${latest.version}`,
        creationDate: new Date(latest.creationDate),
      };
    }
    const version = this.publish(machine, input.description);
    this.registry.save();
    return { stateMachineVersionArn: `${machine.arn}:${version}`, creationDate: new Date(this.now()) };
  }

  async listStateMachineVersions(
    input: sfn.ListStateMachineVersionsInput,
  ): Promise<sfn.ListStateMachineVersionsOutput> {
    const machine = this.registry.get(
      parseStateMachineArn(this.scope, input.stateMachineArn).name,
      String(input.stateMachineArn),
    );
    const all = [...machine.versions].reverse().map((v) => ({
      stateMachineVersionArn: `${machine.arn}:${v.version}`,
      creationDate: new Date(v.creationDate),
    }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { stateMachineVersions: page, ...(nextToken ? { nextToken } : {}) };
  }

  async deleteStateMachineVersion(
    input: sfn.DeleteStateMachineVersionInput,
  ): Promise<sfn.DeleteStateMachineVersionOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineVersionArn);
    if (ref.version === undefined)
      throw new SfnServiceError('ValidationException', 'Not a state machine version ARN');
    const machine = this.registry.find(ref.name);
    if (!machine) return {};
    const arn = `${machine.arn}:${ref.version}`;
    if (machine.aliases.some((a) => a.routingConfiguration.some((r) => r.stateMachineVersionArn === arn))) {
      throw new SfnServiceError('ConflictException', `Version ${arn} is referenced by an alias`);
    }
    machine.versions = machine.versions.filter((v) => v.version !== ref.version);
    this.registry.save();
    return {};
  }

  async createStateMachineAlias(
    input: sfn.CreateStateMachineAliasInput,
  ): Promise<sfn.CreateStateMachineAliasOutput> {
    assertValidName(input.name, 'alias name');
    if (/^\d+$/.test(input.name))
      throw new SfnServiceError('ValidationException', 'An alias name cannot be a number');
    const routing = this.checkedRouting(input.routingConfiguration);
    const versionArn = String(routing[0]?.stateMachineVersionArn);
    const machine = this.registry.get(parseStateMachineArn(this.scope, versionArn).name, versionArn);
    const arn = `${machine.arn}:${input.name}`;
    const existing = machine.aliases.find((a) => a.name === input.name);
    if (existing) {
      if (JSON.stringify(existing.routingConfiguration) === JSON.stringify(routing)) {
        return { stateMachineAliasArn: arn, creationDate: new Date(existing.creationDate) };
      }
      throw new SfnServiceError('ConflictException', `Alias ${arn} already exists`);
    }
    const now = this.now();
    machine.aliases.push({
      name: input.name,
      routingConfiguration: routing,
      creationDate: now,
      updateDate: now,
      ...(input.description ? { description: input.description } : {}),
    });
    this.registry.save();
    return { stateMachineAliasArn: arn, creationDate: new Date(now) };
  }

  async describeStateMachineAlias(
    input: sfn.DescribeStateMachineAliasInput,
  ): Promise<sfn.DescribeStateMachineAliasOutput> {
    const { machine, alias } = this.findAlias(input.stateMachineAliasArn);
    return {
      stateMachineAliasArn: `${machine.arn}:${alias.name}`,
      name: alias.name,
      routingConfiguration: alias.routingConfiguration,
      creationDate: new Date(alias.creationDate),
      updateDate: new Date(alias.updateDate),
      ...(alias.description ? { description: alias.description } : {}),
    };
  }

  async updateStateMachineAlias(
    input: sfn.UpdateStateMachineAliasInput,
  ): Promise<sfn.UpdateStateMachineAliasOutput> {
    const { alias } = this.findAlias(input.stateMachineAliasArn);
    if (input.routingConfiguration)
      alias.routingConfiguration = this.checkedRouting(input.routingConfiguration);
    if (input.description !== undefined) alias.description = input.description;
    alias.updateDate = this.now();
    this.registry.save();
    return { updateDate: new Date(alias.updateDate) };
  }

  async listStateMachineAliases(
    input: sfn.ListStateMachineAliasesInput,
  ): Promise<sfn.ListStateMachineAliasesOutput> {
    const machine = this.registry.get(
      parseStateMachineArn(this.scope, input.stateMachineArn).name,
      String(input.stateMachineArn),
    );
    const all = machine.aliases.map((a) => ({
      stateMachineAliasArn: `${machine.arn}:${a.name}`,
      creationDate: new Date(a.creationDate),
    }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { stateMachineAliases: page, ...(nextToken ? { nextToken } : {}) };
  }

  async deleteStateMachineAlias(
    input: sfn.DeleteStateMachineAliasInput,
  ): Promise<sfn.DeleteStateMachineAliasOutput> {
    const ref = parseStateMachineArn(this.scope, input.stateMachineAliasArn);
    const machine = this.registry.find(ref.name);
    if (machine && ref.alias !== undefined) {
      machine.aliases = machine.aliases.filter((a) => a.name !== ref.alias);
      this.registry.save();
    }
    return {};
  }

  async validateStateMachineDefinition(
    input: sfn.ValidateStateMachineDefinitionInput,
  ): Promise<sfn.ValidateStateMachineDefinitionOutput> {
    if (typeof input.definition !== 'string') {
      throw new SfnServiceError('ValidationException', 'definition is required');
    }
    const problems = validateDefinition(input.definition);
    // at most maxResults diagnostics (0 or none: AWS's default and limit, 100); the rest truncated
    const limit = input.maxResults || MAX_DIAGNOSTICS;
    return {
      result: problems.length === 0 ? 'OK' : 'FAIL',
      diagnostics: problems.slice(0, limit).map((p) => ({
        severity: 'ERROR',
        code: p.code,
        message: p.message,
        location: p.location,
      })),
      truncated: problems.length > limit,
    };
  }

  // ---- executions -----------------------------------------------------------------------------

  async startExecution(input: sfn.StartExecutionInput): Promise<sfn.StartExecutionOutput> {
    const record = this.beginExecution(input, false);
    await this.persist();
    return { executionArn: record.arn, startDate: new Date(record.startDate) };
  }

  async startSyncExecution(input: sfn.StartSyncExecutionInput): Promise<sfn.StartSyncExecutionOutput> {
    const record = this.beginExecution(input, true);
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
    await this.persist();
    const e = this.hydrated(this.getExecution(input.executionArn));
    // METADATA_ONLY: everything but the execution's data (its input and output)
    const withData = input.includedData !== 'METADATA_ONLY';
    const redrive = this.redriveState(e);
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
    const e = this.getExecution(input.executionArn);
    const started = this.historyOf(e).events[0];
    const definition = started && this.definitionTextOf(started);
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
    await this.persist();
    const ofMachine =
      input.stateMachineArn === undefined ? () => true : this.executionsOf(input.stateMachineArn);
    const redriven = input.redriveFilter;
    const all = [...this.executions.values()]
      .filter((e) => !e.express && ofMachine(e))
      .filter((e) => input.statusFilter === undefined || e.status === input.statusFilter)
      .filter((e) => redriven === undefined || (redriven === 'REDRIVEN') === e.redriveCount > 0)
      .sort((a, b) => b.startDate - a.startDate)
      .map((e) => ({
        executionArn: e.arn,
        stateMachineArn: e.machineArn,
        ...(e.versionArn ? { stateMachineVersionArn: e.versionArn } : {}),
        ...(e.aliasArn ? { stateMachineAliasArn: e.aliasArn } : {}),
        name: e.name,
        status: e.status,
        startDate: new Date(e.startDate),
        ...(e.stopDate === undefined ? {} : { stopDate: new Date(e.stopDate) }),
        redriveCount: e.redriveCount,
        ...(e.redriveDate === undefined ? {} : { redriveDate: new Date(e.redriveDate) }),
      }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { executions: page, ...(nextToken ? { nextToken } : {}) };
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
    await this.persist();
    const e = this.getExecution(input.executionArn);
    const events = this.historyOf(e).events;
    const limit = Math.min(Math.max(input.maxResults || 100, 1), 1000);
    const start = input.nextToken === undefined ? 0 : decodeToken(input.nextToken);
    const includeData = input.includeExecutionData !== false;
    const page: sfn.HistoryEvent[] = [];
    for (let i = start; i < events.length && page.length < limit; i++) {
      const event = input.reverseOrder ? events[events.length - 1 - i] : events[i];
      if (event) page.push(toHistoryEvent(event, includeData));
    }
    const next = start + page.length;
    return { events: page, ...(next < events.length ? { nextToken: encodeToken(next) } : {}) };
  }

  async stopExecution(input: sfn.StopExecutionInput): Promise<sfn.StopExecutionOutput> {
    const e = this.getExecution(input.executionArn);
    if (e.status !== 'RUNNING') {
      throw new SfnServiceError('ValidationException', `Execution is not running: '${e.arn}'`);
    }
    e.controller.abort({
      kind: 'stop',
      ...(input.error === undefined ? {} : { error: input.error }),
      ...(input.cause === undefined ? {} : { cause: input.cause }),
    } satisfies StopReason);
    await e.done;
    await this.persist();
    return { stopDate: new Date(e.stopDate ?? this.now()) };
  }

  async redriveExecution(input: sfn.RedriveExecutionInput): Promise<sfn.RedriveExecutionOutput> {
    const e = this.hydrated(this.getExecution(input.executionArn));
    const redrive = this.redriveState(e);
    if (redrive.status !== 'REDRIVABLE') {
      throw new SfnServiceError(
        'ExecutionNotRedrivable',
        `Execution is not redrivable: '${e.arn}'${redrive.reason ? ` (${redrive.reason})` : ''}`,
      );
    }
    e.redriveCount++;
    e.redriveDate = this.now();
    e.status = 'RUNNING';
    e.stopDate = undefined;
    e.error = undefined;
    e.cause = undefined;
    e.output = undefined;
    const journal = this.holdJournal(e);
    journal.record('!redrive', e.redriveCount, journal.length, 'ExecutionRedriven', {
      redriveCount: e.redriveCount,
    });
    journal.forgetFailedStates();
    this.launch(e);
    await this.persist();
    return { redriveDate: new Date(e.redriveDate) };
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
    await this.outcomeRecorded(waiter);
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
    await this.outcomeRecorded(waiter);
    return {};
  }

  async sendTaskHeartbeat(input: sfn.SendTaskHeartbeatInput): Promise<sfn.SendTaskHeartbeatOutput> {
    this.tokens.waiterFor(input.taskToken).heartbeat();
    return {};
  }

  // ---- tags -----------------------------------------------------------------------------------

  async tagResource(input: sfn.TagResourceInput): Promise<sfn.TagResourceOutput> {
    const tagged = this.taggable(input.resourceArn);
    tagged.tags = withTags(tagged.tags, input.tags, String(input.resourceArn));
    this.registry.save();
    return {};
  }

  async untagResource(input: sfn.UntagResourceInput): Promise<sfn.UntagResourceOutput> {
    const tagged = this.taggable(input.resourceArn);
    const removed = new Set(input.tagKeys ?? []);
    tagged.tags = (tagged.tags ?? []).filter((t) => !removed.has(t.key));
    this.registry.save();
    return {};
  }

  async listTagsForResource(input: sfn.ListTagsForResourceInput): Promise<sfn.ListTagsForResourceOutput> {
    return { tags: [...(this.taggable(input.resourceArn).tags ?? [])] };
  }

  /** The state machine or activity an ARN names (not a version or alias: AWS tags neither). */
  private taggable(resourceArn: unknown): MachineRecord | ActivityRecord {
    const arn = String(resourceArn);
    const notFound = () => new SfnServiceError('ResourceNotFound', `Resource not found: '${arn}'`);
    if (/^arn:[^:]*:states:[^:]*:[^:]*:activity:/.test(arn)) {
      const activity = this.registry.findActivity(parseActivityArn(this.scope, arn));
      if (!activity) throw notFound();
      return activity;
    }
    if (!/^arn:[^:]*:states:[^:]*:[^:]*:stateMachine:/.test(arn))
      throw new SfnServiceError('InvalidArn', `Invalid Arn: '${arn.slice(0, 200)}'`);
    const ref = parseStateMachineArn(this.scope, arn);
    const machine = this.registry.find(ref.name);
    if (!machine || ref.version !== undefined || ref.alias !== undefined) throw notFound();
    return machine;
  }

  // ---- activities -----------------------------------------------------------------------------

  async createActivity(input: sfn.CreateActivityInput): Promise<sfn.CreateActivityOutput> {
    assertValidName(input.name, 'Name');
    const arn = buildActivityArn(this.scope, input.name);
    const tags = withTags(undefined, input.tags, arn);
    const existing = this.registry.findActivity(input.name);
    if (existing) {
      // idempotent by name: different tags are ignored, a different encryption is refused (as AWS does)
      if (
        input.encryptionConfiguration !== undefined &&
        JSON.stringify(input.encryptionConfiguration) !== JSON.stringify(existing.encryptionConfiguration)
      ) {
        throw new SfnServiceError(
          'ActivityAlreadyExists',
          `Activity Already Exists: '${arn}' (its encryptionConfiguration cannot be changed)`,
        );
      }
      return { activityArn: arn, creationDate: new Date(existing.creationDate) };
    }
    if (this.registry.allActivities().length >= MAX_ACTIVITIES) {
      throw new SfnServiceError(
        'ActivityLimitExceeded',
        `The maximum number of activities (${MAX_ACTIVITIES}) has been reached`,
      );
    }
    const creationDate = this.now();
    this.registry.addActivity({
      name: input.name,
      arn,
      creationDate,
      ...(input.encryptionConfiguration ? { encryptionConfiguration: input.encryptionConfiguration } : {}),
      ...(tags.length > 0 ? { tags } : {}),
    });
    return { activityArn: arn, creationDate: new Date(creationDate) };
  }

  async describeActivity(input: sfn.DescribeActivityInput): Promise<sfn.DescribeActivityOutput> {
    const activity = this.getActivity(input.activityArn);
    return {
      activityArn: activity.arn,
      name: activity.name,
      creationDate: new Date(activity.creationDate),
      ...(activity.encryptionConfiguration
        ? { encryptionConfiguration: activity.encryptionConfiguration as sfn.EncryptionConfiguration }
        : {}),
    };
  }

  async listActivities(input: sfn.ListActivitiesInput): Promise<sfn.ListActivitiesOutput> {
    const all = this.registry
      .allActivities()
      .sort((a, b) => a.creationDate - b.creationDate)
      .map((a) => ({ activityArn: a.arn, name: a.name, creationDate: new Date(a.creationDate) }));
    const { page, nextToken } = paginate(all, input.maxResults, input.nextToken);
    return { activities: page, ...(nextToken ? { nextToken } : {}) };
  }

  async deleteActivity(input: sfn.DeleteActivityInput): Promise<sfn.DeleteActivityOutput> {
    this.registry.removeActivity(parseActivityArn(this.scope, input.activityArn));
    return {};
  }

  /**
   * A worker's long poll: the oldest task queued for the activity, else the first one scheduled
   * within the poll (`activityPollSeconds`), else `{}`. `signal` aborts when the worker hangs up,
   * so that no task goes to a worker that is gone.
   */
  async getActivityTask(
    input: sfn.GetActivityTaskInput,
    options?: { readonly signal?: AbortSignal },
  ): Promise<sfn.GetActivityTaskOutput> {
    const activity = this.getActivity(input.activityArn);
    if (this.closed) throw new SfnServiceError('ServiceUnavailable', 'The engine is shutting down', 503);
    const delivery = await this.activityQueues.poll(
      activity.arn,
      input.workerName,
      (this.options.activityPollSeconds ?? 60) * 1000,
      options?.signal,
    );
    // the token is only handed out once its ActivityStarted is as durable as promised
    if (delivery) await this.persist();
    return delivery ?? {};
  }

  /** Resolves once the execution has ended (or the engine closed); for tests, the CLI and child executions. */
  async awaitExecution(executionArn: string): Promise<sfn.DescribeExecutionOutput> {
    const e = this.getExecution(executionArn);
    while (e.status === 'RUNNING' && !this.closed) await e.done;
    return this.describeExecution({ executionArn });
  }

  // ---- internals ------------------------------------------------------------------------------

  private checkedDefinition(definition: unknown): string {
    if (typeof definition !== 'string')
      throw new SfnServiceError(
        'InvalidDefinition',
        'Invalid State Machine Definition: definition is required',
      );
    const problems = validateDefinition(definition);
    if (problems.length > 0) {
      const listed = problems.map((p) => `${p.code}: ${p.message} at ${p.location || '/'}`).join(', ');
      throw new SfnServiceError('InvalidDefinition', `Invalid State Machine Definition: '${listed}'`);
    }
    return definition;
  }

  private publish(machine: MachineRecord, description: string | undefined): number {
    const version = machine.nextVersion++;
    machine.versions.push({
      version,
      definition: machine.definition,
      roleArn: machine.roleArn,
      revisionId: machine.revisionId,
      creationDate: this.now(),
      ...(description ? { description } : {}),
    });
    return version;
  }

  private resolveVersion(machine: MachineRecord, ref: { version?: number; alias?: string }) {
    let number = ref.version;
    if (ref.alias !== undefined) {
      const alias = machine.aliases.find((a) => a.name === ref.alias);
      if (!alias)
        throw new SfnServiceError('ResourceNotFound', `Alias not found: '${machine.arn}:${ref.alias}'`);
      const roll = Math.random() * 100;
      let acc = 0;
      let chosen = alias.routingConfiguration[0]?.stateMachineVersionArn ?? '';
      for (const r of alias.routingConfiguration) {
        acc += r.weight;
        if (roll < acc) {
          chosen = r.stateMachineVersionArn;
          break;
        }
      }
      number = parseStateMachineArn(this.scope, chosen).version;
    }
    const version = machine.versions.find((v) => v.version === number);
    if (!version)
      throw new SfnServiceError('ResourceNotFound', `Version not found: '${machine.arn}:${number}'`);
    return version;
  }

  private checkedRouting(routing: sfn.RoutingConfigurationListItem[] | undefined) {
    if (!routing || routing.length < 1 || routing.length > 2) {
      throw new SfnServiceError('ValidationException', 'routingConfiguration must have 1 or 2 entries');
    }
    let total = 0;
    const out: Array<{ stateMachineVersionArn: string; weight: number }> = [];
    let machineName: string | undefined;
    for (const r of routing) {
      const ref = parseStateMachineArn(this.scope, r.stateMachineVersionArn);
      if (ref.version === undefined)
        throw new SfnServiceError('ValidationException', 'routingConfiguration needs version ARNs');
      if (machineName !== undefined && machineName !== ref.name) {
        throw new SfnServiceError(
          'ValidationException',
          'routingConfiguration versions must belong to one state machine',
        );
      }
      machineName = ref.name;
      const machine = this.registry.get(ref.name, String(r.stateMachineVersionArn));
      this.resolveVersion(machine, ref);
      const weight = Number(r.weight);
      if (!Number.isInteger(weight) || weight < 0 || weight > 100)
        throw new SfnServiceError('ValidationException', 'weight must be 0..100');
      total += weight;
      out.push({ stateMachineVersionArn: `${machine.arn}:${ref.version}`, weight });
    }
    if (total !== 100)
      throw new SfnServiceError('ValidationException', 'routingConfiguration weights must add up to 100');
    return out;
  }

  private findAlias(aliasArn: unknown) {
    const ref = parseStateMachineArn(this.scope, aliasArn);
    const machine = this.registry.find(ref.name);
    const alias = machine?.aliases.find((a) => a.name === ref.alias);
    if (!machine || !alias)
      throw new SfnServiceError('ResourceNotFound', `Alias not found: '${String(aliasArn)}'`);
    return { machine, alias };
  }

  private findActivity(arn: unknown): ActivityRecord | undefined {
    try {
      return this.registry.findActivity(parseActivityArn(this.scope, arn));
    } catch {
      return undefined; // not an activity ARN of this engine
    }
  }

  private getActivity(arn: unknown): ActivityRecord {
    const name = parseActivityArn(this.scope, arn);
    const activity = this.registry.findActivity(name);
    if (!activity)
      throw new SfnServiceError('ActivityDoesNotExist', `Activity Does Not Exist: '${String(arn)}'`);
    return activity;
  }

  private getExecution(arn: unknown): ExecutionRecord {
    const ref = parseExecutionArn(this.scope, arn);
    const e =
      this.executions.get(buildExecutionArn(this.scope, ref.machineName, ref.name)) ??
      this.executions.get(String(arn));
    if (!e) throw new SfnServiceError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return e;
  }

  /** Whether RedriveExecution may rerun the execution, and if not why, in AWS's words. */
  private redriveState(e: ExecutionRecord): { status: sfn.ExecutionRedriveStatus; reason?: string } {
    if (e.status === 'FAILED' || e.status === 'TIMED_OUT' || e.status === 'ABORTED')
      return e.express ? { status: 'NOT_REDRIVABLE' } : { status: 'REDRIVABLE' };
    return { status: 'NOT_REDRIVABLE', reason: `Execution is ${e.status} and cannot be redriven` };
  }

  /** Validates a start request, writes ExecutionStarted and starts the runner. */
  private beginExecution(input: sfn.StartExecutionInput, sync: boolean): ExecutionRecord {
    if (this.closed) throw new SfnServiceError('ServiceUnavailable', 'The engine is shutting down', 503);
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
      const version = this.resolveVersion(machine, ref);
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
    const existing = this.executions.get(arn);
    if (existing) {
      if (existing.status === 'RUNNING' && existing.input === inputText) return existing;
      throw new SfnServiceError('ExecutionAlreadyExists', `Execution Already Exists: '${arn}'`);
    }
    const log = express
      ? new MemoryStore().openLog(machine.name, name)
      : this.store.openLog(machine.name, name);
    const journal = this.newJournal(arn, log, []);
    const started = journal.root('').emit(
      'ExecutionStarted',
      {
        input: inputText,
        inputDetails: { truncated: false },
        roleArn,
        ...(versionArn ? { stateMachineVersionArn: versionArn } : {}),
        ...(aliasArn ? { stateMachineAliasArn: aliasArn } : {}),
      },
      {
        // EXPRESS histories live in memory only; durable ones refer to the definition the store keeps
        ...(express ? { definition: definitionText } : { definitionRef: this.definitionRef(definitionText) }),
        stateMachineArn: machine.arn,
        express,
        ...(testCase === undefined ? {} : { testCase }),
      },
    );
    const record = this.newRecord({
      arn,
      name,
      machineName: machine.name,
      machineArn: machine.arn,
      ...(versionArn ? { versionArn } : {}),
      ...(aliasArn ? { aliasArn } : {}),
      definition: this.definitions.parse(definitionText),
      input: inputText,
      startDate: started.ts,
      roleArn,
      ...(testCase === undefined ? {} : { testCase }),
      express,
      journal,
    });
    this.executions.set(arn, record);
    this.launch(record, mocks, parsedInput);
    return record;
  }

  private newRecord(
    fields: Omit<ExecutionRecord, 'status' | 'redriveCount' | 'controller' | 'done' | 'settle'>,
  ): ExecutionRecord {
    return {
      ...fields,
      status: 'RUNNING',
      redriveCount: 0,
      controller: new AbortController(),
      done: Promise.resolve(),
      settle: () => {},
    };
  }

  private newJournal(
    executionArn: string,
    log: ReturnType<EngineStore['openLog']>,
    stored: StoredEvent[],
  ): Journal {
    return new Journal({
      executionArn,
      log,
      stored,
      now: this.now,
      onDirty: (journal) => {
        this.dirty.add(journal);
        if (this.flushTimer === undefined) this.scheduleFlush();
      },
      persist: () => this.persist(),
      memoryOnly: this.options.storeDir === undefined,
    });
  }

  /** The store's reference to a definition, kept once per text. */
  private definitionRef(text: string): string {
    let ref = this.definitionRefs.get(text);
    if (ref === undefined) {
      if (this.definitionRefs.size >= 64) this.definitionRefs.clear();
      ref = this.store.putDefinition(text);
      this.definitionRefs.set(text, ref);
    }
    return ref;
  }

  /**
   * An execution's history: held while it runs; once a durable execution has finished, its
   * events are only weakly held (a long-lived engine does not keep every history in memory,
   * and the collector does not have to trace them) and reread from the store when needed.
   */
  private historyOf(e: ExecutionRecord): Journal {
    const held = e.journal ?? e.released?.deref();
    if (held) return held;
    const log = this.store.openLog(e.machineName, e.name);
    const journal = this.newJournal(e.arn, log, log.readAll());
    e.released = new WeakRef(journal);
    return journal;
  }

  /** The history, held again (the execution runs again). */
  private holdJournal(e: ExecutionRecord): Journal {
    const journal = this.historyOf(e);
    e.journal = journal;
    e.released = undefined;
    return journal;
  }

  /** Lets go of a finished execution's history when the store keeps it (not in memory, not EXPRESS). */
  private releaseJournal(e: ExecutionRecord): void {
    if (this.options.storeDir === undefined || e.express || !e.journal) return;
    e.released = new WeakRef(e.journal);
    e.journal = undefined;
  }

  /** Hands every pending event of every execution to the store and writes them with one `write(2)`. */
  private flushAll(): void {
    if (this.closed) return;
    for (const j of this.dirty) j.flush();
    this.dirty.clear();
    this.store.write();
  }

  /**
   * Events nobody waits for (pure transitions) are written within the group window, with
   * whatever write comes first: a durable engine does not write once per event-loop turn. In
   * memory they are handed to the store at the end of the turn.
   */
  private scheduleFlush(): void {
    if (this.options.storeDir === undefined) {
      this.flushTimer = setImmediate(() => this.flushOnTimer());
      return;
    }
    const timer = setTimeout(() => this.flushOnTimer(), this.options.syncWindowMs ?? DEFAULT_SYNC_WINDOW_MS);
    timer.unref();
    this.flushTimer = timer;
  }

  /**
   * The window's flush. A write in between (before a task call) leaves the timer armed: it writes
   * whatever was recorded since, sooner than a new window would, without a timer per task call.
   */
  private flushOnTimer(): void {
    this.flushTimer = undefined;
    this.flushAll();
  }

  /**
   * Before an effect outside the engine: every recorded event is written (kill -9 loses none);
   * with strict durability the returned promise resolves once they are on stable storage.
   */
  private persist(): Promise<void> | undefined {
    // in memory nothing outlives the process: events reach the store at the end of the turn
    if (this.options.storeDir === undefined) return undefined;
    this.flushAll();
    return this.strict ? this.store.durable() : undefined;
  }

  /**
   * After SendTaskSuccess/Failure handed an outcome to its task: the task records it within the
   * same turn (promise callbacks only); the answer waits for that event to be persisted.
   */
  private async outcomeRecorded(waiter: TokenWaiter): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    // usually the write before the next task call has taken the outcome along already
    if (waiter.outcomeHandedToLog?.() && !this.store.unwritten) {
      if (this.strict) await this.store.durable();
      return;
    }
    await this.persist();
  }

  /** Runs (or resumes) the interpreter for an execution until it ends or the engine closes. */
  private launch(e: ExecutionRecord, mocks?: MockedTestCase, parsedInput?: unknown): void {
    const journal = this.holdJournal(e);
    e.controller = new AbortController();
    e.done = new Promise<void>((resolve) => {
      e.settle = resolve;
    });
    const mocked =
      mocks ??
      (e.testCase === undefined
        ? undefined
        : MockedTestCase.select(this.mockConfig, e.machineName, e.testCase));
    const startedIso = new Date(e.startDate).toISOString();
    const rt: ExecutionRuntime = {
      executionArn: e.arn,
      stateMachineArn: e.versionArn ?? e.machineArn,
      region: this.scope.region,
      accountId: this.scope.accountId,
      journal,
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
      invokeResource: this.options.invokeResource,
      mocks: mocked,
      tokens: this.tokens,
      activities: this.activityDispatch,
      timeScale: this.timeScale,
      now: this.now,
      signal: e.controller.signal,
      startChildExecution: (parameters) => this.startChild(parameters),
      awaitChildExecution: (arn, signal) => this.awaitChild(arn, signal),
    };
    const root = journal.root('');
    root.skipPast(journal.eventAt(1)); // ExecutionStarted is always the first event
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
    if (typeof timeoutSeconds === 'number' && this.timeScale > 0) {
      const deadline = e.startDate + timeoutSeconds * 1000 * this.timeScale;
      timer = setTimeout(
        () => e.controller.abort({ kind: 'timeout' } satisfies StopReason),
        Math.max(0, deadline - this.now()),
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

  private fail(e: ExecutionRecord, root: ReturnType<Journal['root']>, error: unknown): void {
    const reason = e.controller.signal.reason as StopReason | undefined;
    if (reason?.kind === 'shutdown' || this.closed) return;
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
    root: ReturnType<Journal['root']>,
    type: string,
    details: Record<string, unknown>,
  ): void {
    if (this.closed) return;
    const journal = this.holdJournal(e);
    if (journal.length >= MAX_HISTORY_EVENTS && type === 'ExecutionSucceeded') {
      type = 'ExecutionFailed';
      details = {
        error: 'States.Runtime',
        cause: `The execution reached the maximum number of history events (${MAX_HISTORY_EVENTS}).`,
      };
    }
    const event = root.emit(type, details);
    this.applyTerminal(e, event);
    journal.close();
    if (!e.express) this.store.noteFinished(e.machineName, e.name, summaryOf(e));
    this.releaseJournal(e);
  }

  private applyTerminal(e: ExecutionRecord, event: StoredEvent): void {
    const status = TERMINAL[event.type];
    if (!status) return;
    e.status = status;
    e.stopDate = event.ts;
    const d = event.details ?? {};
    if (status === 'SUCCEEDED') e.output = String(d.output);
    if (typeof d.error === 'string') e.error = d.error;
    if (typeof d.cause === 'string') e.cause = d.cause;
  }

  /**
   * Rebuilds every stored execution: a finished one from its store summary when there is one
   * (its history is read only when asked for), any other from its history; running ones resume.
   */
  private resumeStoredExecutions(): void {
    const summaries = this.store.readSummaries();
    for (const { machineName, executionName } of this.store.listLogs()) {
      const summary = summaries.get(`${machineName}\t${executionName}`) as ExecutionSummary | undefined;
      if (summary) {
        this.executions.set(
          buildExecutionArn(this.scope, machineName, executionName),
          this.summarizedRecord(machineName, executionName, summary),
        );
        continue;
      }
      const log = this.store.openLog(machineName, executionName);
      const record = this.recordFromHistory(machineName, executionName, log.readAll(), log);
      if (!record) continue;
      this.executions.set(record.arn, record);
      const journal = record.journal as Journal;
      if (record.status === 'RUNNING') {
        for (const hash of waitingTokenHashes(journal)) this.tokens.expect(hash);
        this.launch(record);
      } else {
        // finished: its history is reread from the store when asked for, and a summary spares
        // the next restart from reading it
        record.journal = undefined;
        this.store.noteFinished(machineName, executionName, summaryOf(record));
      }
    }
  }

  /** An execution as its history tells it; undefined when it cannot run (no start, definition gone). */
  private recordFromHistory(
    machineName: string,
    executionName: string,
    events: StoredEvent[],
    log: ReturnType<EngineStore['openLog']>,
  ): ExecutionRecord | undefined {
    const first = events[0];
    if (first?.type !== 'ExecutionStarted') return undefined;
    const internal = first.internal ?? {};
    const details = first.details ?? {};
    const definitionText = this.definitionTextOf(first);
    if (definitionText === undefined) return undefined; // its definition is gone: nothing to run
    const arn = buildExecutionArn(this.scope, machineName, executionName);
    const journal = this.newJournal(arn, log, events);
    const testCase = typeof internal.testCase === 'string' ? internal.testCase : undefined;
    const record = this.newRecord({
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
      journal,
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
      } else if (TERMINAL[ev.type]) last = ev;
    }
    if (last) this.applyTerminal(record, last);
    return record;
  }

  /** The definition an execution ran, from its ExecutionStarted event (kept inline, or by reference in the store). */
  private definitionTextOf(started: StoredEvent): string | undefined {
    const internal = started.internal ?? {};
    return typeof internal.definition === 'string'
      ? internal.definition
      : this.store.getDefinition(String(internal.definitionRef));
  }

  /** A finished execution known from its summary; {@link hydrated} reads the rest when needed. */
  private summarizedRecord(
    machineName: string,
    executionName: string,
    summary: ExecutionSummary,
  ): ExecutionRecord {
    const record = this.newRecord({
      arn: buildExecutionArn(this.scope, machineName, executionName),
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
      journal: undefined,
    });
    record.status = summary.status;
    record.redriveCount = summary.redriveCount;
    if (summary.redriveDate !== undefined) record.redriveDate = summary.redriveDate;
    if (summary.stopDate !== undefined) record.stopDate = summary.stopDate;
    if (summary.error !== undefined) record.error = summary.error;
    if (summary.cause !== undefined) record.cause = summary.cause;
    return record;
  }

  /** The record with its input, output and definition, read from the history if it was summarized. */
  private hydrated(e: ExecutionRecord): ExecutionRecord {
    if (!e.summarized) return e;
    const journal = this.historyOf(e);
    const full = this.recordFromHistory(
      e.machineName,
      e.name,
      journal.events,
      this.store.openLog(e.machineName, e.name),
    );
    if (!full) throw new Error(`the history of ${e.arn} cannot be read`);
    e.definition = full.definition;
    e.input = full.input;
    if (full.output !== undefined) e.output = full.output;
    e.summarized = false;
    return e;
  }

  private async startChild(parameters: unknown): Promise<{ ExecutionArn: string; StartDate: Date }> {
    const p = (parameters ?? {}) as { StateMachineArn?: unknown; Input?: unknown; Name?: unknown };
    const input = typeof p.Input === 'string' ? p.Input : JSON.stringify(p.Input ?? {});
    try {
      const out = await this.startExecution({
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

  private async awaitChild(arn: string, signal: AbortSignal): Promise<Record<string, unknown>> {
    const e = this.getExecution(arn);
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
const START_EXECUTION_MODELED = new Set([
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

function summaryOf(e: ExecutionRecord): ExecutionSummary {
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
function waitingTokenHashes(journal: Journal): string[] {
  const hashes: string[] = [];
  for (const e of journal.events) {
    const hash = e.internal?.tokenHash;
    if (typeof hash !== 'string') continue;
    const dot = e.key.lastIndexOf('.');
    const seq = Number(e.key.slice(dot + 1));
    // a callback task: TaskScheduled (with the hash), Started, Submitted, then the outcome;
    // an activity: ActivityStarted (with the hash), then the outcome
    const outcome = seq + (e.type === 'ActivityStarted' ? 1 : 3);
    if (!journal.recorded(`${e.key.slice(0, dot)}.${outcome}`)) hashes.push(hash);
  }
  return hashes;
}

function encodeToken(index: number): string {
  return Buffer.from(`pg:${index}`).toString('base64url');
}

function decodeToken(token: string): number {
  const m = /^pg:(\d{1,9})$/.exec(Buffer.from(token, 'base64url').toString());
  if (!m) throw new SfnServiceError('InvalidToken', 'Invalid pagination token');
  return Number(m[1]);
}

function paginate<T>(all: T[], maxResults: number | undefined, nextToken: string | undefined) {
  const limit = Math.min(Math.max(maxResults || 100, 1), 1000);
  const start = nextToken === undefined ? 0 : decodeToken(nextToken);
  const page = all.slice(start, start + limit);
  const next = start + page.length;
  return { page, nextToken: next < all.length ? encodeToken(next) : undefined };
}

/** Creates an engine; `storeDir` defaults to `.plangate/engine` (pass `storeDir: undefined` explicitly for memory). */
export function createEngine(options: EngineOptions): Engine {
  const storeDir = 'storeDir' in options ? options.storeDir : '.plangate/engine';
  return new Engine({ ...options, ...(storeDir === undefined ? {} : { storeDir }) });
}

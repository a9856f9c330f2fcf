/**
 * The whole local stack of `plangate run` and `plangate serve`, in this process: dynalite and the
 * local event bus (lib/aws-local/data-plane.ts), the embedded engine durable in the store, its Step
 * Functions API on loopback, and the harness Lambdas (the same lambdas/ modules that run on AWS,
 * one per entry of the catalog that compiled machines call) wired into the engine's resource
 * invoker with SDK v3 clients pointed at the local endpoints. They log to the store's harness log,
 * as on AWS they log to CloudWatch.
 */
import { mkdir } from 'node:fs/promises';
import { basename } from 'node:path';
import { SFNClient } from '@aws-sdk/client-sfn';
import { makeHandler as makeClassifier } from '../../lambdas/classifier.ts';
import { makeHandler as makeContractChecker } from '../../lambdas/contract-checker.ts';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { makeHandler as makeJoin } from '../../lambdas/join.ts';
import { makeHandler as makeStepRunner } from '../../lambdas/step-runner.ts';
import { LOCAL_CREDENTIALS } from '../aws-local/clients.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../aws-local/data-plane.ts';
import { type EngineServer, startEngineServer } from '../engine/api/index.ts';
import { createEngine, type Engine } from '../engine/engine.ts';
import type { WriteSync } from '../engine/persistence/byte-writer.ts';
import {
  acquireProcessLock,
  LockHeldError,
  type LockRecord,
  type ProcessLock,
} from '../engine/persistence/process-lock.ts';
import type { StoreFault } from '../engine/persistence/store-faults.ts';
import { createResourceInvoker, LambdaHandlerRegistry } from '../engine/resources/index.ts';
import type { TaskInvocation } from '../engine/types.ts';
import { recoverPlanStarts } from '../launch/plan-start-recovery.ts';
import type { PolicySet } from '../policy/policy-set.ts';
import {
  HARNESS_HANDLERS,
  type HarnessHandlerName,
  STATE_MACHINE_HANDLERS,
  type StateMachineHandlerName,
} from '../runtime/catalog.ts';
import type { HarnessDeps } from '../runtime/deps.ts';
import type { ApprovalNotice, GateDeps } from '../runtime/gate/gate.ts';
import { approvalsFor } from '../runtime/gate/gate.ts';
import { Anchorer } from '../runtime/journal/anchorer.ts';
import { configureSandbox } from '../runtime/sandbox/sandbox.ts';
import { steadyClock } from '../runtime/shared/steady-clock.ts';
import type { Telemetry } from '../runtime/telemetry/telemetry.ts';
import { builtinRegistry } from '../runtime/tools/builtins.ts';
import { anchorKeyDir, loadAnchorKey } from './anchor-key.ts';
import { openDigestLog } from './digest-log.ts';
import { HarnessLog } from './harness-log.ts';
import { hiddenFromPlanCode } from './hidden-from-plan-code.ts';
import type { StorePaths } from './store-directory.ts';
import { probeStoreWrite } from './store-health.ts';

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';

/** A harness function's local name: `plangate-<module>`, e.g. `plangate-step-runner`. */
export function localFunctionName(handler: HarnessHandlerName): string {
  return `plangate-${basename(HARNESS_HANDLERS[handler].entry, '.ts')}`;
}

/** Each handler compiled machines call, over the stack's deps (each with its own telemetry). */
function stateMachineHandlers(
  deps: GateDeps,
  telemetry: (handler: HarnessHandlerName) => Telemetry,
): Record<StateMachineHandlerName, (event: unknown) => Promise<unknown>> {
  const own = <N extends StateMachineHandlerName>(handler: N) => ({ ...deps, telemetry: telemetry(handler) });
  const join = own('join');
  return {
    gate: makeGate(own('gate')),
    stepRunner: makeStepRunner(own('stepRunner')),
    contractChecker: makeContractChecker(own('contractChecker')),
    classifier: makeClassifier(own('classifier')),
    join: makeJoin({
      dynamo: join.dynamo,
      joinsTable: join.tables.joins,
      sfn: join.sfn,
      telemetry: join.telemetry,
    }),
  };
}

export interface LocalRunStackProps {
  readonly paths: StorePaths;
  /** Multiplies Wait, retry and gate-timeout durations. @default 1 */
  readonly timeScale?: number;
  /** Where shell tools and command contracts run. @default process.cwd() */
  readonly cwd?: string;
  /** The HMAC key the gate Lambda signs approval ids with. */
  readonly signingKey: Buffer;
  /** The gate Lambda's notifier: here, the run session's terminal and approval page. */
  readonly notify: (notice: ApprovalNotice) => Promise<void>;
  /** Who the gate Lambda tells of the timeout ladder's rejections and escalations (e.g. Slack). @default - nobody */
  readonly gateListeners?: Pick<GateDeps, 'onDecided' | 'onEscalated'>;
  /** The platform's policy every harness Lambda asks (`--policy DIR`). @default PolicySet.fromEnvironment() */
  readonly policy?: PolicySet;
  /** The run's planner, asked at escalations of failures no recipe covers. @default - none */
  readonly recoveryAdvisor?: GateDeps['recoveryAdvisor'];
  /** Who runs the plan's agent steps here (the run's own workers), for their gates. @default - what the plan says */
  readonly agentRunners?: GateDeps['agentRunners'];
  /** What holds the store, as another process's refusal names it. @default 'plangate' */
  readonly holder?: string;
  /** How the engine's write-ahead log is written. @default fs.writeSync (tests inject ENOSPC or EROFS here) */
  readonly storeWriteSync?: WriteSync;
}

/**
 * The store is held by another live process (`plangate serve`, `run` or `resume`): its message is
 * the one line a second process prints, naming the holder and the fix.
 */
export class StoreHeldError extends Error {
  override readonly name = 'StoreHeldError';
  constructor(
    readonly root: string,
    readonly holder: LockRecord,
  ) {
    super(
      `the store ${root} is held by process ${holder.pid} (${holder.holder}, since ${holder.since}); stop that process, or give this one another --store`,
    );
  }
}

export class LocalRunStack {
  private constructor(
    readonly data: LocalDataPlane,
    readonly engine: Engine,
    readonly engineServer: EngineServer,
    /** @aws-sdk/client-sfn against the engine's API: how the CLI and the handlers reach the engine. */
    readonly sfn: SFNClient,
    /** Where the handlers running in this process log (the store's logs/harness.jsonl). */
    readonly log: HarnessLog,
    /** Anchors the journal's heads in the store's digest log, signed with the key outside it. */
    readonly anchorer: Anchorer,
    private readonly lock: ProcessLock,
    /** The engine's clock, which gates' deadlines are measured on too (HarnessDeps.deadlineClock). */
    readonly deadlineClock: () => Date,
  ) {}

  /** The role local state machines are created with (the engine does not assume it). */
  static readonly ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/plangate-local`;

  /** The ARN the engine gives the state machine `name`. */
  static stateMachineArn(name: string): string {
    return `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}`;
  }

  /** The ARN the engine gives the activity `name` (CreateActivity answers the same). */
  static activityArn(name: string): string {
    return `arn:aws:states:${REGION}:${ACCOUNT}:activity:${name}`;
  }

  /** `${...}` substitutions for compiled definitions: local function ARNs. */
  static substitutions(): Record<string, string> {
    return Object.fromEntries(
      STATE_MACHINE_HANDLERS.map((handler) => [
        HARNESS_HANDLERS[handler].placeholder,
        `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${localFunctionName(handler)}`,
      ]),
    );
  }

  static async start(props: LocalRunStackProps): Promise<LocalRunStack> {
    const lock = await claimStore(props.paths, props.holder ?? 'plangate');
    try {
      return await LocalRunStack.startHolding(props, lock);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  private static async startHolding(props: LocalRunStackProps, lock: ProcessLock): Promise<LocalRunStack> {
    const keyDir = anchorKeyDir();
    // Plan code this stack runs: its workspace writable; this store (and every store) and the
    // anchor keys hidden, so no step can re-sign a rewritten journal.
    configureSandbox({
      workspace: props.cwd ?? process.cwd(),
      hidden: hiddenFromPlanCode(props.paths.root),
    });
    const anchorKey = await loadAnchorKey(keyDir, props.paths.root);
    const anchorer = new Anchorer({
      signer: anchorKey.signer,
      sink: await openDigestLog(props.paths, anchorKey.publicKeyPem),
    });
    const data = await startLocalDataPlane({ dataDir: props.paths.data });
    const log = HarnessLog.open(props.paths);
    // The engine resumes stored executions as soon as it exists, before its API server has a
    // URL for the handlers' SFN client: hold every task until the stack is wired.
    let release: () => void = () => {};
    const wired = new Promise<void>((resolve) => {
      release = resolve;
    });
    const registry = new LambdaHandlerRegistry({ region: REGION, accountId: ACCOUNT });
    const invoke = createResourceInvoker({
      lambdaHandlers: registry,
      dynamodb: data.clients.dynamo,
      eventBridge: data.clients.events,
      region: REGION,
      accountId: ACCOUNT,
    });
    // One clock that wall-clock steps do not move, for the engine's timers and the links of its
    // gates alike: a link lives as long as the engine waits on its gate.
    const clock = steadyClock();
    const deadlineClock = () => new Date(clock());
    let engine: Engine | undefined;
    let server: EngineServer | undefined;
    try {
      engine = createEngine({
        clock,
        storeDir: props.paths.engine,
        storeWriteSync: props.storeWriteSync,
        timeScale: props.timeScale ?? 1,
        region: REGION,
        accountId: ACCOUNT,
        invokeResource: async (invocation: TaskInvocation) => {
          await wired;
          return invokeWhileWritable(invoke, invocation, props.paths.root);
        },
      });
      // what the engine's start-up dropped (a torn last record of its log) is told, not silent
      for (const note of engine.storeRecoveryNotes()) {
        log.write(
          JSON.stringify({
            level: 'WARN',
            message: note,
            service: 'plangate-engine',
            timestamp: new Date().toISOString(),
          }),
        );
        process.stderr.write(`plangate: ${note}\n`);
      }
      server = await startEngineServer({ engine });
      const sfn = new SFNClient({ region: REGION, endpoint: server.url, credentials: LOCAL_CREDENTIALS });
      const deps: GateDeps = {
        dynamo: data.clients.doc,
        tables: data.tableNames,
        events: data.clients.events,
        sfn,
        tools: builtinRegistry(),
        cwd: props.cwd ?? process.cwd(),
        signingKey: props.signingKey,
        notify: props.notify,
        ...props.gateListeners,
        policy: props.policy,
        recoveryAdvisor: props.recoveryAdvisor,
        anchor: anchorer,
        agentRunners: props.agentRunners,
        deadlineClock,
      };
      const handlers = stateMachineHandlers(deps, (handler) => log.telemetry(handler));
      // The engine's stand-in Lambda context stays out of the logs: handlers run side by side here.
      for (const handler of STATE_MACHINE_HANDLERS)
        registry.register(localFunctionName(handler), (event) => handlers[handler](event));
      // Submissions a crash cut short (PLAN_CREATED journaled, the execution not started) are
      // started before any handler runs, so PLAN_START_RECOVERED follows PLAN_CREATED directly.
      await recoverPlanStarts({ ...deps, telemetry: log.telemetry('plansApi') });
      release();
      // Decisions a crash cut short (the gate answered, the machine not told) are finished first;
      // each is journaled (GATE_DECISION_RECOVERED).
      await approvalsFor(deps).deliverAllDecided();
      return new LocalRunStack(data, engine, server, sfn, log, anchorer, lock, deadlineClock);
    } catch (error) {
      await engine?.close();
      await server?.close();
      await data.close();
      log.close();
      throw error;
    }
  }

  /**
   * The journal's tables and bus on this stack, for the handler `telemetry` is of (its journal
   * events are logged and counted as that handler's).
   */
  journalDeps(
    telemetry?: HarnessHandlerName,
  ): Pick<HarnessDeps, 'dynamo' | 'tables' | 'events' | 'telemetry' | 'anchor' | 'deadlineClock'> {
    return {
      dynamo: this.data.clients.doc,
      tables: this.data.tableNames,
      events: this.data.clients.events,
      telemetry: telemetry ? this.log.telemetry(telemetry) : undefined,
      anchor: this.anchorer,
      deadlineClock: this.deadlineClock,
    };
  }

  /**
   * Stops everything; running executions stay in the store and resume on the next start. First
   * the engine drains: the harness Lambdas under way end (at most `drainMs`) and their outcomes
   * are recorded, so none is found interrupted on the restart (a gate would fail), and none is
   * left querying a closed data plane.
   */
  async close(
    options: {
      /** How long the harness Lambdas under way may take to end. @default 10000 */
      readonly drainMs?: number;
    } = {},
  ): Promise<void> {
    await this.engine.drain({ timeoutMs: options.drainMs });
    await this.engine.close();
    // Whatever the last batch left unanchored is anchored before the store is let go.
    await this.anchorer.flush();
    this.sfn.destroy();
    await this.engineServer.close();
    await this.data.close();
    this.log.close();
    this.lock.release();
  }
}

/**
 * A harness Lambda's call that failed while the store cannot be written (its journal write, or
 * the bus's, refused: disk full, read-only) is made again once it can, rather than failing the
 * step for it: the handlers are idempotent (at-least-once, as on AWS), and the engine's own
 * writes wait the same way. Any other failure is the call's outcome.
 */
export async function invokeWhileWritable(
  invoke: (invocation: TaskInvocation) => Promise<unknown>,
  invocation: TaskInvocation,
  root: string,
  probe: (root: string) => StoreFault | undefined = probeStoreWrite,
  retryMs = STORE_RETRY_MS,
): Promise<unknown> {
  for (;;) {
    try {
      return await invoke(invocation);
    } catch (error) {
      if (!probe(root)) throw error;
      while (probe(root)) {
        if (invocation.signal.aborted) throw error;
        await new Promise((resolve) => setTimeout(resolve, retryMs));
      }
    }
  }
}

/** How often a store that cannot be written is tried again. */
const STORE_RETRY_MS = 1000;

/**
 * Takes the store's lock before anything in it is opened: of many processes started on one store
 * at once, one holds it and every other gets a {@link StoreHeldError}; a lock left by a process
 * that is gone is taken over.
 */
export async function claimStore(paths: StorePaths, holder: string): Promise<ProcessLock> {
  await mkdir(paths.root, { recursive: true });
  try {
    return acquireProcessLock(paths.lock, { holder, sameProcess: 'share' });
  } catch (error) {
    if (error instanceof LockHeldError) throw new StoreHeldError(paths.root, error.holder);
    throw error;
  }
}

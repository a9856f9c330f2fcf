/**
 * The whole local stack of `plangate run`, in this process: dynalite and the local event bus
 * (lib/local/stack.ts), the embedded engine durable in the store, its Step Functions API on
 * loopback, and the harness Lambdas (the same lambdas/ modules that run on AWS) wired into the
 * engine's resource invoker with SDK v3 clients pointed at the local endpoints.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SFNClient } from '@aws-sdk/client-sfn';
import { PLACEHOLDERS } from '../../compiler/placeholders.ts';
import { type EngineServer, startEngineServer } from '../../engine/api/index.ts';
import { createEngine, type Engine } from '../../engine/engine.ts';
import { createResourceInvoker, LambdaHandlerRegistry } from '../../engine/resources/index.ts';
import type { LambdaHandler, TaskInvocation } from '../../engine/types.ts';
import type { PolicySet } from '../../policy/policy-set.ts';
import type { HarnessDeps } from '../../runtime/deps.ts';
import type { ApprovalNotice, GateDeps } from '../../runtime/gate/gate.ts';
import { builtinRegistry } from '../../runtime/tools/builtins.ts';
import { LOCAL_CREDENTIALS } from '../clients.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../stack.ts';
import type { StorePaths } from './store.ts';

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';

/** The harness functions compiled machines call: placeholder → handler module in lambdas/. */
export const HARNESS_FUNCTIONS = [
  { placeholder: PLACEHOLDERS.gate, name: 'plangate-gate', module: 'gate' },
  { placeholder: PLACEHOLDERS.stepRunner, name: 'plangate-step-runner', module: 'step-runner' },
  {
    placeholder: PLACEHOLDERS.contractChecker,
    name: 'plangate-contract-checker',
    module: 'contract-checker',
  },
  { placeholder: PLACEHOLDERS.classifier, name: 'plangate-classifier', module: 'classifier' },
  { placeholder: PLACEHOLDERS.join, name: 'plangate-join', module: 'join' },
] as const;

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
}

export class LocalRunStack {
  private constructor(
    readonly data: LocalDataPlane,
    readonly engine: Engine,
    readonly engineServer: EngineServer,
    /** @aws-sdk/client-sfn against the engine's API: how the CLI and the handlers reach the engine. */
    readonly sfn: SFNClient,
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
      HARNESS_FUNCTIONS.map((f) => [f.placeholder, `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${f.name}`]),
    );
  }

  static async start(props: LocalRunStackProps): Promise<LocalRunStack> {
    const data = await startLocalDataPlane({ dataDir: props.paths.data });
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
    let engine: Engine | undefined;
    let server: EngineServer | undefined;
    try {
      engine = createEngine({
        storeDir: props.paths.engine,
        timeScale: props.timeScale ?? 1,
        region: REGION,
        accountId: ACCOUNT,
        invokeResource: async (invocation: TaskInvocation) => {
          await wired;
          return invoke(invocation);
        },
      });
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
        ...(props.policy ? { policy: props.policy } : {}),
      };
      for (const fn of HARNESS_FUNCTIONS) registry.register(fn.name, await loadHandler(fn.module, deps));
      release();
      return new LocalRunStack(data, engine, server, sfn);
    } catch (error) {
      await engine?.close();
      await server?.close();
      await data.close();
      throw error;
    }
  }

  /** The journal's tables and bus on this stack. */
  journalDeps(): Pick<HarnessDeps, 'dynamo' | 'tables' | 'events'> {
    return { dynamo: this.data.clients.doc, tables: this.data.tableNames, events: this.data.clients.events };
  }

  /** Stops everything; running executions stay in the store and resume on the next start. */
  async close(): Promise<void> {
    await this.engine.close();
    this.sfn.destroy();
    await this.engineServer.close();
    await this.data.close();
  }
}

/**
 * A lambdas/ module's `makeHandler(deps)`: the handler AWS runs, built over local clients. The
 * module has this file's own extension: .ts under tsx, .js in the built CLI (dist/).
 */
async function loadHandler(module: string, deps: HarnessDeps): Promise<LambdaHandler> {
  const url = new URL(
    `../../../lambdas/${module}${extname(fileURLToPath(import.meta.url))}`,
    import.meta.url,
  );
  const loaded = (await import(url.href)) as { makeHandler?: (deps: HarnessDeps) => unknown };
  if (typeof loaded.makeHandler !== 'function')
    throw new Error(`lambdas/${module} does not export makeHandler(deps)`);
  return loaded.makeHandler(deps) as LambdaHandler;
}

/** What every harness function receives: its AWS clients and settings, injected (powertools style). */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SFNClient } from '@aws-sdk/client-sfn';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { PolicySet } from '../policy/policy-set.ts';
import type { JournalAnchor } from './journal/anchorer.ts';
import { Journal } from './journal/journal.ts';
import type { TableNames } from './journal/tables.ts';
import type { PlanIdentity } from './payloads/index.ts';
import { Redactor } from './secrets/redact.ts';
import { type SecretRef, SecretSource } from './secrets/secrets.ts';
import type { Telemetry } from './telemetry/telemetry.ts';
import type { ToolExecutorRegistry } from './tools/registry.ts';

export interface HarnessDeps {
  readonly dynamo: DynamoDBDocumentClient;
  readonly tables: TableNames;
  /** Without it events are stored but not published. */
  readonly events?: EventBridgeClient;
  /** @default 'default' */
  readonly eventBusName?: string;
  /** For the lambda tool, lambda contracts and Lambda-backed team tools. */
  readonly lambda?: LambdaClient;
  /** For gates and joins (SendTaskSuccess). */
  readonly sfn?: SFNClient;
  /** For `secretsmanager` secrets. */
  readonly secretsManager?: SecretsManagerClient;
  /** @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Working directory of process tools and command contracts. @default process.cwd() */
  readonly cwd?: string;
  readonly tools: ToolExecutorRegistry;
  /** Logs, metrics and traces of the handler (and of the journal's events). @default - none */
  readonly telemetry?: Telemetry;
  /** The platform's policy (lib/policy). @default PolicySet.fromEnvironment(env) */
  readonly policy?: PolicySet;
  /**
   * Anchors the journal's heads outside the table (locally; on AWS the events table's stream
   * feeds the anchor Lambda instead). @default - not anchored by this process
   */
  readonly anchor?: JournalAnchor;
  /**
   * What a gate's deadlines are measured on (its link's expiry, an approval page's session): the
   * engine's own clock, so a link never expires before the engine times its gate out
   * (lib/runtime/shared/steady-clock.ts). @default the wall clock
   */
  readonly deadlineClock?: () => Date;
}

/** The deps' policy, else the one their environment names (loaded once per process). */
export function policyFor(deps: Pick<HarnessDeps, 'policy' | 'env'>): Promise<PolicySet> {
  return deps.policy ? Promise.resolve(deps.policy) : PolicySet.fromEnvironment(deps.env ?? process.env);
}

/**
 * The deps of a harness Lambda on AWS (lambdas/default-deps.ts): every client is there. Locally
 * the stack leaves out what it does not run (no Lambda service, no Secrets Manager).
 */
export type HarnessDepsOnAws = HarnessDeps &
  Required<Pick<HarnessDeps, 'events' | 'eventBusName' | 'lambda' | 'sfn' | 'secretsManager' | 'telemetry'>>;

/** A journal over the deps, redacting `secretValues` on top of credential shapes. */
export function journalFor(
  deps: Pick<HarnessDeps, 'dynamo' | 'tables' | 'events' | 'eventBusName' | 'telemetry' | 'anchor'>,
  secretValues: Iterable<string> = [],
): Journal {
  return new Journal({
    dynamo: deps.dynamo,
    eventsTable: deps.tables.events,
    events: deps.events,
    ...(deps.eventBusName ? { eventBusName: deps.eventBusName } : {}),
    redactor: new Redactor(secretValues),
    ...(deps.telemetry ? { onAppended: deps.telemetry.journaled } : {}),
    ...(deps.anchor ? { anchor: deps.anchor } : {}),
  });
}

/**
 * Resolves the secrets a request declares (the plan's declarations travel in the payload; the
 * values are read from the environment or Secrets Manager only now).
 */
export function secretsFor(deps: HarnessDeps, declarations: readonly SecretRef[]): SecretSource {
  return new SecretSource({
    secrets: declarations,
    env: deps.env,
    secretsManager: deps.secretsManager,
  });
}

/** The identity fields of a journal event about one run (and, given `task`, one of its steps). */
export function eventIdentity(
  req: { readonly plan: PlanIdentity; readonly executionId: string },
  task?: { readonly id: string; readonly name?: string },
) {
  return {
    executionId: req.executionId,
    planId: req.plan.id,
    planVersion: req.plan.version,
    planDigest: req.plan.digest,
    ...(task ? { task_id: task.id } : {}),
    ...(task?.name !== undefined ? { task_name: task.name } : {}),
  };
}

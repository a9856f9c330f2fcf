/**
 * Read-only access to a store's journal for `status`, `events` and `audit`: through the running
 * session's DynamoDB endpoint when one holds the store, else dynalite opened on the store's data.
 * The engine is not started: reading must never resume (and so run) an execution. Nor does
 * reading create anything: a store without data or without an events table is reported, not made.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { DescribeTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { localClients } from '../aws-local/clients.ts';
import { startLocalDynamo } from '../aws-local/dynamo.ts';
import { peekStoredDefinitions } from '../engine/engine.ts';
import { readEvents } from '../runtime/journal/journal.ts';
import { DEFAULT_TABLE_NAMES } from '../runtime/journal/tables.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { type DefinitionReader, sfnDefinitionReader } from '../runtime/steps/integrity.ts';
import { liveSession, type StorePaths } from './store-directory.ts';

export interface StoreReader {
  readonly doc: DynamoDBDocumentClient;
  readonly eventsTable: string;
  /** The pid of the `plangate run`/`resume` holding the store, if one is running. */
  readonly livePid?: number;
  /**
   * The definitions the store's engine runs: asked of the running session's engine, else read
   * from the store's files (nothing is started or changed); absent when the store has no engine.
   */
  readonly definitions?: DefinitionReader;
  close(): Promise<void>;
}

/** The store has no journal to read (no data directory, or no events table in it). */
export class StoreNotFoundError extends Error {
  override readonly name = 'StoreNotFoundError';
}

/** Opens the store's journal for reading; throws {@link StoreNotFoundError} rather than create a store or a table. */
export async function openStoreReader(paths: StorePaths): Promise<StoreReader> {
  const session = await liveSession(paths);
  // startLocalDynamo would create the data directory: check it is there first.
  if (!session && !(await exists(join(paths.data, 'dynamodb')))) {
    throw new StoreNotFoundError(`no plangate store at ${paths.root}`);
  }
  const dynamo = session ? undefined : await startLocalDynamo({ dataDir: paths.data });
  const endpoint = session?.dynamoEndpoint ?? (dynamo?.endpoint as string);
  const clients = localClients({
    dynamoEndpoint: endpoint,
    eventsEndpoint: endpoint,
    ...(session ? { sfnEndpoint: session.sfnEndpoint } : {}),
  });
  const close = async () => {
    clients.destroy();
    await dynamo?.close();
  };
  const eventsTable = DEFAULT_TABLE_NAMES.events;
  try {
    await clients.dynamo.send(new DescribeTableCommand({ TableName: eventsTable }));
  } catch (error) {
    await close();
    if (error instanceof ResourceNotFoundException) {
      throw new StoreNotFoundError(`no events table in the plangate store at ${paths.root}`);
    }
    throw error;
  }
  const definitions = clients.sfn
    ? sfnDefinitionReader(clients.sfn)
    : (await exists(paths.engine))
      ? storedDefinitionReader(paths.engine)
      : undefined;
  return { doc: clients.doc, eventsTable, livePid: session?.pid, definitions, close };
}

/** A store's engine definitions read from its files (lib/engine's peek), by the ARNs Step Functions uses. */
function storedDefinitionReader(engineDir: string): DefinitionReader {
  const stored = peekStoredDefinitions(engineDir);
  const found = (text: string | undefined, arn: string): string => {
    if (text === undefined) throw new Error(`the store ${engineDir} holds no definition of ${arn}`);
    return text;
  };
  return {
    ofExecution: async (arn) => {
      const [, machine = '', name = ''] = /:execution:([^:]+):([^:]+)$/.exec(arn) ?? [];
      return found(stored.ofExecution(machine, name), arn);
    },
    ofMachine: async (arn) => {
      const [, machine = '', version = ''] = /:stateMachine:([^:]+):(\d+)$/.exec(arn) ?? [];
      return found(stored.ofVersion(machine, Number(version)), arn);
    },
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** One line of `plangate status`. */
export interface ExecutionSummary {
  readonly executionArn: string;
  readonly planId: string;
  readonly planVersion: number;
  readonly planDigest: string;
  readonly started: string;
  /** SUCCEEDED, FAILED, WAITING (a gate or escalation asks), RUNNING, or UNFINISHED (resume it). */
  readonly status: 'SUCCEEDED' | 'FAILED' | 'WAITING' | 'RUNNING' | 'UNFINISHED';
  readonly completed: number;
  readonly total: number;
  readonly lastEvent: string;
}

/** Summarises an execution from its journal alone. */
export function summarise(events: readonly JournalRecord[], live: boolean): ExecutionSummary | undefined {
  const first = events[0];
  const last = events.at(-1);
  if (!first || !last) return undefined;
  const total = Number((first.details as { task_count?: unknown }).task_count ?? 0);
  const completed = new Set(events.filter((e) => e.event === 'TASK_COMPLETED').map((e) => e.task_id)).size;
  const end = events.find((e) => e.event === 'EXECUTION_COMPLETE');
  const rejected = events.some((e) => e.event === 'GATE_REJECTED' && e.details.gate === 'plan');
  const waiting =
    last.event === 'GATE_APPROVAL_REQUESTED' ||
    (last.event === 'RECOVERY_ESCALATION' && last.details.user_decision === undefined);
  const status = end
    ? end.details.succeeded === true
      ? 'SUCCEEDED'
      : 'FAILED'
    : rejected
      ? 'FAILED'
      : waiting
        ? 'WAITING'
        : live
          ? 'RUNNING'
          : 'UNFINISHED';
  return {
    executionArn: first.executionId,
    planId: first.planId,
    planVersion: first.planVersion,
    planDigest: first.planDigest,
    started: first.timestamp,
    status,
    completed,
    total,
    lastEvent: last.event,
  };
}

/** Every execution in the store (those with a PLAN_CREATED, and that `shown` lets through), newest first. */
export async function listExecutions(
  reader: StoreReader,
  shown: (created: JournalRecord) => boolean = () => true,
): Promise<ExecutionSummary[]> {
  const { queryEvents } = await import('../runtime/journal/journal.ts');
  const created = await queryEvents(reader.doc, reader.eventsTable, {
    index: 'byEventType',
    value: 'PLAN_CREATED',
  });
  const summaries: ExecutionSummary[] = [];
  for (const c of created) {
    if (!shown(c)) continue;
    const events = await readEvents(reader.doc, reader.eventsTable, c.executionId);
    const summary = summarise(events, reader.livePid !== undefined);
    if (summary) summaries.push(summary);
  }
  return summaries.sort((a, b) => b.started.localeCompare(a.started));
}

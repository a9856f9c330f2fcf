/**
 * The DynamoDB tables, as plain data: the CDK stack and the local stack create the same tables
 * from these definitions. Every key is a string, so auditors can query with plain values.
 */
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { TABLE_NAME_ENV } from '../catalog.ts';

export interface KeyDefinition {
  readonly name: string;
  readonly type: 'S' | 'N';
}

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: KeyDefinition;
  readonly sortKey?: KeyDefinition;
  /** What auditors use the index for. */
  readonly purpose: string;
}

export interface TableDefinition {
  /** Stable id used by CDK construct ids and by `TableNames`. */
  readonly id: 'events' | 'gates' | 'joins' | 'outputs' | 'drafts' | 'versions' | 'plans';
  readonly partitionKey: KeyDefinition;
  readonly sortKey?: KeyDefinition;
  readonly globalSecondaryIndexes: readonly IndexDefinition[];
  /** Epoch-seconds attribute DynamoDB expires items by (set by CDK; dynalite has no TTL). */
  readonly timeToLiveAttribute?: string;
}

/** Zero-padding of the per-execution sequence number, so string sort keys sort numerically. */
export const SEQ_DIGITS = 12;

/**
 * The event journal: one item per event, written once (conditional put), never updated or deleted.
 * pk `executionId`, sk `sk` (the sequence number, zero-padded). Index attributes are only set
 * when they apply (`planTask` on task events, `approver` on votes and on decisions one person made),
 * so those indexes are sparse.
 */
export const EVENTS_TABLE: TableDefinition = {
  id: 'events',
  partitionKey: { name: 'executionId', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [
    {
      indexName: 'byPlan',
      partitionKey: { name: 'planId', type: 'S' },
      sortKey: { name: 'timestamp', type: 'S' },
      purpose: 'every event of a plan (all versions and executions) in time order',
    },
    {
      indexName: 'byEventType',
      partitionKey: { name: 'event', type: 'S' },
      sortKey: { name: 'timestamp', type: 'S' },
      purpose: 'events of one type (e.g. GATE_APPROVED) in a time range',
    },
    {
      indexName: 'byTask',
      partitionKey: { name: 'planTask', type: 'S' },
      sortKey: { name: 'timestamp', type: 'S' },
      purpose: 'the history of one step (`<planId>#<taskId>`) across executions',
    },
    {
      indexName: 'byApprover',
      partitionKey: { name: 'approver', type: 'S' },
      sortKey: { name: 'timestamp', type: 'S' },
      purpose: 'every vote and gate decision one person made alone',
    },
  ],
};

/**
 * Pending approvals: the task token stays here, server-side; links carry only the approval id.
 * pk `approvalId`. Answered gates keep their item (status + decisions) for audit.
 */
export const GATES_TABLE: TableDefinition = {
  id: 'gates',
  partitionKey: { name: 'approvalId', type: 'S' },
  globalSecondaryIndexes: [
    {
      indexName: 'byExecution',
      partitionKey: { name: 'executionId', type: 'S' },
      sortKey: { name: 'createdAt', type: 'S' },
      purpose: 'the gates of one execution (what is waiting for whom)',
    },
  ],
  timeToLiveAttribute: 'expiresAtEpoch',
};

/**
 * Exact joins across Parallel branches: one item per waiting step (`<executionId>#<stepId>`) holding
 * its task token and the signals received so far. Conditional updates make release happen once.
 */
export const JOINS_TABLE: TableDefinition = {
  id: 'joins',
  partitionKey: { name: 'joinKey', type: 'S' },
  globalSecondaryIndexes: [],
  timeToLiveAttribute: 'expiresAtEpoch',
};

/**
 * Step outputs too large to travel in the state payload (an OutputRef `dynamodb://<table>/<key>`
 * points here). Written once, read by later steps' runners and checkers.
 */
export const OUTPUTS_TABLE: TableDefinition = {
  id: 'outputs',
  partitionKey: { name: 'outputKey', type: 'S' },
  globalSecondaryIndexes: [],
  timeToLiveAttribute: 'expiresAtEpoch',
};

/**
 * Plans being drafted from a goal (`POST /plans {goal}`): one item per request, holding the goal,
 * who asked, each planning round's problems and, at the end, the execution it launched or why it
 * failed. Kept (no TTL): a goal that never became a valid plan has no execution, so this is its
 * only record.
 */
export const DRAFTS_TABLE: TableDefinition = {
  id: 'drafts',
  partitionKey: { name: 'draftId', type: 'S' },
  globalSecondaryIndexes: [],
};

/**
 * One content per plan version: an item per `<planId>#v<version>` holding the digest it was first
 * launched with, claimed by a conditional put, so two submissions of one id and version with
 * different content can never both be launched, however close together. Kept (no TTL).
 */
export const VERSIONS_TABLE: TableDefinition = {
  id: 'versions',
  partitionKey: { name: 'planVersion', type: 'S' },
  globalSecondaryIndexes: [],
};

/**
 * The plans submitted, whole, by digest (lib/runtime/journal/stored-plans.ts): the canonical JSON a
 * digest names, in parts of at most 300 KB (`part` zero-padded), written once at submission. The
 * approval page shows every command of a gate from it (the view compiled into the definition is cut
 * to fit Step Functions' limits), after checking that it still hashes to the gate's digest. Kept (no TTL).
 */
export const PLANS_TABLE: TableDefinition = {
  id: 'plans',
  partitionKey: { name: 'planDigest', type: 'S' },
  sortKey: { name: 'part', type: 'S' },
  globalSecondaryIndexes: [],
};

export const TABLES: readonly TableDefinition[] = [
  EVENTS_TABLE,
  GATES_TABLE,
  JOINS_TABLE,
  OUTPUTS_TABLE,
  DRAFTS_TABLE,
  VERSIONS_TABLE,
  PLANS_TABLE,
];

/** Physical table names, by definition id. */
export type TableNames = Readonly<Record<TableDefinition['id'], string>>;

/** Default physical names (local mode; CDK passes its own through the environment). */
export const DEFAULT_TABLE_NAMES: TableNames = {
  events: 'plangate-events',
  gates: 'plangate-gates',
  joins: 'plangate-joins',
  outputs: 'plangate-outputs',
  drafts: 'plangate-drafts',
  versions: 'plangate-versions',
  plans: 'plangate-plans',
};

/** Table names from the environment (the catalog's TABLE_NAME_ENV), falling back to the defaults. */
export function tableNamesFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): TableNames {
  const names: Record<string, string> = {};
  for (const def of TABLES) names[def.id] = env[TABLE_NAME_ENV[def.id]] ?? DEFAULT_TABLE_NAMES[def.id];
  return names as TableNames;
}

/** The CreateTable request for a definition (on-demand billing, every index projecting all attributes). */
export function createTableInput(def: TableDefinition, tableName: string): CreateTableCommandInput {
  const keys = [
    def.partitionKey,
    def.sortKey,
    ...def.globalSecondaryIndexes.flatMap((i) => [i.partitionKey, i.sortKey]),
  ];
  const attributes = new Map<string, KeyDefinition>();
  for (const key of keys) if (key) attributes.set(key.name, key);
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes.values()].map((k) => ({
      AttributeName: k.name,
      AttributeType: k.type,
    })),
    KeySchema: [
      { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
      ...(def.sortKey ? [{ AttributeName: def.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
    ...(def.globalSecondaryIndexes.length > 0
      ? {
          GlobalSecondaryIndexes: def.globalSecondaryIndexes.map((i) => ({
            IndexName: i.indexName,
            KeySchema: [
              { AttributeName: i.partitionKey.name, KeyType: 'HASH' as const },
              ...(i.sortKey ? [{ AttributeName: i.sortKey.name, KeyType: 'RANGE' as const }] : []),
            ],
            Projection: { ProjectionType: 'ALL' as const },
          })),
        }
      : {}),
  };
}

/** Creates any missing table and waits until every table is ACTIVE. Safe to call concurrently and repeatedly. */
export async function ensureTables(
  client: DynamoDBClient,
  names: TableNames = DEFAULT_TABLE_NAMES,
): Promise<void> {
  await Promise.all(
    TABLES.map(async (def) => {
      const tableName = names[def.id];
      try {
        await client.send(new DescribeTableCommand({ TableName: tableName }));
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
        try {
          await client.send(new CreateTableCommand(createTableInput(def, tableName)));
        } catch (createError) {
          if (!(createError instanceof ResourceInUseException)) throw createError;
        }
      }
      await waitActive(client, tableName);
    }),
  );
}

async function waitActive(client: DynamoDBClient, tableName: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const out = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesReady = (out.Table?.GlobalSecondaryIndexes ?? []).every((i) => i.IndexStatus === 'ACTIVE');
    if (out.Table?.TableStatus === 'ACTIVE' && indexesReady) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

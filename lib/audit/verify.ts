/**
 * Verifies executions' stored events: every problem is reported with its execution and sequence
 * number, not just the first. Checks each item's shape, its key against its record, its content
 * against its hash, its link to the event before it (telling a reordering and a copy from
 * another execution apart from a plain break), gaps in the sequence, and the index attributes
 * the auditor queries by (a changed `approver` would hide a decision from `--approver`).
 */
import { type DynamoDBDocumentClient, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  formatSeq,
  fromItem,
  GENESIS_HASH,
  hashEvent,
  indexAttributes,
  queryItems,
} from '../runtime/journal/journal.ts';
import { type JournalRecord, JournalRecordSchema } from '../runtime/payloads/index.ts';

export const PROBLEM_KINDS = [
  /** Sequence numbers missing between two stored events (deleted events). */
  'gap',
  /** The content no longer matches its hash. */
  'edited',
  /** The event links to another event of the execution than the one stored before it. */
  'reordered',
  /** The event is a copy of another execution's event. */
  'foreign',
  /** The event's link to the one before it is wrong for no reason the others explain. */
  'broken-link',
  /** The item's key and its record's `seq` disagree. */
  'key-mismatch',
  /** An index attribute (`planTask`, `approver`) disagrees with the record it indexes. */
  'index-mismatch',
  /** The item is not a journal record at all. */
  'malformed',
] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

export interface ChainProblem {
  readonly executionId: string;
  /** The stored item's sequence number (from its key), or for a gap the first missing one. */
  readonly seq: number | undefined;
  readonly kind: ProblemKind;
  readonly message: string;
}

export interface ExecutionVerdict {
  readonly executionId: string;
  readonly count: number;
  /** The last event's hash: keep it to detect later truncation of the tail. */
  readonly head: string | undefined;
  readonly problems: readonly ChainProblem[];
}

/** Where a copied event came from, when it can be found. */
export type FindOriginal = (
  record: JournalRecord,
) => Promise<{ readonly executionId: string; readonly seq: number } | undefined>;

export interface CheckOptions {
  /** Asked about events whose hash does not match their content, to tell a copy from another execution from an edit. */
  readonly findOriginal?: FindOriginal;
  /**
   * Whether the items carry the table's index attributes to check (an export's records do not).
   * @default true
   */
  readonly indexAttributes?: boolean;
}

/** Checks one execution's raw items (records with their `sk` key), in key order. */
export async function checkExecution(
  executionId: string,
  items: readonly Record<string, unknown>[],
  options: CheckOptions = {},
): Promise<ExecutionVerdict> {
  const findOriginal = options.findOriginal ?? (async () => undefined);
  const problems: ChainProblem[] = [];
  const report = (seq: number | undefined, kind: ProblemKind, message: string) =>
    problems.push({ executionId, seq, kind, message: `seq ${seq ?? '?'}: ${message}` });
  const entries = items.map((item) => ({
    item,
    keySeq: typeof item.sk === 'string' && /^\d+$/.test(item.sk) ? Number(item.sk) : undefined,
    parsed: JournalRecordSchema.safeParse(fromItem(item)),
  }));
  const seqOfHash = new Map<string, number>();
  for (const { keySeq, parsed } of entries) {
    if (parsed.success && keySeq !== undefined) seqOfHash.set(parsed.data.hash, keySeq);
  }
  const planId = entries.find((e) => e.parsed.success)?.item.planId;
  let previous: { seq: number; hash: string } | undefined;
  let expected = 1;
  for (const { item, keySeq, parsed } of entries) {
    const seq = keySeq;
    if (seq === undefined) {
      report(undefined, 'malformed', `item key ${JSON.stringify(item.sk)} is not a sequence number`);
      continue;
    }
    if (seq > expected) {
      report(
        expected,
        'gap',
        seq - expected === 1
          ? `missing (the next stored event is seq ${seq})`
          : `seq ${expected}..${seq - 1} are missing (the next stored event is seq ${seq})`,
      );
    }
    const afterGap = seq > expected;
    expected = seq + 1;
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      report(
        seq,
        'malformed',
        `${issue?.path.join('.') || 'record'}: ${issue?.message ?? 'not a journal record'}`,
      );
      previous = undefined;
      continue;
    }
    const record = parsed.data;
    if (formatSeq(record.seq) !== item.sk) {
      report(seq, 'key-mismatch', `the record says seq ${record.seq} but is stored under seq ${seq}`);
    }
    const contentIntact = hashEvent(record.prevHash, record) === record.hash;
    if (!contentIntact) {
      const original = await findOriginal(record);
      if (original && original.executionId !== executionId) {
        report(seq, 'foreign', `a copy of execution ${original.executionId}'s event seq ${original.seq}`);
      } else {
        report(seq, 'edited', `${record.event}: content does not match its hash`);
      }
    } else if (record.planId !== planId) {
      report(
        seq,
        'foreign',
        `${record.event} belongs to plan ${record.planId}, the execution runs ${planId}`,
      );
    }
    const expectedPrev = seq === 1 ? GENESIS_HASH : previous?.seq === seq - 1 ? previous.hash : undefined;
    if (contentIntact && expectedPrev !== undefined && record.prevHash !== expectedPrev) {
      const follows = record.prevHash === GENESIS_HASH ? 0 : seqOfHash.get(record.prevHash);
      if (follows !== undefined) {
        report(
          seq,
          'reordered',
          follows === 0
            ? `${record.event} is the execution's first event but is stored at seq ${seq}`
            : `${record.event} follows the event stored at seq ${follows}, not seq ${seq - 1}`,
        );
      } else if (!afterGap) {
        report(
          seq,
          'broken-link',
          `${record.event}: prevHash is not seq ${seq - 1}'s hash nor any other event's (seq ${seq - 1} rehashed, or this link edited)`,
        );
      }
    }
    if (options.indexAttributes ?? true) {
      checkIndexAttributes(item, record, (message) => report(seq, 'index-mismatch', message));
    }
    previous = { seq, hash: record.hash };
  }
  const last = entries.at(-1)?.parsed;
  return {
    executionId,
    count: items.length,
    head: last?.success ? last.data.hash : undefined,
    problems,
  };
}

function checkIndexAttributes(
  item: Record<string, unknown>,
  record: JournalRecord,
  report: (message: string) => void,
): void {
  const { planTask, approver } = indexAttributes(record);
  if (item.planTask !== planTask) {
    report(
      `index attribute planTask is ${JSON.stringify(item.planTask)}, the record says ${JSON.stringify(planTask)}`,
    );
  }
  if (item.approver !== approver) {
    report(
      `index attribute approver is ${JSON.stringify(item.approver)}, the record says ${JSON.stringify(approver)}`,
    );
  }
}

/** One execution's raw items in key order (consistent reads, paginated). */
export async function readExecutionItems(
  doc: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for await (const item of queryItems(doc, {
    TableName: table,
    KeyConditionExpression: 'executionId = :e',
    ExpressionAttributeValues: { ':e': executionId },
    ConsistentRead: true,
  }))
    items.push(item);
  return items;
}

/**
 * Finds the stored event a suspect copy came from: same plan and timestamp (the byPlan index's
 * key) and the same hash, in another execution.
 */
export function originalFinder(doc: DynamoDBDocumentClient, table: string): FindOriginal {
  return async (record) => {
    const out = await doc.send(
      new QueryCommand({
        TableName: table,
        IndexName: 'byPlan',
        KeyConditionExpression: 'planId = :p AND #t = :t',
        FilterExpression: '#h = :h AND executionId <> :e',
        ExpressionAttributeNames: { '#t': 'timestamp', '#h': 'hash' },
        ExpressionAttributeValues: {
          ':p': record.planId,
          ':t': record.timestamp,
          ':h': record.hash,
          ':e': record.executionId,
        },
      }),
    );
    const original = out.Items?.[0];
    return original ? { executionId: String(original.executionId), seq: Number(original.seq) } : undefined;
  };
}

export async function verifyExecution(
  doc: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<ExecutionVerdict> {
  const items = await readExecutionItems(doc, table, executionId);
  return checkExecution(executionId, items, { findOriginal: originalFinder(doc, table) });
}

/**
 * Every execution id in the table, sorted. A keys-only Scan: the one listing no index serves
 * (PLAN_CREATED events would miss an execution whose first event was deleted).
 */
export async function listExecutionIds(doc: DynamoDBDocumentClient, table: string): Promise<string[]> {
  const ids = new Set<string>();
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new ScanCommand({
        TableName: table,
        ProjectionExpression: 'executionId',
        ExclusiveStartKey: start,
      }),
    );
    for (const item of out.Items ?? []) ids.add(String(item.executionId));
    start = out.LastEvaluatedKey;
  } while (start);
  return [...ids].sort();
}

/** Verifies the given executions, or every execution in the table; one verdict each, in order. */
export async function* verifyExecutions(
  doc: DynamoDBDocumentClient,
  table: string,
  executionIds?: readonly string[],
): AsyncGenerator<ExecutionVerdict> {
  for (const id of executionIds ?? (await listExecutionIds(doc, table))) {
    yield await verifyExecution(doc, table, id);
  }
}

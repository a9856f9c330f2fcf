/**
 * Verifies executions' stored events: every problem is reported with its execution and sequence
 * number, not just the first; then the execution checks (execution-checks.ts: what ran is what
 * was approved). The checks are the journal's one chain check
 * (lib/runtime/journal/chain.ts); here the items are read from the table, and an event whose
 * hash does not match is looked up on the `byPlan` index to tell a copy of another execution's
 * event from an edit.
 */
import { type DynamoDBDocumentClient, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  type ChainCheckOptions,
  type ChainProblem,
  chainHead,
  chainProblems,
} from '../runtime/journal/chain.ts';
import { queryItems } from '../runtime/journal/journal.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import type { DefinitionReader } from '../runtime/steps/integrity.ts';
import { type ExecutionCheckProblem, executionCheckProblems } from './execution-checks.ts';

export interface ExecutionVerdict {
  readonly executionId: string;
  readonly count: number;
  /** The last event's hash: keep it to detect later truncation of the tail. */
  readonly head: string | undefined;
  readonly problems: readonly ChainProblem[];
  /** What the execution checks (execution-checks.ts) found: what ran is not what was approved. */
  readonly checks: readonly ExecutionCheckProblem[];
}

/** Where a copied event came from, when it can be found. */
export type FindOriginal = (
  record: JournalRecord,
) => Promise<{ readonly executionId: string; readonly seq: number } | undefined>;

export interface CheckOptions extends ChainCheckOptions {
  /** Asked about events whose hash does not match their content, to tell a copy from another execution from an edit. */
  readonly findOriginal?: FindOriginal;
  /** The engine's definitions, for the check that it runs the approved one. @default - not checked */
  readonly definitions?: DefinitionReader;
}

/**
 * Checks one execution's raw items (records with their `sk` key), in key order: every problem
 * the chain check finds, an edited event told apart from a copy of another execution's.
 */
export async function checkExecution(
  executionId: string,
  items: readonly Record<string, unknown>[],
  options: CheckOptions = {},
): Promise<ExecutionVerdict> {
  const problems: ChainProblem[] = [];
  for (const { record, problem } of chainProblems(executionId, items, options)) {
    const original =
      problem.kind === 'edited' && record && options.findOriginal
        ? await options.findOriginal(record)
        : undefined;
    problems.push(
      original && original.executionId !== executionId
        ? {
            executionId,
            seq: problem.seq,
            kind: 'foreign',
            message: `seq ${problem.seq ?? '?'}: a copy of execution ${original.executionId}'s event seq ${original.seq}`,
          }
        : problem,
    );
  }
  const checks = await executionCheckProblems(executionId, items, options.definitions);
  return { executionId, count: items.length, head: chainHead(items), problems, checks };
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
  definitions?: DefinitionReader,
): Promise<ExecutionVerdict> {
  const items = await readExecutionItems(doc, table, executionId);
  return checkExecution(executionId, items, { findOriginal: originalFinder(doc, table), definitions });
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
  definitions?: DefinitionReader,
): AsyncGenerator<ExecutionVerdict> {
  for (const id of executionIds ?? (await listExecutionIds(doc, table))) {
    yield await verifyExecution(doc, table, id, definitions);
  }
}

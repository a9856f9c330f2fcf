/**
 * Streams the events matching an auditor's filter, page by page, from any DynamoDB the document
 * client reaches (AWS or the local dynalite): memory stays one page however large the table.
 */
import { type DynamoDBDocumentClient, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { fromItem } from '../runtime/journal/journal.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { type AccessPlan, type AuditFilter, accessPlan } from './filter.ts';

export interface AuditQueryOptions {
  /** Stop after this many events. */
  readonly limit?: number;
  /**
   * Items DynamoDB evaluates per request.
   * @default 500
   */
  readonly pageSize?: number;
}

/** Every raw item matching `filter`, in the access plan's order. */
export async function* auditItems(
  doc: DynamoDBDocumentClient,
  table: string,
  filter: AuditFilter,
  options: AuditQueryOptions = {},
): AsyncGenerator<Record<string, unknown>> {
  const plan = accessPlan(table, filter);
  const pageSize = options.pageSize ?? 500;
  const items =
    plan.kind === 'query' && plan.shared
      ? inTimeOrder(
          requestItems(doc, plan, pageSize),
          requestItems(doc, { kind: 'query', input: plan.shared }, pageSize),
        )
      : requestItems(doc, plan, pageSize, options.limit);
  let remaining = options.limit ?? Number.POSITIVE_INFINITY;
  for await (const item of items) {
    if (remaining-- <= 0) return;
    yield item;
  }
}

/** The items one Query or Scan returns, page after page (at most `limit` when given). */
async function* requestItems(
  doc: DynamoDBDocumentClient,
  request: Pick<AccessPlan, 'kind' | 'input'>,
  pageSize: number,
  limit = Number.POSITIVE_INFINITY,
): AsyncGenerator<Record<string, unknown>> {
  let remaining = limit;
  let start: Record<string, unknown> | undefined;
  do {
    if (remaining <= 0) return;
    // With a filter, Limit counts items evaluated, not returned, so only an unfiltered read can shrink its page.
    const page = request.input.FilterExpression ? pageSize : Math.min(pageSize, remaining);
    const out =
      request.kind === 'query'
        ? await doc.send(new QueryCommand({ ...request.input, Limit: page, ExclusiveStartKey: start }))
        : await doc.send(new ScanCommand({ ...request.input, Limit: page, ExclusiveStartKey: start }));
    for (const item of out.Items ?? []) {
      if (remaining-- <= 0) return;
      yield item;
    }
    start = out.LastEvaluatedKey;
  } while (start);
}

/** Two streams in time order (index sort keys) as one, in time order (then execution, then sequence). */
async function* inTimeOrder(
  a: AsyncGenerator<Record<string, unknown>>,
  b: AsyncGenerator<Record<string, unknown>>,
): AsyncGenerator<Record<string, unknown>> {
  let x = await a.next();
  let y = await b.next();
  while (!x.done || !y.done) {
    if (y.done || (!x.done && orderKey(x.value) <= orderKey(y.value))) {
      yield x.value;
      x = await a.next();
    } else {
      yield y.value;
      y = await b.next();
    }
  }
}

const orderKey = (item: Record<string, unknown>): string =>
  `${String(item.timestamp)}\0${String(item.executionId)}\0${String(item.sk)}`;

/** Every journal record matching `filter`. */
export async function* auditEvents(
  doc: DynamoDBDocumentClient,
  table: string,
  filter: AuditFilter,
  options: AuditQueryOptions = {},
): AsyncGenerator<JournalRecord> {
  for await (const item of auditItems(doc, table, filter, options)) yield fromItem(item);
}

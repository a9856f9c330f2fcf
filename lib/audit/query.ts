/**
 * Streams the events matching an auditor's filter, page by page, from any DynamoDB the document
 * client reaches (AWS or the local dynalite): memory stays one page however large the table.
 */
import { type DynamoDBDocumentClient, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { fromItem } from '../runtime/journal/journal.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { type AuditFilter, accessPlan } from './filter.ts';

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
  let remaining = options.limit ?? Number.POSITIVE_INFINITY;
  let start: Record<string, unknown> | undefined;
  do {
    if (remaining <= 0) return;
    // With a filter, Limit counts items evaluated, not returned, so only an unfiltered read can shrink its page.
    const limit = plan.input.FilterExpression ? pageSize : Math.min(pageSize, remaining);
    const out =
      plan.kind === 'query'
        ? await doc.send(new QueryCommand({ ...plan.input, Limit: limit, ExclusiveStartKey: start }))
        : await doc.send(new ScanCommand({ ...plan.input, Limit: limit, ExclusiveStartKey: start }));
    for (const item of out.Items ?? []) {
      if (remaining-- <= 0) return;
      yield item;
    }
    start = out.LastEvaluatedKey;
  } while (start);
}

/** Every journal record matching `filter`. */
export async function* auditEvents(
  doc: DynamoDBDocumentClient,
  table: string,
  filter: AuditFilter,
  options: AuditQueryOptions = {},
): AsyncGenerator<JournalRecord> {
  for await (const item of auditItems(doc, table, filter, options)) yield fromItem(item);
}

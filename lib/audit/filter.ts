/**
 * What an auditor asks for, and how the events table answers it: the most selective key given
 * picks the table key or a GSI (a Query), the other selectors become server-side filters, and
 * the time range goes on the index's sort key. Only a filter with no selector at all is a Scan.
 */
import type { QueryCommandInput, ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { EVENTS_TABLE } from '../runtime/journal/tables.ts';
import { EventTypeSchema } from '../runtime/payloads/index.ts';

/** An ISO 8601 time, normalised to the journal's form (UTC, milliseconds) so string order is time order. */
const IsoTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/, {
    message: 'expected an ISO 8601 date or time, e.g. 2025-01-31 or 2025-01-31T12:00:00Z',
  })
  .transform((text, ctx) => {
    // A time without a zone is read as UTC: the journal stores UTC.
    const zoned = /T/.test(text) && !/(Z|[+-]\d{2}:\d{2})$/.test(text) ? `${text}Z` : text;
    const date = new Date(zoned);
    const [y, m, d] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
    const day = new Date(Date.UTC(y, m - 1, d));
    // Date rolls 2025-02-30 over to March: a day the month does not have is an error, not a guess.
    if (Number.isNaN(date.getTime()) || day.getUTCMonth() !== m - 1 || day.getUTCDate() !== d) {
      ctx.addIssue({ code: 'custom', message: `not a real date/time: ${text}` });
      return z.NEVER;
    }
    return date.toISOString();
  });

export const AuditFilterSchema = z
  .object({
    /** An execution ARN: the table's own partition key. */
    execution: z.string().min(1).optional(),
    plan: z.string().min(1).optional(),
    type: EventTypeSchema.optional(),
    /** `<planId>#<taskId>`. */
    task: z
      .string()
      .regex(/^[^#]+#[^#]+$/, { message: 'expected <planId>#<taskId>, e.g. deploy#build' })
      .optional(),
    approver: z.string().min(1).optional(),
    /** Inclusive lower bound on the event timestamp. */
    since: IsoTime.optional(),
    /** Inclusive upper bound on the event timestamp. */
    until: IsoTime.optional(),
  })
  .strict()
  .refine((f) => !f.since || !f.until || f.since <= f.until, {
    message: '--since is after --until',
    path: ['since'],
  });
export type AuditFilter = z.infer<typeof AuditFilterSchema>;
export type AuditFilterInput = z.input<typeof AuditFilterSchema>;

type Selector = 'execution' | 'task' | 'approver' | 'plan' | 'type';

/** Each selector's stored attribute and the key that serves it, most selective first. */
const SELECTORS: readonly { selector: Selector; attribute: string; index?: string }[] = [
  { selector: 'execution', attribute: EVENTS_TABLE.partitionKey.name },
  { selector: 'task', attribute: 'planTask', index: 'byTask' },
  { selector: 'approver', attribute: 'approver', index: 'byApprover' },
  { selector: 'plan', attribute: 'planId', index: 'byPlan' },
  { selector: 'type', attribute: 'event', index: 'byEventType' },
];

/**
 * How a filter is read from the table: one request, paginated by the caller; by approver, also
 * `shared`: the decisions they made with others (GATE_APPROVED by a quorum names every approver
 * but, an index key holding one value, is not on index byApprover), merged in time order.
 */
export type AccessPlan =
  | {
      readonly kind: 'query';
      readonly input: QueryCommandInput;
      readonly explain: string;
      readonly shared?: QueryCommandInput;
    }
  | { readonly kind: 'scan'; readonly input: ScanCommandInput; readonly explain: string };

/** The event whose `approvers` can name several people. */
const SHARED_DECISION = 'GATE_APPROVED';

/**
 * The request answering `filter` on `table`. Results come in sequence order (execution), in
 * timestamp order (an index), or unordered (a scan).
 */
export function accessPlan(table: string, filter: AuditFilter): AccessPlan {
  const given = SELECTORS.filter((s) => filter[s.selector] !== undefined);
  const [key, ...rest] = given;
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const conditions: string[] = [];
  rest.forEach((s, i) => {
    names[`#f${i}`] = s.attribute;
    values[`:f${i}`] = filter[s.selector];
    if (s.selector !== 'approver') conditions.push(`#f${i} = :f${i}`);
    else {
      Object.assign(names, APPROVERS_NAMES);
      conditions.push(`(#f${i} = :f${i} OR contains(${APPROVERS_PATH}, :f${i}))`);
    }
  });
  const range = timeCondition(filter, names, values);
  // The table's sort key is the sequence number, so on the table (and in a scan) time is a filter.
  const timeOnKey = key?.index !== undefined;
  if (range && !timeOnKey) conditions.push(range);
  const filterExpression = conditions.length > 0 ? conditions.join(' AND ') : undefined;
  const common = {
    TableName: table,
    ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
    ...(filterExpression ? { FilterExpression: filterExpression } : {}),
  };
  const filtered = [
    ...rest.map((s) =>
      s.selector === 'approver'
        ? `(approver = ${JSON.stringify(filter.approver)} or details.approvers contains it)`
        : `${s.attribute} = ${JSON.stringify(filter[s.selector])}`,
    ),
    ...(range && !timeOnKey ? [describeRange(filter)] : []),
  ];
  const tail = filtered.length > 0 ? `, filtered on ${filtered.join(' and ')}` : '';
  if (!key) {
    return {
      kind: 'scan',
      input: { ...common, ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}) },
      explain: `Scan of ${table} (no execution, task, approver, plan or type given)${tail}`,
    };
  }
  names['#k'] = key.attribute;
  values[':k'] = filter[key.selector];
  const keyCondition = `#k = :k${range && timeOnKey ? ` AND ${range}` : ''}`;
  const where = key.index ? `index ${key.index}` : 'table key';
  const onKey = range && timeOnKey ? ` and ${describeRange(filter)} on its sort key` : '';
  const explain = `Query of ${table} ${where} (${key.attribute} = ${JSON.stringify(filter[key.selector])}${onKey})${tail}`;
  const input: QueryCommandInput = {
    ...common,
    ...(key.index ? { IndexName: key.index } : { ConsistentRead: true }),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    KeyConditionExpression: keyCondition,
  };
  const shared = key.selector === 'approver' ? sharedDecisions(table, filter) : undefined;
  return shared
    ? { kind: 'query', input, explain: `${explain}; and ${shared.explain}`, shared: shared.input }
    : { kind: 'query', input, explain };
}

const APPROVERS_NAMES = { '#details': 'details', '#approvers': 'approvers' };
const APPROVERS_PATH = '#details.#approvers';

/**
 * The decisions `filter.approver` made with others: GATE_APPROVED events on index byEventType
 * whose `approvers` (more than one; one approver is on index byApprover) include them, within the
 * filter's plan and time range. None when the filter asks for another event type.
 */
function sharedDecisions(
  table: string,
  filter: AuditFilter,
): { input: QueryCommandInput; explain: string } | undefined {
  if (filter.type !== undefined && filter.type !== SHARED_DECISION) return undefined;
  const names: Record<string, string> = { '#k': 'event', ...APPROVERS_NAMES };
  const values: Record<string, unknown> = { ':k': SHARED_DECISION, ':who': filter.approver, ':one': 1 };
  const conditions = [`contains(${APPROVERS_PATH}, :who)`, `size(${APPROVERS_PATH}) > :one`];
  if (filter.plan !== undefined) {
    names['#plan'] = 'planId';
    values[':plan'] = filter.plan;
    conditions.push('#plan = :plan');
  }
  const range = timeCondition(filter, names, values);
  return {
    input: {
      TableName: table,
      IndexName: 'byEventType',
      KeyConditionExpression: `#k = :k${range ? ` AND ${range}` : ''}`,
      FilterExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
    explain: `Query of ${table} index byEventType (event = "${SHARED_DECISION}"${range ? ` and ${describeRange(filter)} on its sort key` : ''}), filtered on details.approvers containing ${JSON.stringify(filter.approver)} with others${filter.plan !== undefined ? ` and planId = ${JSON.stringify(filter.plan)}` : ''}, merged in time order`,
  };
}

function timeCondition(
  filter: AuditFilter,
  names: Record<string, string>,
  values: Record<string, unknown>,
): string | undefined {
  if (!filter.since && !filter.until) return undefined;
  names['#t'] = 'timestamp';
  if (filter.since) values[':since'] = filter.since;
  if (filter.until) values[':until'] = filter.until;
  if (filter.since && filter.until) return '#t BETWEEN :since AND :until';
  return filter.since ? '#t >= :since' : '#t <= :until';
}

function describeRange(filter: AuditFilter): string {
  if (filter.since && filter.until) return `timestamp between ${filter.since} and ${filter.until}`;
  return filter.since ? `timestamp >= ${filter.since}` : `timestamp <= ${filter.until}`;
}

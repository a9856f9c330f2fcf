/**
 * The event journal: appends each event to the events table once (conditional put on a
 * per-execution sequence number), chains it to the previous event by hash, and publishes the
 * same event to EventBridge. Everything is redacted before it is hashed, stored or sent.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { InvalidInputError } from './errors.ts';
import { GENESIS_HASH, type JournalEventInput, JournalEventInputSchema, type StoredEvent } from './events.ts';
import { Redactor } from './redact.ts';
import { SEQ_DIGITS } from './tables.ts';
import { truncateText } from './truncate.ts';

/** EventBridge `source` of every plangate event. */
export const EVENT_SOURCE = 'plangate';

/** Longest string kept in event details; EventBridge entries are limited to 256 KB. */
const MAX_DETAIL_STRING_BYTES = 16 * 1024;

export interface JournalProps {
  readonly dynamo: DynamoDBDocumentClient;
  readonly eventsTable: string;
  /** Without a bus, events are only stored. */
  readonly events?: EventBridgeClient;
  /** @default 'default' */
  readonly eventBusName?: string;
  /** Knows the declared secrets' resolved values; credential shapes are redacted regardless. */
  readonly redactor?: Redactor;
  /**
   * How many times a sequence conflict (another writer took the number) is retried.
   * @default 20
   */
  readonly maxConflictRetries?: number;
  /** @default () => new Date() */
  readonly clock?: () => Date;
}

export interface AppendResult {
  readonly stored: StoredEvent;
  /** False when the event is stored but the bus refused it (the table is the source of truth). */
  readonly published: boolean;
  readonly publishError?: string;
}

export class Journal {
  private readonly redactor: Redactor;

  constructor(private readonly props: JournalProps) {
    this.redactor = props.redactor ?? new Redactor();
  }

  /** Appends one event (validated, redacted, chained) and publishes it. */
  async append(input: JournalEventInput): Promise<AppendResult> {
    const parsed = JournalEventInputSchema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InvalidInputError(issue?.message ?? 'invalid event', {
        location: `event.${issue?.path.join('.')}`,
      });
    }
    const clean = this.redactor.value(parsed.data);
    const body = {
      timestamp: clean.timestamp ?? (this.props.clock ?? (() => new Date()))().toISOString(),
      event: clean.event,
      planId: clean.planId,
      planVersion: clean.planVersion,
      planDigest: clean.planDigest,
      executionId: clean.executionId,
      ...(clean.taskId !== undefined
        ? { taskId: clean.taskId, planTask: `${clean.planId}#${clean.taskId}` }
        : {}),
      ...(clean.taskName !== undefined ? { taskName: clean.taskName } : {}),
      ...(clean.approver !== undefined ? { approver: clean.approver } : {}),
      details: limitStrings(clean.details) as Record<string, unknown>,
    };
    const stored = await this.store(body);
    return { stored, ...(await this.publish(stored)) };
  }

  private async store(body: Omit<StoredEvent, 'seq' | 'prevHash' | 'hash'>): Promise<StoredEvent> {
    const maxRetries = this.props.maxConflictRetries ?? 20;
    for (let attempt = 0; ; attempt++) {
      const tail = await readTail(this.props.dynamo, this.props.eventsTable, body.executionId);
      const unhashed = {
        ...body,
        seq: formatSeq((tail ? parseSeq(tail.seq) : 0) + 1),
        prevHash: tail?.hash ?? GENESIS_HASH,
      };
      const stored: StoredEvent = { ...unhashed, hash: hashEvent(unhashed) };
      try {
        await this.props.dynamo.send(
          new PutCommand({
            TableName: this.props.eventsTable,
            Item: stored,
            // Written once: a taken sequence number is never overwritten.
            ConditionExpression: 'attribute_not_exists(executionId)',
          }),
        );
        return stored;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException) || attempt >= maxRetries) throw error;
        // Another writer took this number: back off a little (jittered) and chain onto the new tail.
        await new Promise((r) => setTimeout(r, Math.random() * 5 * (attempt + 1)));
      }
    }
  }

  private async publish(stored: StoredEvent): Promise<{ published: boolean; publishError?: string }> {
    if (!this.props.events) return { published: false };
    try {
      const out = await this.props.events.send(
        new PutEventsCommand({
          Entries: [
            {
              Source: EVENT_SOURCE,
              DetailType: stored.event,
              Detail: JSON.stringify(stored),
              EventBusName: this.props.eventBusName ?? 'default',
              Time: new Date(stored.timestamp),
            },
          ],
        }),
      );
      const failed = out.Entries?.find((e) => e.ErrorCode);
      if ((out.FailedEntryCount ?? 0) > 0 || failed) {
        return { published: false, publishError: `${failed?.ErrorCode}: ${failed?.ErrorMessage}` };
      }
      return { published: true };
    } catch (error) {
      return { published: false, publishError: this.redactor.text(String(error)) };
    }
  }
}

/** The hash of an event: SHA-256 over the canonical JSON of everything but `hash`. */
export function hashEvent(event: Omit<StoredEvent, 'hash'> | StoredEvent): string {
  const { hash: _hash, ...rest } = event as StoredEvent;
  return sha256Hex(canonicalJson(rest));
}

export const formatSeq = (n: number): string => String(n).padStart(SEQ_DIGITS, '0');
export const parseSeq = (seq: string): number => Number.parseInt(seq, 10);

async function readTail(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<StoredEvent | undefined> {
  const out = await dynamo.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: 'executionId = :e',
      ExpressionAttributeValues: { ':e': executionId },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  return out.Items?.[0] as StoredEvent | undefined;
}

/** Every event of an execution, in sequence order. */
export async function readEvents(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await dynamo.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'executionId = :e',
        ExpressionAttributeValues: { ':e': executionId },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    events.push(...((out.Items ?? []) as StoredEvent[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return events;
}

/** An auditor's query over one of the events table's indexes, optionally within [from, to] (ISO timestamps). */
export interface EventQuery {
  readonly index: 'byPlan' | 'byEventType' | 'byTask' | 'byApprover';
  /** The index's partition value: a plan id, an event name, `<planId>#<taskId>`, or an approver. */
  readonly value: string;
  readonly from?: string;
  readonly to?: string;
}

const INDEX_KEYS: Record<EventQuery['index'], string> = {
  byPlan: 'planId',
  byEventType: 'event',
  byTask: 'planTask',
  byApprover: 'approver',
};

export async function queryEvents(
  dynamo: DynamoDBDocumentClient,
  table: string,
  query: EventQuery,
): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  const range =
    query.from && query.to
      ? ' AND #t BETWEEN :from AND :to'
      : query.from
        ? ' AND #t >= :from'
        : query.to
          ? ' AND #t <= :to'
          : '';
  let start: Record<string, unknown> | undefined;
  do {
    const out = await dynamo.send(
      new QueryCommand({
        TableName: table,
        IndexName: query.index,
        KeyConditionExpression: `#k = :v${range}`,
        ExpressionAttributeNames: { '#k': INDEX_KEYS[query.index], ...(range ? { '#t': 'timestamp' } : {}) },
        ExpressionAttributeValues: {
          ':v': query.value,
          ...(query.from ? { ':from': query.from } : {}),
          ...(query.to ? { ':to': query.to } : {}),
        },
        ExclusiveStartKey: start,
      }),
    );
    events.push(...((out.Items ?? []) as StoredEvent[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return events;
}

/** The first place a chain of one execution's events breaks, if anywhere. */
export type ChainVerdict =
  | { readonly ok: true; readonly count: number }
  | {
      readonly ok: false;
      /** Index in the given array. */
      readonly index: number;
      readonly seq: string | undefined;
      readonly problem: 'gap' | 'reordered' | 'edited' | 'broken-link' | 'mixed-executions';
      readonly message: string;
    };

/** Checks an execution's events, in the order given: consecutive sequence numbers from 1, each hash intact, each link to the previous. */
export function verifyChain(events: readonly StoredEvent[]): ChainVerdict {
  let prevHash = GENESIS_HASH;
  const executionId = events[0]?.executionId;
  for (const [index, event] of events.entries()) {
    const expected = index + 1;
    const seq = parseSeq(event.seq);
    const fail = (
      problem: Exclude<ChainVerdict, { ok: true }>['problem'],
      message: string,
    ): ChainVerdict => ({
      ok: false,
      index,
      seq: event.seq,
      problem,
      message: `event #${index + 1} (seq ${event.seq}, ${event.event}): ${message}`,
    });
    if (event.executionId !== executionId) {
      return fail('mixed-executions', `belongs to execution ${event.executionId}, not ${executionId}`);
    }
    if (seq < expected) return fail('reordered', `sequence ${seq} comes after ${expected - 1}`);
    if (seq > expected) return fail('gap', `sequence jumps from ${expected - 1} to ${seq}`);
    if (hashEvent(event) !== event.hash) return fail('edited', 'content does not match its hash');
    if (event.prevHash !== prevHash) return fail('broken-link', 'prevHash does not match the previous event');
    prevHash = event.hash;
  }
  return { ok: true, count: events.length };
}

function limitStrings(value: unknown): unknown {
  if (typeof value === 'string') return truncateText(value, MAX_DETAIL_STRING_BYTES).text;
  if (Array.isArray(value)) return value.map(limitStrings);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, limitStrings(v)]));
  }
  return value;
}

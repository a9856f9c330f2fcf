/**
 * The event journal: appends each event to the events table once (conditional put on a
 * per-execution sequence number), chains it to the previous event by hash, and publishes the
 * same event to EventBridge. Everything is redacted before it is hashed, stored or sent.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import {
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { canonicalJson } from '../../plan/digest.ts';
import {
  type EventType,
  type JournalEvent,
  type JournalRecord,
  safeParseJournalEvent,
} from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { EventTooLargeError, ExecutionEndedError, InvalidInputError } from '../shared/errors.ts';
import { sha256Hex } from '../shared/hash.ts';
import { truncateText } from '../shared/truncate.ts';
import type { JournalAnchor } from './anchorer.ts';
import { SEQ_DIGITS } from './tables.ts';

/** EventBridge `source` of every plangate event. */
export const EVENT_SOURCE = 'plangate';

/**
 * Largest event the journal stores, in bytes of its JSON: an item of the events table is at most
 * 400 KB (DynamoDB, here and on AWS), and JSON's quotes and braces only overstate an item's size.
 * Room is kept for what the journal adds (seq, both hashes, the key and index attributes).
 */
export const MAX_EVENT_BYTES = 400 * 1024 - 1024;

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
  /**
   * Told of each event once it is stored (lib/runtime/telemetry: a log entry and metrics), with
   * what the appender noted about it. It must not throw. @default - nobody
   */
  readonly onAppended?: (record: JournalRecord, note: AppendNote) => void;
  /** Told of each stored event, to anchor the chain's head outside the table (anchorer.ts). @default - not anchored here */
  readonly anchor?: JournalAnchor;
}

/** What an appender tells the journal's observer beyond the event itself; never stored. */
export interface AppendNote {
  /** A gate's decision: when the gate opened (its wait time is a metric). */
  readonly gateOpenedAt?: string;
}

/** An event as a Lambda hands it to the journal (timestamp and details optional). */
export type JournalEventInput = Omit<JournalEvent, 'timestamp' | 'details'> & {
  readonly timestamp?: string;
  readonly details?: Record<string, unknown>;
};

export interface AppendResult {
  readonly stored: JournalRecord;
  /** False when the event is stored but the bus refused it (the table is the source of truth). */
  readonly published: boolean;
  readonly publishError?: string;
}

export class Journal {
  private readonly redactor: Redactor;

  constructor(private readonly props: JournalProps) {
    this.redactor = props.redactor ?? new Redactor();
  }

  /**
   * Appends one event (validated against its type's details schema, redacted, chained) and publishes it.
   * `timestamp` defaults to now.
   */
  async append(input: JournalEventInput, note: AppendNote = {}): Promise<AppendResult> {
    const candidate = {
      ...input,
      timestamp: input.timestamp ?? (this.props.clock ?? (() => new Date()))().toISOString(),
      details: input.details ?? {},
    };
    const parsed = safeParseJournalEvent(candidate);
    if (!parsed.success)
      throw new InvalidInputError(parsed.issue.message, { location: parsed.issue.location });
    const clean = this.redactor.value(parsed.data);
    const event: JournalEvent = { ...clean, details: limitStrings(clean.details) as Record<string, unknown> };
    const bytes = Buffer.byteLength(JSON.stringify(event));
    if (bytes > MAX_EVENT_BYTES) throw new EventTooLargeError(event.event, bytes, MAX_EVENT_BYTES);
    const stored = await this.store(event);
    this.props.onAppended?.(stored, note);
    this.props.anchor?.observe(stored);
    return { stored, ...(await this.publish(stored)) };
  }

  private async store(event: JournalEvent): Promise<JournalRecord> {
    const key = `${this.props.eventsTable}\0${event.executionId}`;
    const lastStored = tailsOf(this.props.dynamo);
    return inOrder(key, async () => {
      const maxRetries = this.props.maxConflictRetries ?? 20;
      let tail =
        lastStored.get(key) ?? (await readTail(this.props.dynamo, this.props.eventsTable, event.executionId));
      for (let attempt = 0; ; attempt++) {
        // Checked against the tail the conditional put stands on: a writer holding an older tail
        // loses the put, re-reads, and sees the end here.
        if (tail?.event === 'EXECUTION_COMPLETE')
          throw new ExecutionEndedError(event.executionId, event.event);
        const prevHash = tail?.hash ?? GENESIS_HASH;
        // Time in a chain never goes backwards, whatever the wall clock did (a clock set back):
        // an event is never earlier than the one it follows.
        const timed =
          tail !== undefined && event.timestamp < tail.timestamp
            ? { ...event, timestamp: tail.timestamp }
            : event;
        const record: JournalRecord = {
          ...timed,
          seq: (tail?.seq ?? 0) + 1,
          prevHash,
          hash: hashEvent(prevHash, timed),
        };
        try {
          await putNewEvent(this.props.dynamo, this.props.eventsTable, record);
          remember(lastStored, key, {
            seq: record.seq,
            hash: record.hash,
            event: record.event,
            timestamp: record.timestamp,
          });
          return record;
        } catch (error) {
          lastStored.delete(key);
          if (!(error instanceof ConditionalCheckFailedException) || attempt >= maxRetries) throw error;
          // Another writer (another process) took this number: back off a little (jittered) and
          // chain onto the new tail.
          await new Promise((r) => setTimeout(r, Math.random() * 5 * (attempt + 1)));
          tail = await readTail(this.props.dynamo, this.props.eventsTable, event.executionId);
        }
      }
    });
  }

  private async publish(stored: JournalRecord): Promise<{ published: boolean; publishError?: string }> {
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

/**
 * Stores one record under its key, only if no event is stored there: the journal's one write to
 * the events table. A taken key is refused (ConditionalCheckFailedException), never overwritten.
 */
export async function putNewEvent(
  dynamo: DynamoDBDocumentClient,
  table: string,
  record: JournalRecord,
): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: table,
      Item: toItem(record),
      ConditionExpression: 'attribute_not_exists(executionId) AND attribute_not_exists(sk)',
    }),
  );
}

/** prevHash of an execution's first event. */
export const GENESIS_HASH = `sha256:${'0'.repeat(64)}`;

/** The fields of a record that are the event itself (what the hash covers). */
const EVENT_FIELDS = [
  'timestamp',
  'event',
  'executionId',
  'planId',
  'planVersion',
  'planDigest',
  'task_id',
  'task_name',
  'details',
] as const satisfies readonly (keyof JournalEvent)[];

/** `sha256:` + hex SHA-256 of prevHash followed by the canonical JSON of the event. */
export function hashEvent(prevHash: string, event: JournalEvent | JournalRecord): string {
  const own: Record<string, unknown> = {};
  for (const field of EVENT_FIELDS) if (event[field] !== undefined) own[field] = event[field];
  return `sha256:${sha256Hex(prevHash + canonicalJson(own))}`;
}

/** The table's sort key for a sequence number: zero-padded so string order is numeric order. */
export const formatSeq = (n: number): string => String(n).padStart(SEQ_DIGITS, '0');

/** The sparse index attributes an item carries for its record: `planTask` (byTask) and `approver` (byApprover). */
export interface IndexAttributes {
  readonly planTask?: string;
  readonly approver?: string;
}

/**
 * The index attributes a record's item must carry: each present only when the record has a value
 * for it. `approver` is the one person a record names: the voter of a GATE_VOTE, the approver of
 * a decision; a decision made by several approvers (GATE_APPROVED by a quorum) has none, since an
 * index key holds one value: `plangate audit query --approver` finds those by their `approvers`.
 */
export function indexAttributes(record: JournalRecord): IndexAttributes {
  const {
    approver: named,
    approvers,
    voter,
    principal,
  } = record.details as {
    approver?: unknown;
    approvers?: unknown;
    voter?: unknown;
    principal?: unknown;
  };
  // A policy decision is found under the person it was about (`--approver`).
  const approver =
    record.event === 'GATE_VOTE'
      ? voter
      : record.event === 'POLICY_DECISION'
        ? principal
        : Array.isArray(approvers) && approvers.length > 1
          ? undefined
          : named;
  return {
    ...(record.task_id !== undefined ? { planTask: `${record.planId}#${record.task_id}` } : {}),
    ...(typeof approver === 'string' && approver !== '' ? { approver } : {}),
  };
}

/** The stored item: the record plus the key and sparse index attributes. */
export function toItem(record: JournalRecord): Record<string, unknown> {
  return { ...record, sk: formatSeq(record.seq), ...indexAttributes(record) };
}

/** Back from an item to the record (key and index attributes dropped; the rest is not checked). */
export function fromItem(item: Record<string, unknown>): JournalRecord {
  const { sk: _sk, planTask: _planTask, approver: _approver, ...record } = item;
  return record as JournalRecord;
}

/**
 * Appends to one execution from this process go one at a time, each chaining onto the tail the
 * previous one stored: parallel branches of one run (a 100-wide fan-out) then never race each
 * other for a sequence number. Other processes (other Lambda containers) still can; the
 * conditional put catches that and the append re-reads the tail.
 */
const appendQueues = new Map<string, Promise<unknown>>();
type Tail = Pick<JournalRecord, 'seq' | 'hash' | 'event' | 'timestamp'>;
/**
 * The tail this process last stored per execution, per client (so two DynamoDB endpoints with
 * the same table names never share one); a hint, checked by the conditional put.
 */
const storedTails = new WeakMap<DynamoDBDocumentClient, Map<string, Tail>>();
const MAX_REMEMBERED_TAILS = 10_000;

function tailsOf(dynamo: DynamoDBDocumentClient): Map<string, Tail> {
  let tails = storedTails.get(dynamo);
  if (!tails) {
    tails = new Map();
    storedTails.set(dynamo, tails);
  }
  return tails;
}

function inOrder<T>(key: string, work: () => Promise<T>): Promise<T> {
  const previous = appendQueues.get(key) ?? Promise.resolve();
  const next = previous.then(work, work);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  appendQueues.set(key, settled);
  void settled.then(() => {
    if (appendQueues.get(key) === settled) appendQueues.delete(key);
  });
  return next;
}

function remember(lastStored: Map<string, Tail>, key: string, tail: Tail): void {
  lastStored.delete(key);
  lastStored.set(key, tail);
  // Oldest first: a Map iterates in insertion order.
  if (lastStored.size > MAX_REMEMBERED_TAILS) lastStored.delete(lastStored.keys().next().value as string);
}

async function readTail(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<JournalRecord | undefined> {
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
  const item = out.Items?.[0];
  return item ? fromItem(item) : undefined;
}

/** Every event of an execution, in sequence order. */
export async function readEvents(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<JournalRecord[]> {
  const events: JournalRecord[] = [];
  for await (const item of queryItems(dynamo, {
    TableName: table,
    KeyConditionExpression: 'executionId = :e',
    ExpressionAttributeValues: { ':e': executionId },
    ConsistentRead: true,
  }))
    events.push(fromItem(item));
  return events;
}

/** An execution's first event (PLAN_CREATED when the plan was launched), or undefined. */
export async function firstEvent(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<JournalRecord | undefined> {
  const out = await dynamo.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: 'executionId = :e',
      ExpressionAttributeValues: { ':e': executionId },
      ConsistentRead: true,
      Limit: 1,
    }),
  );
  const [item] = out.Items ?? [];
  return item ? fromItem(item) : undefined;
}

/**
 * The latest of an execution's events about `taskId` whose type is one of `types`, read backwards
 * from the tail (a step's recent history is near the end), or undefined when there is none.
 */
export async function lastTaskEvent(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
  taskId: string,
  types: readonly EventType[],
): Promise<JournalRecord | undefined> {
  for await (const item of queryItems(dynamo, {
    TableName: table,
    KeyConditionExpression: 'executionId = :e',
    FilterExpression: `task_id = :t AND #event IN (${types.map((_, i) => `:v${i}`).join(', ')})`,
    ExpressionAttributeNames: { '#event': 'event' },
    ExpressionAttributeValues: {
      ':e': executionId,
      ':t': taskId,
      ...Object.fromEntries(types.map((t, i) => [`:v${i}`, t])),
    },
    ScanIndexForward: false,
    ConsistentRead: true,
    // A step's recent history is near the tail: small pages stop reading early.
    Limit: 200,
  }))
    return fromItem(item);
  return undefined;
}

/**
 * A step's latest TASK_STARTED or TASK_COMPLETED in the execution: TASK_COMPLETED means the step
 * is done for good, whatever retries it (steps/README.md, "A step runs once").
 */
export function lastStartOrCompletion(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
  stepId: string,
): Promise<JournalRecord | undefined> {
  return lastTaskEvent(dynamo, table, executionId, stepId, ['TASK_COMPLETED', 'TASK_STARTED']);
}

/** Every item a query matches, page after page, as they come (stop early by breaking out). */
export async function* queryItems(
  dynamo: DynamoDBDocumentClient,
  input: QueryCommandInput,
): AsyncGenerator<Record<string, unknown>> {
  let start: Record<string, unknown> | undefined;
  do {
    const out = await dynamo.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    yield* out.Items ?? [];
    start = out.LastEvaluatedKey;
  } while (start);
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
): Promise<JournalRecord[]> {
  const range =
    query.from && query.to
      ? ' AND #t BETWEEN :from AND :to'
      : query.from
        ? ' AND #t >= :from'
        : query.to
          ? ' AND #t <= :to'
          : '';
  const events: JournalRecord[] = [];
  for await (const item of queryItems(dynamo, {
    TableName: table,
    IndexName: query.index,
    KeyConditionExpression: `#k = :v${range}`,
    ExpressionAttributeNames: { '#k': INDEX_KEYS[query.index], ...(range ? { '#t': 'timestamp' } : {}) },
    ExpressionAttributeValues: {
      ':v': query.value,
      ...(query.from ? { ':from': query.from } : {}),
      ...(query.to ? { ':to': query.to } : {}),
    },
  }))
    events.push(fromItem(item));
  return events;
}

function limitStrings(value: unknown): unknown {
  if (typeof value === 'string') return truncateText(value, MAX_DETAIL_STRING_BYTES).text;
  if (Array.isArray(value)) return value.map(limitStrings);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, limitStrings(v)]));
  }
  return value;
}

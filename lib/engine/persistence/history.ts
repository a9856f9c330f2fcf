/** History events as the engine stores them, and their AWS GetExecutionHistory shape. */
import type * as sfn from '@aws-sdk/client-sfn';

/**
 * One history event as stored (one JSON line). `key` identifies the event's logical position
 * (scope + sequence number) so that replay after a restart finds it again even when concurrent
 * branches interleaved differently; `internal` carries what the engine needs to resume but
 * AWS does not show (never a task token: only its hash).
 */
export interface StoredEvent {
  readonly id: number;
  readonly prev: number;
  /** Epoch milliseconds. */
  readonly ts: number;
  readonly type: string;
  readonly key: string;
  readonly details?: Record<string, unknown>;
  readonly internal?: Record<string, unknown>;
}

/**
 * An event the history has just recorded. Its key is kept as scope and sequence number and
 * spelled out only when read: a long execution keeps thousands of events, and a key string per
 * event was a good part of what the collector had to copy.
 */
export abstract class ScopedEvent implements StoredEvent {
  // Declared, not defined, and assigned in the constructor: a class field would be defined by
  // the base class's initializer, which every subclass's events run and which turns megamorphic
  // (several times slower) once more than four classes extend this one.
  declare readonly id: number;
  declare readonly prev: number;
  declare readonly ts: number;
  declare readonly type: string;
  /** The key's scope part (before the last dot). */
  declare readonly scopeId: string;
  /** The key's sequence number (after the last dot). */
  declare readonly seq: number;

  constructor(id: number, prev: number, ts: number, type: string, scopeId: string, seq: number) {
    this.id = id;
    this.prev = prev;
    this.ts = ts;
    this.type = type;
    this.scopeId = scopeId;
    this.seq = seq;
  }

  get key(): string {
    return `${this.scopeId}.${this.seq}`;
  }

  abstract get details(): Record<string, unknown> | undefined;
  abstract get internal(): Record<string, unknown> | undefined;
}

/** Any recorded event, with its details and internal members as given. */
export class RecordedEvent extends ScopedEvent {
  constructor(
    id: number,
    prev: number,
    ts: number,
    type: string,
    scopeId: string,
    seq: number,
    readonly details: Record<string, unknown> | undefined,
    readonly internal: Record<string, unknown> | undefined,
  ) {
    super(id, prev, ts, type, scopeId, seq);
  }
}

/**
 * `<Type>StateEntered`: details `{ name, input, inputDetails }` are built when read (by the API,
 * replay or a test); the codec writes the two texts straight from the event.
 */
export class StateEnteredEvent extends ScopedEvent {
  constructor(
    id: number,
    prev: number,
    ts: number,
    type: string,
    scopeId: string,
    seq: number,
    readonly name: string,
    /** The state input as JSON text. */
    readonly input: string,
  ) {
    super(id, prev, ts, type, scopeId, seq);
  }

  get details(): Record<string, unknown> {
    return { name: this.name, input: this.input, inputDetails: NOT_TRUNCATED };
  }

  get internal(): undefined {
    return undefined;
  }
}

/**
 * `<Type>StateExited`: details `{ name, output, outputDetails }` and internal `{ entered, next?,
 * assigned? }` (what replay needs to skip the state) built when read.
 */
export class StateExitedEvent extends ScopedEvent {
  constructor(
    id: number,
    prev: number,
    ts: number,
    type: string,
    scopeId: string,
    seq: number,
    readonly name: string,
    /** The state output as JSON text. */
    readonly output: string,
    /** Id of the state's `*StateEntered` event. */
    readonly entered: number,
    /** The next state; undefined when the states block ends here. */
    readonly next: string | undefined,
    /** Variables the state assigned; undefined when none. */
    readonly assigned: Record<string, unknown> | undefined,
  ) {
    super(id, prev, ts, type, scopeId, seq);
  }

  get details(): Record<string, unknown> {
    return { name: this.name, output: this.output, outputDetails: NOT_TRUNCATED };
  }

  get internal(): Record<string, unknown> {
    const internal: Record<string, unknown> =
      this.next === undefined ? { entered: this.entered } : { entered: this.entered, next: this.next };
    if (this.assigned !== undefined) internal.assigned = this.assigned;
    return internal;
  }
}

/**
 * `inputDetails`/`outputDetails` of payloads the engine never truncates: one shared, frozen
 * object rather than a new one on every event.
 */
export const NOT_TRUNCATED: { readonly truncated: false } = Object.freeze({ truncated: false });

/** The name of the `*EventDetails` member AWS uses for an event type. */
export function detailsMember(type: string): string | undefined {
  if (type.endsWith('StateEntered')) return 'stateEnteredEventDetails';
  if (type.endsWith('StateExited')) return 'stateExitedEventDetails';
  if (NO_DETAILS.has(type)) return undefined;
  return `${type[0]?.toLowerCase()}${type.slice(1)}EventDetails`;
}

const NO_DETAILS: ReadonlySet<string> = new Set([
  'ParallelStateStarted',
  'ParallelStateSucceeded',
  'ParallelStateFailed',
  'ParallelStateAborted',
  'MapStateSucceeded',
  'MapStateFailed',
  'MapStateAborted',
  'TaskStateAborted',
  'WaitStateAborted',
]);

/** Converts a stored event into the GetExecutionHistory shape. */
export function toHistoryEvent(event: StoredEvent, includeExecutionData: boolean): sfn.HistoryEvent {
  const out: Record<string, unknown> = {
    timestamp: new Date(event.ts),
    type: event.type,
    id: event.id,
    previousEventId: event.prev,
  };
  const member = detailsMember(event.type);
  if (member && event.details) {
    out[member] = includeExecutionData ? event.details : withoutData(event.details);
  }
  return out as unknown as sfn.HistoryEvent;
}

const DATA_FIELDS: ReadonlySet<string> = new Set(['input', 'output', 'parameters']);

function withoutData(details: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) if (!DATA_FIELDS.has(k)) out[k] = v;
  return out;
}

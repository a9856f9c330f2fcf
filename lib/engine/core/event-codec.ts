/**
 * The compact durable form of history events (store format 2). A history repeats itself: a
 * state's input is the previous state's output, a Pass passes its input on, a Lambda's input is
 * the state's input; ids, previous ids, timestamps and keys mostly step by one or not at all. So
 * each event is written as a short JSON array of small numbers, and every payload text (`input`,
 * `output`, `parameters`) is written once per execution and then referred to by its number.
 * Lines are hand-built JSON (no wrapper objects to stringify) and read back with one JSON.parse;
 * {@link EventCodec.decodeLine} rebuilds exactly the events that were encoded.
 *
 * A line is `[2,record,...]`. A record is `[head, ...fields]`; the head is the type alone when
 * the event continues the previous one (same scope, next sequence number, same millisecond, id
 * and previous id one on), else `[type, scope, seq, dt, did, dprev]`:
 * - type: index into {@link EVENT_TYPES} (which also fixes the fields), or the type name itself
 *   (then the fields are the generic `details | 0, internal?`);
 * - scope: index of a scope seen before, a string (a new scope, numbered in order), or `[key]`
 *   for a key that is not `<scope>.<integer>`;
 * - seq: the sequence number minus (the scope's last one + 1) (a new scope: the number itself);
 * - dt: milliseconds since the previous event (or `[ts]` when not an integer);
 * - did: id minus the expected id (previous + 1); dprev: id minus previousEventId.
 * Payloads: a number refers to a payload text written before; a string is a new one; `[value]`
 * is a value that is not a string, verbatim.
 * EVENT_TYPES is part of the format: only ever append to it.
 */
import { ByteWriter } from './byte-writer.ts';
import {
  JournalEvent,
  NOT_TRUNCATED,
  StateEnteredEvent,
  StateExitedEvent,
  type StoredEvent,
} from './history.ts';

const STATE_TYPES = ['Pass', 'Choice', 'Wait', 'Succeed', 'Fail', 'Task', 'Map', 'Parallel'];

/** Known event types by code; the first 16 alternate `<State>StateEntered` / `<State>StateExited`. */
const EVENT_TYPES: readonly string[] = [
  ...STATE_TYPES.flatMap((t) => [`${t}StateEntered`, `${t}StateExited`]),
  'ExecutionStarted',
  'ExecutionSucceeded',
  'ExecutionFailed',
  'ExecutionTimedOut',
  'ExecutionAborted',
  'ExecutionRedriven',
  ...['LambdaFunction', 'Activity', 'Task'].flatMap((f) => [
    `${f}Scheduled`,
    `${f}Started`,
    `${f}Succeeded`,
    `${f}Failed`,
    `${f}TimedOut`,
  ]),
  'TaskSubmitted',
  'TaskStateAborted',
  'WaitStateAborted',
  'MapStateStarted',
  'MapStateSucceeded',
  'MapStateFailed',
  'MapStateAborted',
  'MapIterationStarted',
  'MapIterationSucceeded',
  'MapIterationFailed',
  'MapIterationAborted',
  'MapRunStarted',
  'MapRunSucceeded',
  'MapRunFailed',
  'ParallelStateStarted',
  'ParallelStateSucceeded',
  'ParallelStateFailed',
  'ParallelStateAborted',
  'EvaluationFailed',
];

const CODES = new Map(EVENT_TYPES.map((t, i) => [t, i]));
/** Codes below this are `*StateEntered` (even) and `*StateExited` (odd). */
const STATE_CODES = STATE_TYPES.length * 2;

/** Detail members holding payload text. */
const PAYLOAD_KEYS = new Set(['input', 'output', 'parameters']);
/** Detail members that are usually the shared NOT_TRUNCATED object (written as 0). */
const TRUNCATION_KEYS = new Set(['inputDetails', 'outputDetails']);

/** Longest detail text whose quoted bytes are cached (longer ones, e.g. causes, rarely recur). */
const MAX_QUOTED_VALUE = 128;

/** The first element of every format-2 line. */
export const FORMAT_2 = 2;

interface ScopeState {
  readonly name: string;
  readonly index: number;
  /** The last sequence number written or read in this scope. */
  last: number;
}

/**
 * Encoder and decoder state of one history file: the scopes and payload texts seen so far, the
 * last timestamp and id. A log encodes with the state its file's lines leave behind.
 */
export class EventCodec {
  private readonly scopes = new Map<string, ScopeState>();
  private readonly scopeList: ScopeState[] = [];
  private readonly payloadRefs = new Map<string, number>();
  private readonly payloads: string[] = [];
  private lastTs = 0;
  private lastId = 0;
  /** Scope of the last event (a short record continues it). */
  private lastScope: ScopeState | undefined;

  /**
   * One line (with its newline) holding `events`, as bytes to write at once: valid until the next
   * call (every codec writes into one shared buffer).
   */
  encodeBatch(events: readonly StoredEvent[]): Uint8Array {
    const w = writer;
    w.reset();
    w.byte(91); // [
    w.byte(50); // 2
    for (const e of events) {
      w.byte(44); // ,
      this.encode(w, e);
    }
    w.byte(93); // ]
    w.byte(10); // \n
    return w.bytes();
  }

  private encode(w: ByteWriter, e: StoredEvent): void {
    const code = CODES.get(e.type);
    w.byte(91); // [
    if (code !== undefined && code < STATE_CODES) {
      // the journal's own state events: their texts straight from the event, no details object
      if (e instanceof StateEnteredEvent) {
        this.stateRecord(w, code, e, e.name, e.input);
        return;
      }
      if (e instanceof StateExitedEvent) {
        this.stateRecord(w, code, e, e.name, e.output, e.entered, e.next, e.assigned);
        return;
      }
    }
    const { details, internal } = e;
    if (code !== undefined && code < STATE_CODES) {
      const fits = code % 2 === 0 ? enteredFits(details, internal) : exitedFits(details, internal);
      if (fits) {
        const d = details as Record<string, unknown>;
        const i = internal as Record<string, unknown>;
        if (code % 2 === 0) this.stateRecord(w, code, e, d.name as string, d.input as string);
        else
          this.stateRecord(
            w,
            code,
            e,
            d.name as string,
            d.output as string,
            i.entered as number,
            i.next as string | undefined,
            i.assigned,
          );
        return;
      }
    }
    this.head(w, code === undefined || code < STATE_CODES ? quote(e.type) : code, e);
    if (details !== undefined || internal !== undefined) {
      w.byte(44);
      if (details === undefined) w.byte(48);
      else this.details(w, details);
      if (internal !== undefined) {
        w.byte(44);
        w.text(JSON.stringify(internal));
      }
    }
    w.byte(93); // ]
  }

  /**
   * The record of a `*StateEntered` (name, input) or `*StateExited` (name, output, entered, next,
   * assigned) event, after its opening bracket.
   */
  private stateRecord(
    w: ByteWriter,
    code: number,
    e: StoredEvent,
    name: string,
    payload: string,
    entered?: number,
    next?: string,
    assigned?: unknown,
  ): void {
    this.head(w, code, e);
    w.byte(44);
    w.raw(quote(name));
    w.byte(44);
    this.payload(w, payload);
    if (code % 2 === 1) {
      w.byte(44);
      w.number(e.id - (entered as number));
      w.byte(44);
      if (next === undefined) w.byte(48);
      else w.raw(quote(next));
      if (assigned !== undefined) {
        w.byte(44);
        w.text(JSON.stringify(assigned));
      }
    }
    w.byte(93); // ]
  }

  /** Scope part of the key {@link parseKey} read last; undefined when the key is not `<scope>.<integer>`. */
  private parsedScope: string | undefined;

  /** The sequence number of a `<scope>.<integer>` key (its scope in {@link parsedScope}), read without slicing digits. */
  private parseKey(key: string): number {
    let seq = 0;
    let unit = 1;
    let at = key.length - 1;
    for (; at >= 0; at--) {
      const c = key.charCodeAt(at);
      if (c < 48 || c > 57) break;
      seq += (c - 48) * unit;
      unit *= 10;
    }
    const digitCount = key.length - 1 - at;
    const wellFormed = !(
      at < 0 ||
      key.charCodeAt(at) !== 46 ||
      digitCount === 0 ||
      digitCount > 15 ||
      (digitCount > 1 && key.charCodeAt(at + 1) === 48)
    );
    this.parsedScope = wellFormed ? (at === 0 ? '' : key.slice(0, at)) : undefined;
    return seq;
  }

  /**
   * The type alone when the event continues the previous one (same scope, next seq, same
   * millisecond, ids one on), else `[type, scope, seq, dt, did, dprev]`.
   */
  private head(w: ByteWriter, type: number | Uint8Array, e: StoredEvent): void {
    const { ts, id } = e;
    const did = id - this.lastId - 1;
    const dprev = id - e.prev;
    this.lastId = id;
    const integral = Number.isSafeInteger(ts);
    const dt = integral ? ts - this.lastTs : 0;
    if (integral) this.lastTs = ts;
    // the key's scope and sequence number: as recorded, or the digits after the key's last dot
    let scopeId: string | undefined;
    let seq = 0;
    let key = '';
    if (e instanceof JournalEvent) {
      scopeId = e.scopeId;
      seq = e.seq;
    } else {
      key = e.key;
      seq = this.parseKey(key);
      scopeId = this.parsedScope;
    }
    let scope: ScopeState | undefined;
    let scopeName: string | undefined;
    let q = 0;
    if (scopeId === undefined) {
      this.lastScope = undefined;
    } else {
      scope = this.lastScope;
      if (scope === undefined || scope.name !== scopeId) {
        scopeName = scopeId;
        scope = this.scopes.get(scopeName);
      }
      if (scope === undefined) {
        q = seq;
        this.lastScope = this.declareScope(scopeName as string, seq);
      } else {
        q = seq - scope.last - 1;
        scope.last = seq;
        if (integral && scope === this.lastScope && q === 0 && dt === 0 && did === 0 && dprev === 1) {
          if (typeof type === 'number') w.number(type);
          else w.raw(type);
          return;
        }
        this.lastScope = scope;
        scopeName = undefined;
      }
    }
    w.byte(91);
    if (typeof type === 'number') w.number(type);
    else w.raw(type);
    w.byte(44);
    if (this.lastScope === undefined) {
      w.byte(91);
      w.raw(quote(key));
      w.byte(93);
    } else if (scopeName !== undefined)
      quoteOnce(w, scopeName); // a new scope: named once per history
    else w.number(this.lastScope.index);
    w.byte(44);
    w.number(q);
    w.byte(44);
    if (integral) w.number(dt);
    else {
      w.byte(91);
      w.number(ts);
      w.byte(93);
    }
    w.byte(44);
    w.number(did);
    w.byte(44);
    w.number(dprev);
    w.byte(93);
  }

  private declareScope(name: string, seq: number): ScopeState {
    const scope = { name, index: this.scopeList.length, last: seq };
    this.scopes.set(name, scope);
    this.scopeList.push(scope);
    return scope;
  }

  /** A payload text: its number when written before, else the text (numbered from now on). */
  private payload(w: ByteWriter, text: string): void {
    const ref = this.payloadRefs.get(text);
    if (ref !== undefined) {
      w.number(ref);
      return;
    }
    this.payloadRefs.set(text, this.payloads.length);
    this.payloads.push(text);
    w.text(JSON.stringify(text));
  }

  private details(w: ByteWriter, details: Record<string, unknown>): void {
    w.byte(123); // {
    let first = true;
    for (const k in details) {
      const v = details[k];
      if (v === undefined) continue;
      if (!first) w.byte(44);
      first = false;
      w.raw(quote(k));
      w.byte(58); // :
      if (PAYLOAD_KEYS.has(k)) {
        if (typeof v === 'string') this.payload(w, v);
        else w.text(`[${JSON.stringify(v)}]`);
      } else if (v === NOT_TRUNCATED && TRUNCATION_KEYS.has(k)) w.byte(48);
      // short texts (resources, names, error codes) recur: their quoted bytes are cached
      else if (typeof v === 'string' && v.length <= MAX_QUOTED_VALUE) w.raw(quote(v));
      else if (typeof v === 'number' && Number.isSafeInteger(v)) w.number(v);
      else w.text(JSON.stringify(v));
    }
    w.byte(125); // }
  }

  // ---- decoding ---------------------------------------------------------------------------------

  /** Appends the events of one parsed format-2 line to `out`. */
  decodeLine(line: readonly unknown[], out: StoredEvent[]): void {
    for (let i = 1; i < line.length; i++) out.push(this.decode(line[i] as unknown[]));
  }

  /** Continues after events stored in the older format (explicit ids and timestamps). */
  follow(event: StoredEvent): void {
    this.lastId = event.id;
    if (Number.isSafeInteger(event.ts)) this.lastTs = event.ts;
  }

  private decode(r: readonly unknown[]): StoredEvent {
    const head = r[0];
    let c: unknown;
    let key: string;
    let ts: number;
    let id: number;
    let prev: number;
    if (Array.isArray(head)) {
      const [type, s, q, dt, did, dprev] = head as [unknown, unknown, number, unknown, number, number];
      c = type;
      if (Array.isArray(s)) {
        key = String(s[0]);
        this.lastScope = undefined;
      } else {
        let scope: ScopeState;
        if (typeof s === 'number') {
          scope = this.scopeList[s] as ScopeState;
          scope.last += 1 + q;
        } else scope = this.declareScope(String(s), q);
        key = `${scope.name}.${scope.last}`;
        this.lastScope = scope;
      }
      if (Array.isArray(dt)) ts = Number(dt[0]);
      else {
        ts = this.lastTs + Number(dt);
        this.lastTs = ts;
      }
      id = this.lastId + 1 + did;
      prev = id - dprev;
    } else {
      c = head;
      const scope = this.lastScope as ScopeState;
      scope.last += 1;
      key = `${scope.name}.${scope.last}`;
      ts = this.lastTs;
      id = this.lastId + 1;
      prev = id - 1;
    }
    this.lastId = id;
    const type = typeof c === 'number' ? (EVENT_TYPES[c] as string) : String(c);
    if (typeof c === 'number' && c < STATE_CODES) {
      const name = r[1] as string;
      if (c % 2 === 0) {
        const details = { name, input: this.payloadOf(r[2]), inputDetails: NOT_TRUNCATED };
        return { id, prev, ts, type, key, details };
      }
      const details = { name, output: this.payloadOf(r[2]), outputDetails: NOT_TRUNCATED };
      const next = r[4];
      const entered = id - (r[3] as number);
      const internal: Record<string, unknown> = next === 0 ? { entered } : { entered, next };
      if (r.length > 5) internal.assigned = r[5];
      return { id, prev, ts, type, key, details, internal };
    }
    if (r.length === 1) return { id, prev, ts, type, key };
    const encoded = r[1];
    const internal = r[2] as Record<string, unknown> | undefined;
    if (encoded === 0) return { id, prev, ts, type, key, internal: internal as Record<string, unknown> };
    const details = this.detailsOf(encoded as Record<string, unknown>);
    return internal === undefined
      ? { id, prev, ts, type, key, details }
      : { id, prev, ts, type, key, details, internal };
  }

  private payloadOf(v: unknown): string {
    if (typeof v === 'number') return this.payloads[v] as string;
    const text = String(v);
    this.payloadRefs.set(text, this.payloads.length);
    this.payloads.push(text);
    return text;
  }

  private detailsOf(encoded: Record<string, unknown>): Record<string, unknown> {
    for (const k in encoded) {
      const v = encoded[k];
      if (PAYLOAD_KEYS.has(k)) encoded[k] = Array.isArray(v) ? v[0] : this.payloadOf(v);
      else if (v === 0 && TRUNCATION_KEYS.has(k)) encoded[k] = NOT_TRUNCATED;
    }
    return encoded;
  }
}

/** Quoted names (state names, event types, scopes) repeat from event to event: kept once each, as UTF-8. */
const quoted = new Map<string, Uint8Array>();
/** Copies of their own: a small `Buffer.from` is a slice of an 8 KiB pool, which a kept slice keeps whole. */
const utf8 = new TextEncoder();

/** `JSON.stringify(text)` as UTF-8 bytes, remembered. */
function quote(text: string): Uint8Array {
  let q = quoted.get(text);
  if (q === undefined) {
    if (quoted.size >= 4096) quoted.clear();
    q = utf8.encode(JSON.stringify(text));
    quoted.set(text, q);
  }
  return q;
}

/**
 * A text written once (a new scope's name, e.g. one per Map iteration): quoted straight into the
 * line when it needs no escaping, without a cached copy that would only push others out.
 */
function quoteOnce(w: ByteWriter, text: string): void {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
      w.text(JSON.stringify(text));
      return;
    }
  }
  w.byte(0x22);
  w.text(text);
  w.byte(0x22);
}

/** Every codec encodes into this one buffer; a line is written before the next is encoded. */
const writer = new ByteWriter();

/**
 * Whether a `*StateEntered` event has `{ name, input, inputDetails: NOT_TRUNCATED }`. Its details
 * are built in one place (interpreter.ts runState) with exactly these members; the history
 * golden test reads every conformance history back from the store to hold that.
 */
function enteredFits(
  details: Record<string, unknown> | undefined,
  internal: Record<string, unknown> | undefined,
): boolean {
  return (
    details !== undefined &&
    internal === undefined &&
    details.inputDetails === NOT_TRUNCATED &&
    typeof details.name === 'string' &&
    typeof details.input === 'string'
  );
}

/**
 * Whether a `*StateExited` event has `{ name, output, outputDetails: NOT_TRUNCATED }` and internal
 * `{ entered, next?, assigned? }`, as interpreter.ts exitState alone builds them.
 */
function exitedFits(
  details: Record<string, unknown> | undefined,
  internal: Record<string, unknown> | undefined,
): boolean {
  if (details === undefined || internal === undefined || details.outputDetails !== NOT_TRUNCATED)
    return false;
  const { entered, next } = internal;
  if (typeof details.name !== 'string' || typeof details.output !== 'string' || typeof entered !== 'number')
    return false;
  return next === undefined || typeof next === 'string';
}

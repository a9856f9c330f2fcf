/**
 * The compact durable form of history events (store format 2). A history repeats itself: a
 * state's input is the previous state's output, a Pass passes its input on, a Lambda's input is
 * the state's input; ids, previous ids, timestamps and keys mostly step by one or not at all. So
 * each event is written as a short JSON array of small numbers, and every payload text (`input`,
 * `output`, `parameters`) is written once per execution and then referred to by its number.
 * Lines are hand-built JSON (no wrapper objects to stringify) and read back with one JSON.parse;
 * {@link EventCodec.decodeLine} rebuilds exactly the events that were encoded.
 *
 * A line is `[2,record,...]`. A record is `[type, scope, seq, dt, did, dprev, ...fields]`:
 * - type: index into {@link EVENT_TYPES} (which also fixes the fields), or the type name itself
 *   (then the fields are the generic `details, internal?`);
 * - scope: index of a scope seen before, a string (a new scope, numbered in order), or `[key]`
 *   for a key that is not `<scope>.<integer>`;
 * - seq: the sequence number minus (the scope's last one + 1);
 * - dt: milliseconds since the previous event (or `[ts]` when not an integer);
 * - did: id minus the expected id (previous + 1); dprev: id minus previousEventId.
 * Payloads: a number refers to a payload text written before; a string is a new one; `[value]`
 * is a value that is not a string, verbatim.
 * EVENT_TYPES is part of the format: only ever append to it.
 */
import { NOT_TRUNCATED, type StoredEvent } from './history.ts';

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

  /** One line (with its newline) holding `events`. */
  encodeBatch(events: readonly StoredEvent[]): string {
    let line = '[2';
    for (const e of events) line += `,${this.encode(e)}`;
    return `${line}]\n`;
  }

  private encode(e: StoredEvent): string {
    const { details, internal } = e;
    let code = CODES.get(e.type);
    let fields: string | undefined;
    if (code !== undefined && code < STATE_CODES) {
      fields = code % 2 === 0 ? this.enteredFields(details, internal) : this.exitedFields(e);
      if (fields === undefined) code = undefined;
    }
    let head = code === undefined ? JSON.stringify(e.type) : String(code);
    head += `,${this.keyFields(e.key)},${this.timeField(e.ts)},${e.id - this.lastId - 1},${e.id - e.prev}`;
    this.lastId = e.id;
    if (fields === undefined && (details !== undefined || internal !== undefined)) {
      fields = details === undefined ? '0' : this.detailsText(details);
      if (internal !== undefined) fields += `,${JSON.stringify(internal)}`;
    }
    return fields === undefined ? `[${head}]` : `[${head},${fields}]`;
  }

  /** `name, payload` of `{ name, input, inputDetails: NOT_TRUNCATED }`, else undefined. */
  private enteredFields(
    details: Record<string, unknown> | undefined,
    internal: Record<string, unknown> | undefined,
  ): string | undefined {
    if (!details || internal !== undefined || details.inputDetails !== NOT_TRUNCATED) return undefined;
    const { name, input } = details;
    if (typeof name !== 'string' || typeof input !== 'string' || countKeys(details) !== 3) return undefined;
    return `${JSON.stringify(name)},${this.payloadField(input)}`;
  }

  /**
   * `name, payload, id − entered, next | 0[, assigned]` of `{ name, output, outputDetails }` with
   * internal `{ entered, next?, assigned? }`, else undefined.
   */
  private exitedFields(e: StoredEvent): string | undefined {
    const { details, internal } = e;
    if (!details || !internal || details.outputDetails !== NOT_TRUNCATED) return undefined;
    const { name, output } = details;
    const { entered, next, assigned } = internal;
    if (typeof name !== 'string' || typeof output !== 'string' || typeof entered !== 'number')
      return undefined;
    if (next !== undefined && typeof next !== 'string') return undefined;
    if (countKeys(details) !== 3) return undefined;
    const internalKeys = 1 + (next === undefined ? 0 : 1) + (assigned === undefined ? 0 : 1);
    if (countKeys(internal) !== internalKeys) return undefined;
    let fields = `${JSON.stringify(name)},${this.payloadField(output)},${e.id - entered},${next === undefined ? 0 : JSON.stringify(next)}`;
    if (assigned !== undefined) fields += `,${JSON.stringify(assigned)}`;
    return fields;
  }

  private keyFields(key: string): string {
    const dot = key.lastIndexOf('.');
    const seq = dot < 0 ? Number.NaN : Number(key.slice(dot + 1));
    if (!Number.isSafeInteger(seq) || seq < 0 || key.length - dot - 1 !== digits(seq)) {
      return `[${JSON.stringify(key)}],0`;
    }
    const name = key.slice(0, dot);
    const known = this.scopes.get(name);
    if (known) {
      const q = seq - known.last - 1;
      known.last = seq;
      return `${known.index},${q}`;
    }
    this.declareScope(name, seq);
    return `${JSON.stringify(name)},${seq}`;
  }

  private declareScope(name: string, seq: number): void {
    const scope = { name, index: this.scopeList.length, last: seq };
    this.scopes.set(name, scope);
    this.scopeList.push(scope);
  }

  private timeField(ts: number): string {
    if (!Number.isSafeInteger(ts)) return `[${JSON.stringify(ts)}]`;
    const dt = ts - this.lastTs;
    this.lastTs = ts;
    return String(dt);
  }

  private payloadField(text: string): string {
    const ref = this.payloadRefs.get(text);
    if (ref !== undefined) return String(ref);
    this.payloadRefs.set(text, this.payloads.length);
    this.payloads.push(text);
    return JSON.stringify(text);
  }

  private detailsText(details: Record<string, unknown>): string {
    let text = '{';
    for (const k in details) {
      const v = details[k];
      if (v === undefined) continue;
      if (text.length > 1) text += ',';
      text += `${JSON.stringify(k)}:`;
      if (PAYLOAD_KEYS.has(k))
        text += typeof v === 'string' ? this.payloadField(v) : `[${JSON.stringify(v)}]`;
      else if (v === NOT_TRUNCATED && TRUNCATION_KEYS.has(k)) text += '0';
      else text += JSON.stringify(v);
    }
    return `${text}}`;
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
    const [c, s, q, dt, did, dprev] = r as [unknown, unknown, number, unknown, number, number];
    const type = typeof c === 'number' ? (EVENT_TYPES[c] as string) : String(c);
    let key: string;
    if (Array.isArray(s)) key = String(s[0]);
    else if (typeof s === 'number') {
      const scope = this.scopeList[s] as ScopeState;
      scope.last += 1 + q;
      key = `${scope.name}.${scope.last}`;
    } else {
      this.declareScope(String(s), q);
      key = `${String(s)}.${q}`;
    }
    let ts: number;
    if (Array.isArray(dt)) ts = Number(dt[0]);
    else {
      ts = this.lastTs + Number(dt);
      this.lastTs = ts;
    }
    const id = this.lastId + 1 + did;
    this.lastId = id;
    const prev = id - dprev;
    if (typeof c === 'number' && c < STATE_CODES) {
      const name = r[6] as string;
      if (c % 2 === 0) {
        const details = { name, input: this.payloadOf(r[7]), inputDetails: NOT_TRUNCATED };
        return { id, prev, ts, type, key, details };
      }
      const details = { name, output: this.payloadOf(r[7]), outputDetails: NOT_TRUNCATED };
      const next = r[9];
      const internal: Record<string, unknown> =
        next === 0 ? { entered: id - (r[8] as number) } : { entered: id - (r[8] as number), next };
      if (r.length > 10) internal.assigned = r[10];
      return { id, prev, ts, type, key, details, internal };
    }
    if (r.length <= 6) return { id, prev, ts, type, key };
    const encoded = r[6];
    const internal = r[7] as Record<string, unknown> | undefined;
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

function countKeys(object: object): number {
  let n = 0;
  for (const _ in object) n++;
  return n;
}

function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : String(n).length;
}

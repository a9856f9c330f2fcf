/**
 * The compact durable form of history events (store format 3; format 2 is still read). A history
 * repeats itself: a state's input is the previous state's output, a Pass passes its input on, a
 * Lambda's input is the state's input, the state entered next is the one the previous exit named;
 * ids, previous ids, timestamps and keys mostly step by one or not at all. So each event is a
 * short JSON record that leaves out whatever follows from the events before it in its scope, and
 * every payload text (`input`, `output`, `parameters`) is written once per execution and then
 * referred to by its number. Lines are hand-built (no wrapper objects to stringify) and read back
 * with one JSON.parse; {@link EventCodec.decodeLine} rebuilds exactly the events that were encoded.
 *
 * A format-3 line is `[3,record,...]`, then, when the line brings new payload texts that need no
 * escaping, a tab and those texts one after the other, as they are (see payloads below), then the
 * newline. A record is `[head, ...fields]`, or the head alone (a number, or a string for a type
 * not in {@link EVENT_TYPES}) when the event has no fields to write. The head is the type alone
 * when the event continues the previous one (same scope, next sequence number, same millisecond,
 * id and previous id one on), else `[type, scope, seq, dt, did, dprev]`:
 * - type: index into {@link EVENT_TYPES} (which also fixes the fields), or the type name itself
 *   (then the fields are the generic `details | 0, internal?`);
 * - scope: index of a scope seen before; a string (a new scope, numbered in order); -1, a new
 *   scope named as the scope declared last with its trailing number one up (the next Map
 *   iteration or Parallel branch); or `[key]` for a key that is not `<scope>.<integer>`;
 * - seq: the sequence number minus (the scope's last one + 1) (a new scope: the number itself);
 * - dt: milliseconds since the previous event (or `[ts]` when not an integer);
 * - did: id minus the expected id (previous + 1); dprev: id minus previousEventId.
 * State events: `*StateEntered` is `[head, name, input]` and `*StateExited` is
 * `[head, next | 0, output, dEntered, name, assigned]` (dEntered: id minus the id of the state's
 * `*StateEntered`). A field equal to what its scope implies is left out when it is last, else
 * written as `null`: the name entered is the `next` of the scope's last exit; the name exited and
 * the entered id are those of the scope's last `*StateEntered`; a payload is the last payload text
 * of the scope (of any event).
 * Generic details (`details | 0`): an object, or `[value, ...]` with the members, in order, of the
 * last details of the same type that were written as an object (the type's shape; a type not in
 * EVENT_TYPES always writes an object).
 * Payloads: a number ≥ 0 refers to a payload text written before; a string is a new one; −(n+1) is
 * a new one of n UTF-16 code units, the next in the line's raw texts (a text with no newline and
 * no lone surrogate: written without escaping); `[value]` is a value that is not a string, verbatim.
 * EVENT_TYPES is part of the format: only ever append to it.
 *
 * Format 2 (read only) is the same without omitted fields, bare heads, sibling scopes, shapes
 * and raw texts: `[2,record,...]`, entered `[head, name, input]`, exited `[head, name, output, dEntered,
 * next | 0, assigned?]`.
 */
import { ByteWriter } from './byte-writer.ts';
import {
  NOT_TRUNCATED,
  ScopedEvent,
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

const CODES: ReadonlyMap<string, number> = new Map(EVENT_TYPES.map((t, i) => [t, i]));

/** How many of the type strings looked up last a codec remembers (see {@link EventCodec.codeOf}). */
const RECENT_TYPES = 8;
/** Codes below this are `*StateEntered` (even) and `*StateExited` (odd). */
const STATE_CODES = STATE_TYPES.length * 2;

/** Detail members holding payload text. */
const PAYLOAD_KEYS: ReadonlySet<string> = new Set(['input', 'output', 'parameters']);
/** Detail members that are usually the shared NOT_TRUNCATED object (written as 0). */
const TRUNCATION_KEYS: ReadonlySet<string> = new Set(['inputDetails', 'outputDetails']);

/** Longest detail text whose quoted bytes are cached (longer ones, e.g. causes, rarely recur). */
const MAX_QUOTED_VALUE = 128;

/** Recent payload texts the encoder compares a payload with before writing it anew. */
const RECENT_PAYLOADS = 8;

/** The first element of a format-2 line (read only). */
export const FORMAT_2 = 2;
/** The first element of every line this codec writes. */
export const FORMAT_3 = 3;

interface ScopeState {
  readonly name: string;
  readonly index: number;
  /** The last sequence number written or read in this scope. */
  last: number;
  /** Length of the name without its trailing decimal number, and that number (−1: none). */
  readonly stem: number;
  readonly number: number;
  // what the scope implies for the next state record (format 3)
  /** The `next` of the scope's last `*StateExited`. */
  expect: string | undefined;
  /** Name and id of the scope's last `*StateEntered`. */
  enteredName: string | undefined;
  enteredId: number;
  /** The scope's last payload text and its number. */
  payload: string | undefined;
  payloadRef: number;
}

/** The head of the event being encoded, worked out before anything is written. */
interface Head {
  /** Whether the event continues the previous one (the head is the type alone). */
  continues: boolean;
  /** The event's scope; undefined when its key is not `<scope>.<integer>`. */
  scope: ScopeState | undefined;
  /** The scope is new: declared as the last one's sibling (−1) or by name. */
  declared: 'no' | 'sibling' | 'named';
  key: string;
  q: number;
  dt: number;
  integral: boolean;
  ts: number;
  did: number;
  dprev: number;
}

/**
 * Encoder and decoder state of one history file: the scopes and payload texts seen so far, the
 * last timestamp and id. A log encodes with the state its file's lines leave behind.
 */
export class EventCodec {
  /**
   * The type strings looked up last and their codes, round robin. The history's events share
   * their type strings (one per state type and event kind), so comparing is mostly comparing
   * pointers, where the map compares the text with its own copy of the key.
   */
  private readonly recentTypes: (string | undefined)[] = new Array(RECENT_TYPES).fill(undefined);
  private readonly recentCodes: (number | undefined)[] = new Array(RECENT_TYPES).fill(undefined);
  private recentType = 0;
  /** The buffer {@link encodeBatch} encodes into, made on first use. */
  private batchWriter: ByteWriter | undefined;
  private readonly scopes = new Map<string, ScopeState>();
  private readonly scopeList: ScopeState[] = [];
  /** Payload texts by number (decoding); the encoder only counts them. */
  private readonly payloads: string[] = [];
  private lastTs = 0;
  private lastId = 0;
  /** Scope of the last event (a short record continues it). */
  private lastScope: ScopeState | undefined;
  /** Scope declared last (a sibling is declared relative to it). */
  private lastDeclared: ScopeState | undefined;
  /** Recently written payload texts and their numbers, round robin (encoding). */
  private readonly recentTexts: (string | undefined)[] = new Array(RECENT_PAYLOADS).fill(undefined);
  private readonly recentRefs: number[] = new Array(RECENT_PAYLOADS).fill(0);
  private recentAt = 0;
  /** The shape of each event type's details (by code), see {@link Shape}. */
  private readonly shapes: (Shape | undefined)[] = [];
  /** New payload texts of the line being encoded that go raw after it. */
  private readonly rawTexts: string[] = [];
  private readonly h: Head = {
    continues: false,
    scope: undefined,
    declared: 'no',
    key: '',
    q: 0,
    dt: 0,
    integral: true,
    ts: 0,
    did: 0,
    dprev: 0,
  };

  /**
   * @param quotes Quoted names and short texts, as UTF-8: shared by the codecs of one store (names
   * recur from history to history); a codec of its own by default.
   */
  constructor(private readonly quotes: QuotedTexts = new QuotedTexts()) {}

  /**
   * One line (with its newline) holding `events`, as bytes to write at once: valid until this
   * codec's next call.
   */
  encodeBatch(events: readonly StoredEvent[]): Uint8Array {
    this.batchWriter ??= new ByteWriter();
    const w = this.batchWriter;
    w.reset();
    this.encodeInto(w, events);
    return w.bytes();
  }

  /** Appends one line (with its newline) holding `events` to `w`. */
  encodeInto(w: ByteWriter, events: readonly StoredEvent[]): void {
    const raw = this.rawTexts;
    raw.length = 0;
    w.byte(91); // [
    w.byte(51); // 3
    for (let i = 0; i < events.length; i++) {
      w.byte(44); // ,
      this.encode(w, events[i] as StoredEvent);
    }
    w.byte(93); // ]
    if (raw.length > 0) {
      w.byte(9); // \t
      for (let i = 0; i < raw.length; i++) w.text(raw[i] as string);
      raw.length = 0;
    }
    w.byte(10); // \n
  }

  /** The code of an event type (undefined: not in {@link EVENT_TYPES}). */
  private codeOf(type: string): number | undefined {
    const { recentTypes, recentCodes } = this;
    for (let i = 0; i < RECENT_TYPES; i++) if (recentTypes[i] === type) return recentCodes[i];
    const code = CODES.get(type);
    recentTypes[this.recentType] = type;
    recentCodes[this.recentType] = code;
    this.recentType = (this.recentType + 1) % RECENT_TYPES;
    return code;
  }

  private encode(w: ByteWriter, e: StoredEvent): void {
    const code = this.codeOf(e.type);
    if (code !== undefined && code < STATE_CODES) {
      // the history's own state events (ScopedEvent): their texts straight from the event, no details object
      if (e instanceof StateEnteredEvent) {
        this.entered(w, code, e, e.name, e.input);
        return;
      }
      if (e instanceof StateExitedEvent) {
        this.exited(w, code, e, e.name, e.output, e.entered, e.next, e.assigned);
        return;
      }
      const { details, internal } = e;
      if (code % 2 === 0) {
        if (enteredFits(details, internal)) {
          const d = details as Record<string, unknown>;
          this.entered(w, code, e, d.name as string, d.input as string);
          return;
        }
      } else if (exitedFits(details, internal)) {
        const d = details as Record<string, unknown>;
        const i = internal as Record<string, unknown>;
        this.exited(
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
    this.generic(w, code === undefined || code < STATE_CODES ? this.quotes.quote(e.type) : code, e);
  }

  /** `[head, name, input]`, leaving out what the scope implies. */
  private entered(w: ByteWriter, code: number, e: StoredEvent, name: string, input: string): void {
    const h = this.locate(e);
    const scope = h.scope;
    let fields = 2;
    if (scope !== undefined && input === scope.payload) {
      fields = 1;
      if (name === scope.expect) fields = 0;
    }
    let ref = -1;
    if (fields === 0 && h.continues) {
      w.number(code); // the bare head
    } else {
      w.byte(91);
      this.writeHead(w, code);
      if (fields > 0) {
        w.byte(44);
        if (scope !== undefined && name === scope.expect) w.raw(NULL);
        else writeName(w, name, this.quotes);
        if (fields > 1) {
          w.byte(44);
          ref = this.payload(w, input, scope);
        }
      }
      w.byte(93);
    }
    if (scope !== undefined) {
      scope.enteredName = name;
      scope.enteredId = e.id;
      if (ref >= 0) track(scope, input, ref);
    }
  }

  /** `[head, next | 0, output, dEntered, name, assigned]`, leaving out what the scope implies. */
  private exited(
    w: ByteWriter,
    code: number,
    e: StoredEvent,
    name: string,
    output: string,
    entered: number,
    next: string | undefined,
    assigned: unknown,
  ): void {
    const h = this.locate(e);
    const scope = h.scope;
    const impliedOutput = scope !== undefined && output === scope.payload;
    const impliedEntered = scope !== undefined && entered === scope.enteredId;
    const impliedName = scope !== undefined && name === scope.enteredName;
    let fields = 5;
    if (assigned === undefined) {
      fields = 4;
      if (impliedName) {
        fields = 3;
        if (impliedEntered) {
          fields = 2;
          if (impliedOutput) fields = 1;
        }
      }
    }
    w.byte(91);
    this.writeHead(w, code);
    w.byte(44);
    if (next === undefined) w.byte(48);
    else writeName(w, next, this.quotes);
    let ref = -1;
    if (fields > 1) {
      w.byte(44);
      if (impliedOutput) w.raw(NULL);
      else ref = this.payload(w, output, scope);
      if (fields > 2) {
        w.byte(44);
        if (impliedEntered) w.raw(NULL);
        else w.number(e.id - entered);
        if (fields > 3) {
          w.byte(44);
          if (impliedName) w.raw(NULL);
          else writeName(w, name, this.quotes);
          if (fields > 4) {
            w.byte(44);
            w.text(JSON.stringify(assigned));
          }
        }
      }
    }
    w.byte(93);
    if (scope !== undefined) {
      scope.expect = next;
      if (ref >= 0) track(scope, output, ref);
    }
  }

  /** Any other event: `[head, details | 0, internal?]`, or the head alone. */
  private generic(w: ByteWriter, type: number | Uint8Array, e: StoredEvent): void {
    const { details, internal } = e;
    const h = this.locate(e);
    if (details === undefined && internal === undefined && h.continues) {
      if (typeof type === 'number') w.number(type);
      else w.raw(type);
      return;
    }
    w.byte(91);
    this.writeHead(w, type);
    if (details !== undefined || internal !== undefined) {
      w.byte(44);
      if (details === undefined) w.byte(48);
      else if (typeof type !== 'number') this.details(w, details, h.scope);
      else {
        const shape = this.shapes[type];
        if (shape !== undefined && fitsShape(details, shape)) this.valuesOf(w, details, shape, h.scope);
        else this.shapes[type] = this.details(w, details, h.scope);
      }
      if (internal !== undefined) {
        w.byte(44);
        w.text(JSON.stringify(internal));
      }
    }
    w.byte(93);
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

  /** Works out the head of `e` (into {@link h}) and moves the codec's position on past it. */
  private locate(e: StoredEvent): Head {
    const h = this.h;
    const { ts, id } = e;
    const did = id - this.lastId - 1;
    const dprev = id - e.prev;
    this.lastId = id;
    const integral = Number.isSafeInteger(ts);
    const dt = integral ? ts - this.lastTs : 0;
    if (integral) this.lastTs = ts;
    h.ts = ts;
    h.integral = integral;
    h.dt = dt;
    h.did = did;
    h.dprev = dprev;
    h.declared = 'no';
    h.continues = false;
    // the key's scope and sequence number: as recorded, or the digits after the key's last dot
    let scopeId: string | undefined;
    let seq = 0;
    if (e instanceof ScopedEvent) {
      scopeId = e.scopeId;
      seq = e.seq;
    } else {
      h.key = e.key;
      seq = this.parseKey(h.key);
      scopeId = this.parsedScope;
    }
    if (scopeId === undefined) {
      this.lastScope = undefined;
      h.scope = undefined;
      return h;
    }
    let scope = this.lastScope;
    if (scope === undefined || scope.name !== scopeId) scope = this.scopes.get(scopeId);
    if (scope === undefined) {
      h.q = seq;
      h.declared = this.isSibling(scopeId) ? 'sibling' : 'named';
      scope = this.declareScope(scopeId, seq);
    } else {
      const q = seq - scope.last - 1;
      h.q = q;
      scope.last = seq;
      h.continues = integral && scope === this.lastScope && q === 0 && dt === 0 && did === 0 && dprev === 1;
    }
    this.lastScope = scope;
    h.scope = scope;
    return h;
  }

  /** `[type, scope, seq, dt, did, dprev]` of the event {@link locate} worked out, or the type alone. */
  private writeHead(w: ByteWriter, type: number | Uint8Array): void {
    const h = this.h;
    if (h.continues) {
      if (typeof type === 'number') w.number(type);
      else w.raw(type);
      return;
    }
    w.byte(91);
    if (typeof type === 'number') w.number(type);
    else w.raw(type);
    w.byte(44);
    const scope = h.scope;
    if (scope === undefined) {
      w.byte(91);
      w.raw(this.quotes.quote(h.key));
      w.byte(93);
    } else if (h.declared === 'sibling') w.number(-1);
    else if (h.declared === 'named')
      quoteOnce(w, scope.name); // a new scope: named once per history
    else w.number(scope.index);
    w.byte(44);
    w.number(h.q);
    w.byte(44);
    if (h.integral) w.number(h.dt);
    else {
      w.byte(91);
      w.number(h.ts);
      w.byte(93);
    }
    w.byte(44);
    w.number(h.did);
    w.byte(44);
    w.number(h.dprev);
    w.byte(93);
  }

  /** Whether a new scope is named as the one declared last with its trailing number one up. */
  private isSibling(name: string): boolean {
    const last = this.lastDeclared;
    if (last === undefined || last.number < 0) return false;
    const stem = stemLength(name);
    if (stem !== last.stem || trailingNumber(name, stem) !== last.number + 1) return false;
    const before = last.name;
    for (let i = 0; i < stem; i++) if (name.charCodeAt(i) !== before.charCodeAt(i)) return false;
    return true;
  }

  private declareScope(name: string, seq: number): ScopeState {
    const stem = stemLength(name);
    const scope: ScopeState = {
      name,
      index: this.scopeList.length,
      last: seq,
      stem,
      number: trailingNumber(name, stem),
      expect: undefined,
      enteredName: undefined,
      enteredId: 0,
      payload: undefined,
      payloadRef: -1,
    };
    this.scopes.set(name, scope);
    this.scopeList.push(scope);
    this.lastDeclared = scope;
    return scope;
  }

  /**
   * A payload text: its number when the scope's last payload or a recent one has the same text,
   * else the text (numbered from now on), raw after the line when it needs no escaping.
   */
  private payload(w: ByteWriter, text: string, scope: ScopeState | undefined): number {
    if (scope !== undefined && scope.payload === text) {
      w.number(scope.payloadRef);
      return scope.payloadRef;
    }
    const texts = this.recentTexts;
    for (let i = 0; i < RECENT_PAYLOADS; i++) {
      if (texts[i] === text) {
        const ref = this.recentRefs[i] as number;
        w.number(ref);
        return ref;
      }
    }
    const ref = this.payloads.length;
    this.payloads.push(text);
    const at = this.recentAt;
    texts[at] = text;
    this.recentRefs[at] = ref;
    this.recentAt = (at + 1) % RECENT_PAYLOADS;
    if (text.indexOf('\n') < 0 && isWellFormed(text)) {
      w.number(-text.length - 1);
      this.rawTexts.push(text);
    } else w.text(JSON.stringify(text));
    return ref;
  }

  /** Details as an object; returns its shape (the members written). */
  private details(
    w: ByteWriter,
    details: Record<string, unknown>,
    scope: ScopeState | undefined,
  ): Shape | undefined {
    w.byte(123); // {
    const keys: string[] = [];
    for (const k in details) {
      const v = details[k];
      if (v === undefined) continue;
      if (keys.length > 0) w.byte(44);
      keys.push(k);
      w.raw(this.quotes.quote(k));
      w.byte(58); // :
      this.value(w, v, kindOf(k), scope);
    }
    w.byte(125); // }
    return shapeOf(keys);
  }

  /** Details of the type's shape: `[value, ...]` in the shape's order. */
  private valuesOf(
    w: ByteWriter,
    details: Record<string, unknown>,
    shape: Shape,
    scope: ScopeState | undefined,
  ): void {
    w.byte(91); // [
    const { keys, kinds } = shape;
    for (let i = 0; i < keys.length; i++) {
      if (i > 0) w.byte(44);
      this.value(w, details[keys[i] as string], kinds[i] as number, scope);
    }
    w.byte(93); // ]
  }

  private value(w: ByteWriter, v: unknown, kind: number, scope: ScopeState | undefined): void {
    if (kind === PAYLOAD) {
      if (typeof v === 'string') {
        const ref = this.payload(w, v, scope);
        if (scope !== undefined) track(scope, v, ref);
      } else w.text(`[${JSON.stringify(v)}]`);
    } else if (v === NOT_TRUNCATED && kind === TRUNCATION) w.byte(48);
    // short texts (resources, names, error codes) recur: their quoted bytes are cached
    else if (typeof v === 'string' && v.length <= MAX_QUOTED_VALUE) w.raw(this.quotes.quote(v));
    else if (typeof v === 'number' && Number.isSafeInteger(v)) w.number(v);
    else w.text(JSON.stringify(v));
  }

  // ---- decoding ---------------------------------------------------------------------------------

  /**
   * Appends the events of one parsed line (format 2 or 3) to `out`; `raw` is the line's text after
   * its tab (format 3: the new payload texts written as they are).
   */
  decodeLine(line: readonly unknown[], out: StoredEvent[], raw = ''): void {
    if (line[0] === FORMAT_2) {
      for (let i = 1; i < line.length; i++) out.push(this.decode2(line[i] as unknown[]));
      return;
    }
    this.raw = raw;
    this.rawAt = 0;
    for (let i = 1; i < line.length; i++) out.push(this.decode3(line[i]));
    this.raw = '';
  }

  /** The raw texts of the line being decoded, and how far they are read. */
  private raw = '';
  private rawAt = 0;

  /** Continues after events stored in the older format (explicit ids and timestamps). */
  follow(event: StoredEvent): void {
    this.lastId = event.id;
    if (Number.isSafeInteger(event.ts)) this.lastTs = event.ts;
  }

  /** Reads a head (format 2 or 3) into {@link h}: key, ts, id and prev come out as `decoded`. */
  private readHead(head: unknown): unknown {
    let c: unknown;
    const d = this.decoded;
    if (Array.isArray(head)) {
      const [type, s, q, dt, did, dprev] = head as [unknown, unknown, number, unknown, number, number];
      c = type;
      if (Array.isArray(s)) {
        d.key = String(s[0]);
        d.scope = undefined;
        this.lastScope = undefined;
      } else {
        let scope: ScopeState;
        if (typeof s === 'number' && s >= 0) {
          scope = this.scopeList[s] as ScopeState;
          scope.last += 1 + q;
        } else if (s === -1) {
          const last = this.lastDeclared as ScopeState;
          scope = this.declareScope(`${last.name.slice(0, last.stem)}${last.number + 1}`, q);
        } else scope = this.declareScope(String(s), q);
        d.key = `${scope.name}.${scope.last}`;
        d.scope = scope;
        this.lastScope = scope;
      }
      if (Array.isArray(dt)) d.ts = Number(dt[0]);
      else {
        d.ts = this.lastTs + Number(dt);
        this.lastTs = d.ts;
      }
      d.id = this.lastId + 1 + did;
      d.prev = d.id - dprev;
    } else {
      c = head;
      const scope = this.lastScope as ScopeState;
      scope.last += 1;
      d.key = `${scope.name}.${scope.last}`;
      d.scope = scope;
      d.ts = this.lastTs;
      d.id = this.lastId + 1;
      d.prev = d.id - 1;
    }
    this.lastId = d.id;
    return c;
  }

  private readonly decoded: {
    key: string;
    scope: ScopeState | undefined;
    ts: number;
    id: number;
    prev: number;
  } = { key: '', scope: undefined, ts: 0, id: 0, prev: 0 };

  private decode2(r: readonly unknown[]): StoredEvent {
    const c = this.readHead(r[0]);
    const { id, prev, ts, key } = this.decoded;
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
    return this.genericOf(r, type, -1, undefined);
  }

  private decode3(record: unknown): StoredEvent {
    const r = (Array.isArray(record) ? record : [record]) as readonly unknown[];
    const c = this.readHead(r[0]);
    const { id, prev, ts, key, scope } = this.decoded;
    const type = typeof c === 'number' ? (EVENT_TYPES[c] as string) : String(c);
    if (typeof c === 'number' && c < STATE_CODES) {
      // implied fields come from the scope: a record without one (odd key) has them all
      const s = scope as ScopeState;
      if (c % 2 === 0) {
        const name = (r[1] ?? s.expect) as string;
        const input = r.length > 2 ? this.payloadOf(r[2]) : (s.payload as string);
        if (scope !== undefined) {
          scope.enteredName = name;
          scope.enteredId = id;
          if (r.length > 2) track(scope, input, this.lastRef);
        }
        return { id, prev, ts, type, key, details: { name, input, inputDetails: NOT_TRUNCATED } };
      }
      const next = r[1] === 0 ? undefined : (r[1] as string);
      const explicitOutput = (r[2] ?? null) !== null;
      const output = explicitOutput ? this.payloadOf(r[2]) : (s.payload as string);
      const entered = (r[3] ?? null) === null ? s.enteredId : id - (r[3] as number);
      const name = (r[4] ?? s.enteredName) as string;
      const internal: Record<string, unknown> = next === undefined ? { entered } : { entered, next };
      if (r.length > 5) internal.assigned = r[5];
      if (scope !== undefined) {
        scope.expect = next;
        if (explicitOutput) track(scope, output, this.lastRef);
      }
      return {
        id,
        prev,
        ts,
        type,
        key,
        details: { name, output, outputDetails: NOT_TRUNCATED },
        internal,
      };
    }
    return this.genericOf(r, type, typeof c === 'number' ? c : -1, scope);
  }

  /** A generic record; `code` ≥ 0 when its type has a shape (format 3). */
  private genericOf(
    r: readonly unknown[],
    type: string,
    code: number,
    scope: ScopeState | undefined,
  ): StoredEvent {
    const { id, prev, ts, key } = this.decoded;
    if (r.length === 1) return { id, prev, ts, type, key };
    const encoded = r[1];
    const internal = r[2] as Record<string, unknown> | undefined;
    if (encoded === 0) return { id, prev, ts, type, key, internal: internal as Record<string, unknown> };
    let details: Record<string, unknown>;
    if (Array.isArray(encoded)) details = this.detailsByShape(encoded, this.shapes[code] as Shape, scope);
    else {
      details = this.detailsOf(encoded as Record<string, unknown>, scope);
      if (code >= 0) this.shapes[code] = shapeOf(Object.keys(details));
    }
    return internal === undefined
      ? { id, prev, ts, type, key, details }
      : { id, prev, ts, type, key, details, internal };
  }

  /** Number of the payload {@link payloadOf} read last. */
  private lastRef = -1;

  private payloadOf(v: unknown): string {
    if (typeof v === 'number' && v >= 0) {
      this.lastRef = v;
      return this.payloads[v] as string;
    }
    let text: string;
    if (typeof v === 'number') {
      // a raw text: the next −v − 1 code units of the line's raw part
      const end = this.rawAt - v - 1;
      text = this.raw.slice(this.rawAt, end);
      this.rawAt = end;
    } else text = String(v);
    this.lastRef = this.payloads.length;
    this.payloads.push(text);
    return text;
  }

  private detailsByShape(
    values: readonly unknown[],
    shape: Shape,
    scope: ScopeState | undefined,
  ): Record<string, unknown> {
    const details: Record<string, unknown> = {};
    const { keys, kinds } = shape;
    for (let i = 0; i < keys.length; i++) {
      const v = values[i];
      const kind = kinds[i];
      if (kind === PAYLOAD) {
        if (Array.isArray(v)) details[keys[i] as string] = v[0];
        else {
          const text = this.payloadOf(v);
          details[keys[i] as string] = text;
          if (scope !== undefined) track(scope, text, this.lastRef);
        }
      } else details[keys[i] as string] = v === 0 && kind === TRUNCATION ? NOT_TRUNCATED : v;
    }
    return details;
  }

  private detailsOf(
    encoded: Record<string, unknown>,
    scope: ScopeState | undefined,
  ): Record<string, unknown> {
    for (const k in encoded) {
      const v = encoded[k];
      if (PAYLOAD_KEYS.has(k)) {
        if (Array.isArray(v)) encoded[k] = v[0];
        else {
          const text = this.payloadOf(v);
          encoded[k] = text;
          if (scope !== undefined) track(scope, text, this.lastRef);
        }
      } else if (v === 0 && TRUNCATION_KEYS.has(k)) encoded[k] = NOT_TRUNCATED;
    }
    return encoded;
  }
}

const OTHER = 0;
const PAYLOAD = 1;
const TRUNCATION = 2;

function kindOf(key: string): number {
  return PAYLOAD_KEYS.has(key) ? PAYLOAD : TRUNCATION_KEYS.has(key) ? TRUNCATION : OTHER;
}

/**
 * The members of a type's last details written as an object, in order: later details with
 * exactly these members are written as `[value, ...]`. Not for members that an object literal
 * cannot take back as they are (`__proto__`).
 */
interface Shape {
  readonly keys: readonly string[];
  readonly kinds: readonly number[];
}

function shapeOf(keys: readonly string[]): Shape | undefined {
  if (keys.length === 0 || keys.includes('__proto__')) return undefined;
  return { keys, kinds: keys.map(kindOf) };
}

/** Whether `details` has exactly the shape's members, in order, none undefined. */
function fitsShape(details: Record<string, unknown>, shape: Shape): boolean {
  const keys = shape.keys;
  let i = 0;
  for (const k in details) {
    if (k !== keys[i] || details[k] === undefined) return false;
    i++;
  }
  return i === keys.length;
}

/** The scope's last payload is now `text`, number `ref`. */
function track(scope: ScopeState, text: string, ref: number): void {
  scope.payload = text;
  scope.payloadRef = ref;
}

/** The length of a name without its trailing decimal number (no leading zero, at most 15 digits). */
function stemLength(name: string): number {
  let at = name.length;
  while (at > 0) {
    const c = name.charCodeAt(at - 1);
    if (c < 48 || c > 57) break;
    at--;
  }
  const digits = name.length - at;
  if (digits === 0 || digits > 15 || (digits > 1 && name.charCodeAt(at) === 48)) return name.length;
  return at;
}

/** The decimal number after a name's stem ({@link stemLength}); −1 when it has none. */
function trailingNumber(name: string, stem: number): number {
  if (stem === name.length) return -1;
  let number = 0;
  for (let i = stem; i < name.length; i++) number = number * 10 + (name.charCodeAt(i) - 48);
  return number;
}

const NULL = Buffer.from('null');

/** Quoted texts kept; the cache starts over once it holds this many. */
const MAX_QUOTED = 4096;

/**
 * Quoted names (state names, event types, scopes) and short detail texts repeat from event to
 * event: kept once each, as UTF-8 (copies of their own: a small `Buffer.from` is a slice of an
 * 8 KiB pool, which a kept slice keeps whole).
 */
export class QuotedTexts {
  private readonly quoted = new Map<string, Uint8Array>();
  private readonly utf8 = new TextEncoder();

  /** `JSON.stringify(text)` as UTF-8 bytes, remembered. */
  quote(text: string): Uint8Array {
    let q = this.quoted.get(text);
    if (q === undefined) {
      if (this.quoted.size >= MAX_QUOTED) this.quoted.clear();
      q = this.utf8.encode(JSON.stringify(text));
      this.quoted.set(text, q);
    }
    return q;
  }
}

/**
 * A state name, quoted: short plain ones character by character (cheaper than finding their
 * cached bytes), others from the cache.
 */
function writeName(w: ByteWriter, name: string, quotes: QuotedTexts): void {
  const n = name.length;
  if (n > 32) {
    w.raw(quotes.quote(name));
    return;
  }
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
      w.raw(quotes.quote(name));
      return;
    }
  }
  w.byte(0x22);
  w.text(name);
  w.byte(0x22);
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

/** Whether a text has no lone surrogate (UTF-8 keeps it exactly); immediate for one-byte strings. */
const isWellFormed = (text: string): boolean =>
  (text as unknown as { isWellFormed(): boolean }).isWellFormed();

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

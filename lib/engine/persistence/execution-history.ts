/**
 * The history of one execution while it runs: appends events to its log in per-tick batches
 * and, after a restart or a redrive, hands recorded events back to the interpreter by their
 * logical key instead of writing them again, so nothing is lost, duplicated or re-run.
 */
import {
  NOT_TRUNCATED,
  RecordedEvent,
  ScopedEvent,
  StateEnteredEvent,
  StateExitedEvent,
  type StoredEvent,
} from './history.ts';
import type { ExecutionLog } from './store.ts';

/** A sequential thread of events: the execution itself, one Parallel branch or one Map iteration. */
export class Scope {
  private seq = 0;

  constructor(
    readonly history: ExecutionHistory,
    readonly id: string,
    /** Id of the last event emitted in this scope (AWS's previousEventId). */
    public lastEventId: number,
  ) {}

  /** The sequence number the next event of this scope gets. */
  get nextSeq(): number {
    return this.seq;
  }

  /** Emits (or, on replay, finds again) the next event of this scope. */
  emit(type: string, details?: Record<string, unknown>, internal?: Record<string, unknown>): StoredEvent {
    const event = this.history.record(this.id, this.seq++, this.lastEventId, type, details, internal);
    this.lastEventId = event.id;
    return event;
  }

  /** Emits `<Type>StateEntered` with details `{ name, input, inputDetails }` (see {@link StateEnteredEvent}). */
  emitEntered(type: string, name: string, input: string): StoredEvent {
    const { history } = this;
    const seq = this.seq++;
    const event =
      history.replayed(this.id, seq, type) ??
      history.add(
        new StateEnteredEvent(
          history.length + 1,
          this.lastEventId,
          history.time(),
          type,
          this.id,
          seq,
          name,
          input,
        ),
      );
    this.lastEventId = event.id;
    return event;
  }

  /** Emits `<Type>StateExited` with what replay needs to skip the state (see {@link StateExitedEvent}). */
  emitExited(
    type: string,
    name: string,
    output: string,
    entered: number,
    next: string | undefined,
    assigned: Record<string, unknown> | undefined,
  ): StoredEvent {
    const { history } = this;
    const seq = this.seq++;
    const event =
      history.replayed(this.id, seq, type) ??
      history.add(
        new StateExitedEvent(
          history.length + 1,
          this.lastEventId,
          history.time(),
          type,
          this.id,
          seq,
          name,
          output,
          entered,
          next,
          assigned,
        ),
      );
    this.lastEventId = event.id;
    return event;
  }

  /**
   * Emits a task's `*Scheduled` event with details `{ resource, input, inputDetails }` (Lambda
   * functions and activities without a timeout), built when read.
   */
  emitScheduled(type: string, resource: string, input: string): StoredEvent {
    const { history } = this;
    const seq = this.seq++;
    const event =
      history.replayed(this.id, seq, type) ??
      history.add(
        new TaskEvent(
          history.length + 1,
          this.lastEventId,
          history.time(),
          type,
          this.id,
          seq,
          undefined,
          resource,
          input,
        ),
      );
    this.lastEventId = event.id;
    return event;
  }

  /**
   * Emits an event whose details are the task's resource ids (`{ resourceType, resource }` of a
   * service integration; none for Lambda functions and activities), then `{ output, outputDetails }`
   * when there is an output, built when read.
   */
  emitTaskEvent(type: string, ids: TaskIds | undefined, output?: string): StoredEvent {
    const { history } = this;
    const seq = this.seq++;
    const event =
      history.replayed(this.id, seq, type) ??
      history.add(
        new TaskEvent(
          history.length + 1,
          this.lastEventId,
          history.time(),
          type,
          this.id,
          seq,
          ids,
          undefined,
          output,
        ),
      );
    this.lastEventId = event.id;
    return event;
  }

  /** The recorded event that the next `emit` would return on replay, if any. */
  peek(): StoredEvent | undefined {
    if (!this.history.replaying) return undefined;
    return this.history.recorded(`${this.id}.${this.seq}`);
  }

  /** Continues after a recorded event of this scope (replay skips a finished state). */
  skipPast(event: StoredEvent): void {
    this.seq = Number(event.key.slice(event.key.lastIndexOf('.') + 1)) + 1;
    this.lastEventId = event.id;
  }

  /** A nested scope (branch or iteration) whose events follow `parentEventId`. */
  child(name: string | number, parentEventId: number): Scope {
    return new Scope(this.history, `${this.id}/${name}`, parentEventId);
  }
}

/** The resource of a service integration's task events. */
export interface TaskIds {
  readonly resourceType: string;
  readonly resource: string;
}

/**
 * A task's event with details built when read (most events of a long history are never read
 * again in memory, and every object an event keeps is one more for the collector to copy):
 * a `*Scheduled` event `{ resource, input, inputDetails }` (Lambda functions and activities
 * without a timeout) when `scheduledResource` is given, else the task's ids (`{ resourceType,
 * resource }` of a service integration) followed by `{ output, outputDetails }` when there is an
 * output.
 */
class TaskEvent extends ScopedEvent {
  constructor(
    id: number,
    prev: number,
    ts: number,
    type: string,
    scopeId: string,
    seq: number,
    private readonly ids: TaskIds | undefined,
    private readonly scheduledResource: string | undefined,
    /** The input of a `*Scheduled` event, else the output. */
    private readonly text: string | undefined,
  ) {
    super(id, prev, ts, type, scopeId, seq);
  }

  get details(): Record<string, unknown> | undefined {
    const { ids, text } = this;
    if (this.scheduledResource !== undefined)
      return { resource: this.scheduledResource, input: text, inputDetails: NOT_TRUNCATED };
    if (text === undefined)
      return ids === undefined ? undefined : { resourceType: ids.resourceType, resource: ids.resource };
    return ids === undefined
      ? { output: text, outputDetails: NOT_TRUNCATED }
      : {
          resourceType: ids.resourceType,
          resource: ids.resource,
          output: text,
          outputDetails: NOT_TRUNCATED,
        };
  }

  get internal(): undefined {
    return undefined;
  }
}

/**
 * Replay found a recorded event of another type at the position the execution emits its next
 * event: the history was not written by this definition on this engine (changed by hand, or by an
 * engine whose interpreter emitted other events), so nothing recorded after it can be trusted.
 * Temporal calls the same condition a nondeterminism error.
 */
export class NondeterministicReplayError extends Error {
  constructor(
    readonly executionArn: string,
    /** The event's position: `<scope>.<sequence number>` (the execution's own scope is ''). */
    readonly key: string,
    readonly recordedEventId: number,
    readonly recordedType: string,
    readonly emittedType: string,
  ) {
    super(
      `Replay of ${executionArn} stopped at event #${recordedEventId} (key '${key}'): the history records ${recordedType} there, where the execution now emits ${emittedType}. The history does not belong to this definition and engine; the execution cannot resume from it.`,
    );
    this.name = 'NondeterministicReplayError';
  }
}

/** Readonly props of a {@link ExecutionHistory}. */
export interface ExecutionHistoryProps {
  /** The execution whose history this is (named by {@link NondeterministicReplayError}). */
  readonly executionArn: string;
  readonly log: ExecutionLog;
  /** Events already stored (restart/redrive): the history so far. */
  readonly stored?: readonly StoredEvent[];
  readonly now: () => number;
  /** Called when the first event of a batch waits to be written. */
  readonly onDirty: (history: ExecutionHistory) => void;
  /**
   * Makes every recorded event as durable as the engine promises before an effect outside it
   * (see README.md, "The durability contract"): written at once; with strict durability, the promise resolves
   * once it is on stable storage.
   */
  readonly persist: () => Promise<void> | undefined;
  /** Nothing of this history reaches a store (an engine without a store directory). */
  readonly memoryOnly?: boolean;
}

export class ExecutionHistory {
  readonly events: StoredEvent[];
  private readonly replay = new Map<string, StoredEvent>();
  /**
   * `*StateExited` events by the id of their `*StateEntered` event, for replay only: built when
   * first asked for (most executions never replay), from events up to {@link exitsIndexed}.
   */
  private readonly exits = new Map<number, StoredEvent>();
  private exitsIndexed = 0;
  /** Index in {@link events} of the first event not yet handed to the log. */
  private pendingFrom: number;
  /** See {@link ExecutionHistoryProps.executionArn}. */
  readonly executionArn: string;
  private readonly log: ExecutionLog;
  private readonly now: () => number;
  private readonly onDirty: (history: ExecutionHistory) => void;
  /** See {@link ExecutionHistoryProps.persist}; call it (and await what it returns) before any effect outside the engine. */
  readonly persist: () => Promise<void> | undefined;
  /** See {@link ExecutionHistoryProps.memoryOnly}. */
  readonly memoryOnly: boolean;

  constructor(props: ExecutionHistoryProps) {
    this.executionArn = props.executionArn;
    this.log = props.log;
    this.memoryOnly = props.memoryOnly === true;
    this.now = props.now;
    this.onDirty = props.onDirty;
    this.persist = props.persist;
    this.events = [];
    for (const e of props.stored ?? []) {
      this.events.push(e);
      if (e.type === 'ExecutionRedriven') this.forgetFailedStates();
      else this.replay.set(e.key, e);
    }
    this.pendingFrom = this.events.length;
  }

  /** The recorded exit of a state entered by event `enteredId`, if it finished. */
  exitOf(enteredId: number): StoredEvent | undefined {
    for (; this.exitsIndexed < this.events.length; this.exitsIndexed++) {
      const e = this.events[this.exitsIndexed] as StoredEvent;
      const entered = e.internal?.entered;
      if (typeof entered === 'number') this.exits.set(entered, e);
    }
    return this.exits.get(enteredId);
  }

  /** The event with id `id` (1-based). */
  eventAt(id: number): StoredEvent {
    const e = this.events[id - 1];
    if (!e) throw new Error(`no history event #${id}`);
    return e;
  }

  /** A top-level scope (the execution itself is `root('')`). */
  root(id: string): Scope {
    return new Scope(this, id, 0);
  }

  get length(): number {
    return this.events.length;
  }

  /** Whether recorded events wait to be found again (after a restart or a redrive). */
  get replaying(): boolean {
    return this.replay.size > 0;
  }

  recorded(key: string): StoredEvent | undefined {
    return this.replay.get(key);
  }

  /** Records the event at `<scope>.<seq>` (or, on replay, finds the recorded one again). */
  record(
    scope: string,
    seq: number,
    prev: number,
    type: string,
    details?: Record<string, unknown>,
    internal?: Record<string, unknown>,
  ): StoredEvent {
    return (
      this.replayed(scope, seq, type) ??
      this.add(
        new RecordedEvent(this.events.length + 1, prev, this.now(), type, scope, seq, details, internal),
      )
    );
  }

  /**
   * On replay: the recorded event at `<scope>.<seq>`, if there is one. One of another type than
   * `type` ends replay with a {@link NondeterministicReplayError} (the events the execution then
   * records on its way to failing are new ones).
   */
  replayed(scope: string, seq: number, type: string): StoredEvent | undefined {
    if (this.replay.size === 0) return undefined;
    const key = `${scope}.${seq}`;
    const old = this.replay.get(key);
    if (old === undefined || old.type === type) return old;
    this.replay.clear();
    throw new NondeterministicReplayError(this.executionArn, key, old.id, old.type, type);
  }

  /** Appends a new event (its id must be the next one) to the history and the pending batch. */
  add(event: StoredEvent): StoredEvent {
    if (this.pendingFrom === this.events.length) this.onDirty(this);
    this.events.push(event);
    return event;
  }

  /**
   * Whether the event at `<scope>.<seq>`, recorded as event `fromId` or later, has been handed to
   * the log (undefined while it is not recorded).
   */
  handedToLog(scope: string, seq: number, fromId: number): boolean | undefined {
    const key = `${scope}.${seq}`;
    for (let i = fromId - 1; i < this.events.length; i++) {
      const event = this.events[i] as StoredEvent;
      if (event.key === key) return i < this.pendingFrom;
    }
    return undefined;
  }

  /** The clock of this history's events (epoch ms). */
  time(): number {
    return this.now();
  }

  /** Hands every pending event to the log as one batch (the engine writes all batches at once). */
  flush(): void {
    if (this.pendingFrom === this.events.length) return;
    const batch = this.events.slice(this.pendingFrom);
    this.pendingFrom = this.events.length;
    this.log.stage(batch);
  }

  /** Stages pending events and releases what the log holds (an execution that ended); a redrive takes it up again. */
  close(): void {
    this.flush();
    this.log.close();
  }

  /**
   * Prepares a redrive: in every scope that did not finish, the state that was running when
   * the execution failed (from its last `*StateEntered`) is forgotten so that it runs again;
   * finished scopes (successful branches and iterations) are replayed as they were.
   */
  forgetFailedStates(): void {
    this.replay.clear();
    const byScope = new Map<string, StoredEvent[]>();
    for (const e of this.events) {
      if (e.key.startsWith('!')) continue;
      const scope = e.key.slice(0, e.key.lastIndexOf('.'));
      const list = byScope.get(scope);
      if (list) list.push(e);
      else byScope.set(scope, [e]);
    }
    for (const list of byScope.values()) {
      let cut = list.length;
      for (let i = list.length - 1; i >= 0; i--) {
        const t = list[i]?.type ?? '';
        if (t.endsWith('StateExited')) break;
        if (t.endsWith('StateEntered')) {
          cut = i;
          break;
        }
      }
      for (let i = 0; i < cut; i++) {
        const e = list[i] as StoredEvent;
        this.replay.set(e.key, e);
      }
    }
  }
}

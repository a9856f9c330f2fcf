/**
 * When recorded events reach the store: before every effect outside the engine (a task call, a
 * task token handed out, an API answer that reports state) all of them, with one `write(2)`, and
 * with strict durability after their fdatasync; events nobody waits for within the group window.
 * The contract itself: persistence/README.md.
 */
import type { TokenWaiter } from './core/task-tokens.ts';
import type { ExecutionHistory } from './persistence/execution-history.ts';
import type { EngineStore } from './persistence/store.ts';
import type { StoreFault } from './persistence/store-faults.ts';
import { SfnServiceError } from './types.ts';

/** What an engine waits for before an effect outside it: see {@link FlushSchedulerProps.durability}. */
export type Durability = 'group' | 'strict';

/** The group window (see {@link FlushSchedulerProps.syncWindowMs}). */
export const DEFAULT_SYNC_WINDOW_MS = 20;

/** Readonly props of {@link FlushScheduler}. */
export interface FlushSchedulerProps {
  readonly store: EngineStore;
  /** Whether the store is memory only (nothing outlives the process: nothing is waited for). */
  readonly memoryOnly: boolean;
  /**
   * `group`: written before each effect, fdatasync'd in groups at most `syncWindowMs` later;
   * `strict`: each effect also waits for that fdatasync.
   */
  readonly durability: Durability;
  /** The group window: longest time pure transitions wait for their write. */
  readonly syncWindowMs: number;
  /** How often a write the file system refused (disk full, read-only) is tried again. @default 1000 */
  readonly retryMs?: number;
}

/**
 * The engine's store cannot write (see store-faults.ts): answered to whoever asks for an effect
 * that must be written first, with the cause and the fix.
 */
export class StoreUnavailableError extends SfnServiceError {
  constructor(readonly fault: StoreFault) {
    super(
      'ServiceUnavailable',
      `the engine store cannot write (${fault.advice}); ${fault.transient ? 'it is tried again every second, and new work is taken once a write succeeds' : 'restart the engine once it is fixed'}`,
      503,
    );
  }
}

/** The flush scheduler of one engine: the histories with pending events, and the window's timer. */
export class FlushScheduler {
  private readonly store: EngineStore;
  private readonly memoryOnly: boolean;
  private readonly strict: boolean;
  private readonly syncWindowMs: number;
  /** Histories with events not yet handed to the store. */
  private readonly dirty = new Set<ExecutionHistory>();
  /** The pending flush of events nobody waits for (see {@link scheduleFlush}). */
  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private stopped = false;
  private readonly retryMs: number;

  constructor(props: FlushSchedulerProps) {
    this.store = props.store;
    this.memoryOnly = props.memoryOnly;
    this.strict = props.durability === 'strict' && !props.memoryOnly;
    this.syncWindowMs = props.syncWindowMs;
    this.retryMs = props.retryMs ?? 1000;
  }

  /** A history's first pending event of a batch (its `onDirty`): it is flushed with the next write or the window. */
  historyDirty(history: ExecutionHistory): void {
    this.dirty.add(history);
    if (this.flushTimer === undefined) this.scheduleFlush();
  }

  /**
   * Before an effect outside the engine: every recorded event is written (kill -9 loses none);
   * with strict durability the returned promise resolves once they are on stable storage.
   */
  persist(): Promise<void> | undefined {
    // in memory nothing outlives the process: events reach the store at the end of the turn
    if (this.memoryOnly) return undefined;
    this.flushAll();
    const fault = this.store.fault;
    if (fault) throw new StoreUnavailableError(fault);
    return this.strict ? this.store.durable() : undefined;
  }

  /**
   * Refuses new work (a start, a redrive) while the store cannot write: it would be accepted in
   * memory only. Tries the refused write once first (the fault may be gone).
   */
  refuseWhileFaulted(): void {
    if (this.memoryOnly || this.store.fault === undefined) return;
    this.retryNow();
    const fault = this.store.fault;
    if (fault) throw new StoreUnavailableError(fault);
  }

  /**
   * {@link persist} for an execution's own effects (a task call, a token handed out): while the
   * store cannot write, the effect waits (its events stay staged) until a retry writes them, so a
   * full or read-only disk pauses executions instead of failing them.
   */
  persistOrWait(): Promise<void> | undefined {
    if (this.memoryOnly) return undefined;
    this.flushAll();
    if (this.store.fault === undefined) return this.strict ? this.store.durable() : undefined;
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.scheduleRetry();
    }).then(() => (this.strict ? this.store.durable() : undefined));
  }

  /** Effects waiting for the store to write again ({@link persistOrWait}). */
  private readonly waiting: { resolve: () => void; reject: (error: Error) => void }[] = [];
  private retryTimer: NodeJS.Timeout | undefined;

  /** Tries the refused write again every `retryMs` until it succeeds; then the waiting effects go on. */
  private scheduleRetry(): void {
    if (this.retryTimer !== undefined || this.stopped) return;
    const timer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retryNow();
    }, this.retryMs);
    timer.unref();
    this.retryTimer = timer;
  }

  /** One retry of what the store refused; resolves the waiting effects once it can write. */
  retryNow(): void {
    try {
      this.store.retry();
      this.flushAll();
    } catch {
      // still refused: noted in the store's fault
    }
    const fault = this.store.fault;
    if (fault === undefined) {
      for (const w of this.waiting.splice(0)) w.resolve();
    } else if (!fault.transient) {
      for (const w of this.waiting.splice(0)) w.reject(new StoreUnavailableError(fault));
    } else this.scheduleRetry();
  }

  /**
   * After SendTaskSuccess/Failure handed an outcome to its task: the task records it within the
   * same turn (promise callbacks only); the answer waits for that event to be persisted.
   */
  async outcomeRecorded(waiter: TokenWaiter): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    // usually the write before the next task call has taken the outcome along already
    if (waiter.outcomeHandedToLog?.() && !this.store.unwritten) {
      if (this.strict) await this.store.durable();
      return;
    }
    await this.persist();
  }

  /** Hands every pending event over one last time and schedules nothing more (the engine closes). */
  stop(): void {
    this.flushAll();
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  /**
   * Hands every pending event of every execution to the store and writes them with one `write(2)`.
   * A write the file system refuses is not thrown (it is the store's fault, which callers ask):
   * the events stay staged for the retry, and a timer's flush never crashes the process.
   */
  private flushAll(): void {
    if (this.stopped) return;
    for (const j of this.dirty) j.flush();
    this.dirty.clear();
    try {
      this.store.write();
    } catch {
      if (this.store.fault === undefined) throw new Error('the engine store failed a write without a fault');
      this.scheduleRetry();
    }
  }

  /**
   * Events nobody waits for (pure transitions) are written within the group window, with
   * whatever write comes first: a durable engine does not write once per event-loop turn. In
   * memory they are handed to the store at the end of the turn.
   */
  private scheduleFlush(): void {
    if (this.memoryOnly) {
      this.flushTimer = setImmediate(() => this.flushOnTimer());
      return;
    }
    const timer = setTimeout(() => this.flushOnTimer(), this.syncWindowMs);
    timer.unref();
    this.flushTimer = timer;
  }

  /**
   * The window's flush. A write in between (before a task call) leaves the timer armed: it writes
   * whatever was recorded since, sooner than a new window would, without a timer per task call.
   */
  private flushOnTimer(): void {
    this.flushTimer = undefined;
    this.flushAll();
  }
}

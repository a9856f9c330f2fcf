/**
 * When recorded events reach the store: before every effect outside the engine (a task call, a
 * task token handed out, an API answer that reports state) all of them, with one `write(2)`, and
 * with strict durability after their fdatasync; events nobody waits for within the group window.
 * The contract itself: persistence/README.md.
 */
import type { TokenWaiter } from './core/task-tokens.ts';
import type { ExecutionHistory } from './persistence/execution-history.ts';
import type { EngineStore } from './persistence/store.ts';

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

  constructor(props: FlushSchedulerProps) {
    this.store = props.store;
    this.memoryOnly = props.memoryOnly;
    this.strict = props.durability === 'strict' && !props.memoryOnly;
    this.syncWindowMs = props.syncWindowMs;
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
    return this.strict ? this.store.durable() : undefined;
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
  }

  /** Hands every pending event of every execution to the store and writes them with one `write(2)`. */
  private flushAll(): void {
    if (this.stopped) return;
    for (const j of this.dirty) j.flush();
    this.dirty.clear();
    this.store.write();
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

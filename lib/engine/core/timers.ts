/** Scaled, abortable waiting: Wait states, retry intervals and task timeouts all go through here. */

/** Thrown into a waiting state when its branch, task or execution is aborted. */
export class AbortedError extends Error {
  constructor(readonly reason: unknown) {
    super('aborted');
    this.name = 'AbortedError';
  }
}

/** The longest delay setTimeout takes (2^31 - 1 ms, 24.8 days); a longer one fires at once. */
const LONGEST_TIMEOUT_MS = 2_147_483_647;

/**
 * Resolves at `deadline` (epoch ms on `now`, already scaled) or rejects with AbortedError when
 * `signal` aborts. `now` is read once: from then on the wait runs on setTimeout's monotonic clock,
 * which a wall-clock step does not move. A wait beyond setTimeout's longest delay (an approval
 * may wait a year) is made of parts, each armed when the one before ends.
 */
export function sleepUntil(deadline: number, now: () => number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new AbortedError(signal.reason));
  let remaining = deadline - now();
  if (remaining <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError(signal.reason));
    };
    const arm = () => {
      if (remaining <= 0) {
        signal.removeEventListener('abort', onAbort);
        resolve();
        return;
      }
      const part = Math.min(remaining, LONGEST_TIMEOUT_MS);
      remaining -= part;
      timer = setTimeout(arm, part);
    };
    arm();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Told when a signal aborts (see {@link AbortWatchers}). */
export interface AbortWatcher {
  aborted(reason: unknown): void;
}

/**
 * Who waits on each signal (an execution's or a branch's): one 'abort' listener per signal, not
 * one per waiting call, since adding and removing AbortSignal listeners is costly in Node.
 * Callers add their watcher and delete it once they stop waiting; every watcher still in the set
 * is told the signal's reason once, when it aborts. One per engine (and per resource invoker).
 */
export class AbortWatchers {
  private readonly bySignal = new WeakMap<AbortSignal, Set<AbortWatcher>>();

  /** The watchers of `signal` (an empty set the first time, with the signal's one listener added). */
  of(signal: AbortSignal): Set<AbortWatcher> {
    let watchers = this.bySignal.get(signal);
    if (!watchers) {
      const waiting = new Set<AbortWatcher>();
      signal.addEventListener(
        'abort',
        () => {
          for (const watcher of waiting) watcher.aborted(signal.reason);
          waiting.clear();
        },
        { once: true },
      );
      this.bySignal.set(signal, waiting);
      watchers = waiting;
    }
    return watchers;
  }
}

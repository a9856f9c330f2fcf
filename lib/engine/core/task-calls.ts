/**
 * The engine's task calls in flight (resource invocations: in-process Lambda handlers, service
 * integrations), and the drain before a clean stop: once draining, no new attempt begins (it
 * waits, recording nothing, until the stop aborts it, and runs afresh after the restart), while
 * the calls under way end and record their outcomes. A call cut off by a stop is recorded as
 * interrupted on the restart (persistence/README.md), which a gate cannot take back; a drained
 * call never is.
 */
import type { ResourceInvoker } from '../types.ts';
import { AbortedError, type AbortWatchers } from './timers.ts';

export class TaskCalls {
  private readonly inFlight = new Set<Promise<unknown>>();
  private isDraining = false;

  constructor(private readonly watchers: AbortWatchers) {}

  /** Whether the engine is draining: attempts that have not begun wait for the stop. */
  get draining(): boolean {
    return this.isDraining;
  }

  /** `invoke`, with each call counted while it is under way. */
  tracked(invoke: ResourceInvoker): ResourceInvoker {
    return (invocation) => {
      const call = invoke(invocation);
      this.inFlight.add(call);
      const settled = () => this.inFlight.delete(call);
      call.then(settled, settled);
      return call;
    };
  }

  /**
   * Undefined unless draining (no promise hop on the way); else a wait that only the stop ends,
   * with AbortedError (`signal` is the execution's or branch's, which the stop aborts).
   */
  admit(signal: AbortSignal): Promise<never> | undefined {
    if (!this.isDraining) return undefined;
    if (signal.aborted) return Promise.reject(new AbortedError(signal.reason));
    return new Promise<never>((_, reject) => {
      this.watchers.of(signal).add({ aborted: (reason) => reject(new AbortedError(reason)) });
    });
  }

  /**
   * Begins the drain and waits until the calls under way have ended and their outcomes are
   * recorded, or `timeoutMs` passed; answers how many are still under way.
   */
  async drain(timeoutMs: number): Promise<number> {
    this.isDraining = true;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      while (this.inFlight.size > 0) {
        const ended = await Promise.race([Promise.allSettled([...this.inFlight]), timedOut]);
        if (ended === 'timeout') break;
        // Whoever awaited those calls records their outcomes on the turns after.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      clearTimeout(timer);
    }
    return this.inFlight.size;
  }
}

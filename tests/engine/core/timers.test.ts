import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortedError, sleepUntil } from '../../../lib/engine/core/timers.ts';

const DAY_MS = 86_400_000;

describe('sleepUntil', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const settled = (promise: Promise<void>) => {
    const state = { done: false };
    promise.then(() => {
      state.done = true;
    });
    return state;
  };

  it('waits until a deadline beyond the longest setTimeout (24.8 days): an approval may wait a year', async () => {
    const wait = settled(sleepUntil(Date.now() + 30 * DAY_MS, Date.now, new AbortController().signal));
    await vi.advanceTimersByTimeAsync(25 * DAY_MS);
    expect(wait.done).toBe(false);
    await vi.advanceTimersByTimeAsync(5 * DAY_MS - 1);
    expect(wait.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(wait.done).toBe(true);
  });

  it('a long wait still ends when its signal aborts', async () => {
    const controller = new AbortController();
    const wait = sleepUntil(Date.now() + 60 * DAY_MS, Date.now, controller.signal);
    await vi.advanceTimersByTimeAsync(26 * DAY_MS);
    controller.abort('stopped');
    await expect(wait).rejects.toBeInstanceOf(AbortedError);
  });

  it('resolves at once for a deadline already past', async () => {
    await expect(sleepUntil(Date.now() - 1, Date.now, new AbortController().signal)).resolves.toBeUndefined();
  });
});

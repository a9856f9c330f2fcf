import { describe, expect, it } from 'vitest';
import { steadyClock } from '../../lib/runtime/shared/steady-clock.ts';

/** A wall clock and a monotonic clock the test steps by hand. */
function clocks(wallAt: number) {
  const state = { wall: wallAt, monotonic: 5_000.25 };
  return {
    state,
    wall: () => state.wall,
    monotonic: () => state.monotonic,
    /** Real time passes: both clocks advance. */
    pass(ms: number) {
      state.wall += ms;
      state.monotonic += ms;
    },
  };
}

describe('steadyClock', () => {
  it('starts at the wall clock and advances as real time passes', () => {
    const c = clocks(1_800_000_000_000);
    const now = steadyClock(c.wall, c.monotonic);
    expect(now()).toBe(1_800_000_000_000);
    c.pass(1_500);
    expect(now()).toBe(1_800_000_001_500);
  });

  it('is moved by neither a step back nor a step forward of the wall clock', () => {
    const c = clocks(1_800_000_000_000);
    const now = steadyClock(c.wall, c.monotonic);
    c.state.wall -= 2 * 3_600_000;
    c.pass(1_000);
    expect(now()).toBe(1_800_000_001_000);
    c.state.wall += 26 * 3_600_000;
    c.pass(1_000);
    expect(now()).toBe(1_800_000_002_000);
  });

  it('gives whole milliseconds, never fewer than before', () => {
    const c = clocks(1_800_000_000_000);
    const now = steadyClock(c.wall, c.monotonic);
    let last = now();
    for (const step of [0.3, 0.3, 0.5, 0.9, 0]) {
      c.state.monotonic += step;
      const next = now();
      expect(Number.isInteger(next)).toBe(true);
      expect(next).toBeGreaterThanOrEqual(last);
      last = next;
    }
  });

  it('a new clock (a restarted process) reads the wall clock afresh', () => {
    const c = clocks(1_800_000_000_000);
    c.state.wall += 26 * 3_600_000;
    expect(steadyClock(c.wall, c.monotonic)()).toBe(1_800_000_000_000 + 26 * 3_600_000);
  });
});

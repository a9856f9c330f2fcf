/**
 * The clock a long-running local stack decides deadlines by: the wall clock read once, when the
 * clock is made, advanced by the monotonic clock from then on. A wall-clock step (NTP, `date -s`,
 * a VM resumed) moves neither it nor the engine's timers (setTimeout runs on the monotonic clock),
 * so a gate's link expires when the engine times the gate out, whichever way the wall clock
 * jumped. The next process reads the wall clock afresh: what was recorded on this one (a
 * task's start, a link's expiry) is then measured against the clock as it is.
 */

/** Milliseconds since the epoch that never jump (see the module comment). */
export type EpochClock = () => number;

export function steadyClock(
  wall: () => number = Date.now,
  monotonic: () => number = () => performance.now(),
): EpochClock {
  const startWall = wall();
  const startMonotonic = monotonic();
  return () => startWall + Math.round(monotonic() - startMonotonic);
}

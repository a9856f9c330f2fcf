/**
 * Named crash points: where a test of crash consistency kills the process (SIGKILL, as kill -9
 * does) between two writes that must survive a crash together, so recovery is proven at exactly
 * that instant. `PLANGATE_CRASH_AT=<point>` arms one point in one process; unset, a crash point
 * is one comparison. The points are listed here so a test can name every one.
 */
export const GATE_CRASH_POINTS = [
  /** The gate is stored in its table; its opening is neither journaled nor told to anyone. */
  'gate-stored',
] as const;
export const DECISION_CRASH_POINTS = [
  /** The gate is decided in its table; neither the journal nor the machine knows yet. */
  'gate-decided',
  /** The decision is journaled; the machine is not told yet. */
  'decision-journaled',
] as const;
export const STEP_CRASH_POINTS = [
  /** The step's command returned and its result is stored; the engine does not know yet. */
  'step-ran',
  /** TASK_COMPLETED is journaled; the checker has not answered the engine yet. */
  'step-completed',
] as const;
export const SUBMIT_CRASH_POINTS = [
  /** PLAN_CREATED is journaled; the engine has not been asked to start the execution yet. */
  'plan-journaled',
  /** The engine started the execution; the submitter has not been answered yet. */
  'plan-started',
] as const;
export const COMPLETE_CRASH_POINTS = [
  /** A person's answer to a human step is recorded on its gate and journaled; the engine is not told yet. */
  'human-answered',
  /** The human step's TASK_COMPLETED is journaled; the checker has not answered the engine yet. */
  'human-completed',
] as const;
export const CRASH_POINTS = [
  ...GATE_CRASH_POINTS,
  ...DECISION_CRASH_POINTS,
  ...STEP_CRASH_POINTS,
  ...SUBMIT_CRASH_POINTS,
  ...COMPLETE_CRASH_POINTS,
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

const armed = process.env.PLANGATE_CRASH_AT;

export function crashPoint(point: CrashPoint): void {
  if (armed === point) process.kill(process.pid, 'SIGKILL');
}

/** Matching errors against Retry/Catch ErrorEquals, and the retry delay, as AWS computes them. */

/** Whether an ErrorEquals list matches `error` (States.ALL; States.TaskFailed matches all but States.Timeout). */
export function errorMatches(errorEquals: readonly string[], error: string): boolean {
  for (const name of errorEquals) {
    if (name === error) return true;
    if (name === 'States.ALL') return true;
    if (name === 'States.TaskFailed' && error !== 'States.Timeout') return true;
  }
  return false;
}

export interface Retrier {
  readonly ErrorEquals: string[];
  readonly IntervalSeconds?: number;
  readonly MaxAttempts?: number;
  readonly BackoffRate?: number;
  readonly MaxDelaySeconds?: number;
  readonly JitterStrategy?: 'FULL' | 'NONE';
}

/** Delay in seconds before retry number `attempt` (0-based) of a retrier. */
export function retryDelaySeconds(
  retrier: Retrier,
  attempt: number,
  random: () => number = Math.random,
): number {
  const interval = retrier.IntervalSeconds ?? 1;
  const backoff = retrier.BackoffRate ?? 2;
  let delay = interval * backoff ** attempt;
  if (retrier.MaxDelaySeconds !== undefined) delay = Math.min(delay, retrier.MaxDelaySeconds);
  if (retrier.JitterStrategy === 'FULL') delay = random() * delay;
  return delay;
}

/** What a retried step answers instead of running again (README.md, "A step runs once"). */
import type { HarnessDeps } from '../deps.ts';
import { lastStartOrCompletion } from '../journal/journal.ts';
import { ERROR_NAMES, type RunnerRequest, type RunnerResult } from '../payloads/index.ts';
import { HarnessError } from '../shared/errors.ts';
import { dropRunResult, loadRunResult, storeRunResult } from './outputs-table.ts';

/**
 * What an earlier attempt of the step produced, when the step must not run again: its
 * TASK_COMPLETED is journaled (a completed step never runs again in its execution, whatever
 * retried it), or the attempt last started returned and stored its result before a crash cut it
 * short, and no contract has refused that result yet. It is answered as this attempt's (so a
 * failure after it counts against the recipe's retries); a result carried on so is stored as this
 * attempt's, for the contract's verdict. A first attempt has no earlier one. A crash while the
 * command ran leaves no result: the recipe's retry runs the command again. A human step's gate
 * asks the same (gate.ts): the person's stored answer stands in for the command's result.
 */
export async function earlierResult(
  req: Pick<RunnerRequest, 'executionId' | 'stepId' | 'attempt'>,
  deps: Pick<HarnessDeps, 'dynamo' | 'tables'>,
): Promise<RunnerResult | undefined> {
  if (req.attempt === 1) return undefined;
  const last = await lastStartOrCompletion(deps.dynamo, deps.tables.events, req.executionId, req.stepId);
  const attempt = last?.details.attempt;
  const stored =
    typeof attempt === 'number' ? await loadRunResult(req.executionId, req.stepId, attempt, deps) : undefined;
  if (last?.event === 'TASK_COMPLETED') {
    if (!stored)
      throw new HarnessError(
        ERROR_NAMES.unrecoverable,
        'the step completed (TASK_COMPLETED is journaled) but its result is not stored: it is not run again',
        { location: `steps.${req.stepId}` },
      );
    return { ...stored, attempt: req.attempt };
  }
  if (!stored || typeof attempt !== 'number' || attempt === req.attempt) return stored;
  const again = { ...stored, attempt: req.attempt };
  await storeRunResult(req.executionId, again, deps);
  await dropRunResult(req.executionId, req.stepId, attempt, deps);
  return again;
}

/** Turning any thrown error into the named, redacted HarnessFailure Step Functions sees. */
import type { FailureClass } from '../../plan/schema.ts';
import { ERROR_NAMES, type FailureCause, HarnessFailure } from '../payloads/index.ts';
import type { Redactor } from '../secrets/redact.ts';
import { type FailureFacts, failureFacts } from '../shared/errors.ts';
import { truncateText } from '../shared/truncate.ts';

/** Longest message carried in a Cause. */
const MAX_CAUSE_MESSAGE_BYTES = 4 * 1024;

export function failureCause(
  facts: FailureFacts,
  failureClass: FailureClass,
  redactor: Redactor,
): FailureCause {
  const location = (facts as { location?: unknown }).location;
  return {
    message: redactor.text(truncateText(facts.message, MAX_CAUSE_MESSAGE_BYTES).text),
    failureClass,
    httpStatus: facts.httpStatus,
    exitCode: facts.exitCode,
    code: facts.code,
    ...(typeof location === 'string' ? { location } : {}),
  };
}

/** The HarnessFailure for a classified error: `Plangate.<Class>` with a JSON cause. */
export function classFailure(error: unknown, failureClass: FailureClass, redactor: Redactor): HarnessFailure {
  const facts = { ...failureFacts(error), location: (error as { location?: unknown })?.location };
  return new HarnessFailure(ERROR_NAMES[failureClass], failureCause(facts, failureClass, redactor));
}

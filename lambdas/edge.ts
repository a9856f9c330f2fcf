/** Input parsing at the handler edge: a bad payload is a located Plangate.InvalidInput, and nothing runs. */
import type { z } from 'zod';
import { ERROR_NAMES, HarnessFailure } from '../lib/runtime/payloads/index.ts';

export function parseEvent<S extends z.ZodType>(schema: S, event: unknown): z.infer<S> {
  const parsed = schema.safeParse(event);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const location = issue?.path.length ? issue.path.join('.') : '(event)';
  throw new HarnessFailure(ERROR_NAMES.invalid_input, {
    message: `${location}: ${issue?.message ?? 'invalid input'}`,
    failureClass: 'invalid_input',
    location,
  });
}

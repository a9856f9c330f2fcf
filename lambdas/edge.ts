/**
 * The handler edge: input parsing (a bad payload is a located Plangate.InvalidInput, and nothing
 * runs) and the telemetry around each invocation.
 */
import type { Context } from 'aws-lambda';
import type { z } from 'zod';
import { ERROR_NAMES, HarnessFailure } from '../lib/runtime/payloads/index.ts';
import { correlationOf, type Telemetry } from '../lib/runtime/telemetry/telemetry.ts';

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

/**
 * A handler logged by the deps' telemetry (when they have one): each invocation's outcome with
 * the correlation keys of its event (execution, plan, step, gate), its trace annotated with them.
 */
export function instrumented<E, R>(
  deps: { readonly telemetry?: Telemetry } | Promise<{ readonly telemetry?: Telemetry }>,
  handle: (event: E, context?: Context) => Promise<R>,
): (event: E, context?: Context) => Promise<R> {
  return async (event, context) => {
    const { telemetry } = await deps;
    if (!telemetry) return handle(event, context);
    return telemetry.invoke(correlationOf(event), () => handle(event, context), context);
  };
}

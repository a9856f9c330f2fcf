import type { z } from 'zod';
import { SfnServiceError, type StepFunctionsEngine } from '../types.ts';
import { isOperation, methodName, requestShape } from './operations.ts';
import { toWire } from './wire.ts';

/** The answer to one API call: HTTP status and the JSON body (an error body carries `__type`). */
export interface ApiReply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

const TARGET_PREFIX = 'AWSStepFunctions.';

export function errorReply(code: string, message: string, status = 400): ApiReply {
  return { status, body: { __type: code, message } };
}

/** AWS's wording for constraint violations, e.g. `1 validation error detected: Value null at 'name' ...`. */
function validationMessage(issues: readonly z.core.$ZodIssue[]): string {
  const parts = issues.map((issue) => {
    const field = issue.path.join('.');
    if (issue.code === 'too_big')
      return `Value at '${field}' failed to satisfy constraint: Member must have value less than or equal to ${String(issue.maximum)}`;
    if (issue.code === 'too_small')
      return `Value at '${field}' failed to satisfy constraint: Member must have value greater than or equal to ${String(issue.minimum)}`;
    return `Value null at '${field}' failed to satisfy constraint: Member must not be null`;
  });
  return `${parts.length} validation error${parts.length === 1 ? '' : 's'} detected: ${parts.join('; ')}`;
}

/**
 * Parses, checks and runs one AWS JSON 1.0 request against the engine; never throws. `signal`
 * aborts when the caller has gone (ends a GetActivityTask long poll without taking a task).
 */
export async function dispatch(
  engine: StepFunctionsEngine,
  target: string | undefined,
  text: string,
  signal?: AbortSignal,
): Promise<ApiReply> {
  const operation = target?.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : undefined;
  const method = operation && isOperation(operation) ? methodName(operation) : undefined;
  if (!operation || !isOperation(operation) || !method || typeof engine[method] !== 'function') {
    return errorReply(
      'UnknownOperationException',
      `The operation ${JSON.stringify(target ?? '')} is not supported by this endpoint`,
    );
  }
  let request: unknown;
  try {
    request = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return errorReply('SerializationException', 'The request body is not valid JSON');
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    return errorReply('SerializationException', 'The request body must be a JSON object');
  }
  const parsed = requestShape(operation).safeParse(request);
  if (!parsed.success) {
    const record = request as Record<string, unknown>;
    const wrongType = parsed.error.issues.find(
      (issue) =>
        issue.code === 'invalid_type' && issue.path.length > 0 && record[String(issue.path[0])] !== undefined,
    );
    if (wrongType) {
      return errorReply(
        'SerializationException',
        `Member '${wrongType.path.join('.')}' has the wrong type: expected ${'expected' in wrongType ? String(wrongType.expected) : 'another type'}`,
      );
    }
    return errorReply('ValidationException', validationMessage(parsed.error.issues));
  }
  try {
    const call = engine[method] as (input: unknown, options: { signal?: AbortSignal }) => Promise<unknown>;
    const output = await call.call(engine, parsed.data, signal ? { signal } : {});
    return { status: 200, body: (toWire(output ?? {}) ?? {}) as Record<string, unknown> };
  } catch (error) {
    if (error instanceof SfnServiceError) return errorReply(error.code, error.message, error.httpStatus);
    return errorReply('InternalFailure', 'The engine failed to process the request', 500);
  }
}

import type { z } from 'zod';
import { isOperation, methodName, requestShape } from '../operations.ts';
import { SfnServiceError, type StepFunctionsEngine } from '../types.ts';
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

/**
 * AWS's wording for constraint violations, e.g. `1 validation error detected: Value null at 'name'
 * failed to satisfy constraint: Member must not be null`. Numbers and enum values are named, as AWS
 * names them (`Value '1001' at 'maxResults'`); strings of the wrong length are not: one may be a
 * secret (a task token) or a megabyte of definition.
 */
function validationMessage(issues: readonly z.core.$ZodIssue[], request: Record<string, unknown>): string {
  const parts = issues.map((issue) => {
    const field = issue.path.join('.');
    const value = valueAt(request, issue.path);
    const named = typeof value === 'number' ? `Value '${value}' at` : 'Value at';
    const measure =
      'origin' in issue && (issue.origin === 'string' || issue.origin === 'array') ? 'length' : 'value';
    if (issue.code === 'too_big')
      return `${named} '${field}' failed to satisfy constraint: Member must have ${measure} less than or equal to ${String(issue.maximum)}`;
    if (issue.code === 'too_small')
      return `${named} '${field}' failed to satisfy constraint: Member must have ${measure} greater than or equal to ${String(issue.minimum)}`;
    if (issue.code === 'invalid_value')
      return `Value '${String(value)}' at '${field}' failed to satisfy constraint: Member must satisfy enum value set: [${issue.values.map(String).join(', ')}]`;
    return `Value null at '${field}' failed to satisfy constraint: Member must not be null`;
  });
  return `${parts.length} validation error${parts.length === 1 ? '' : 's'} detected: ${parts.join('; ')}`;
}

function valueAt(request: unknown, path: readonly PropertyKey[]): unknown {
  let value = request;
  for (const key of path) value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
  return value;
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
    return errorReply('ValidationException', validationMessage(parsed.error.issues, record));
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

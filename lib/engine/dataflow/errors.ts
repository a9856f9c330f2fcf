/** AWS's error texts for data-flow failures, and the state location prefix AWS puts in front of them. */
import { StatesError } from '../types.ts';

/** Where a failure happened, for AWS's "An error occurred while executing the state ..." prefix. */
export interface StateLocation {
  readonly stateName: string;
  /** Id of the state's `*StateEntered` history event. */
  readonly enteredEventId: number;
}

/** AWS's prefix for failures raised while a state runs. */
export function statePrefix(location: StateLocation): string {
  return `An error occurred while executing the state '${location.stateName}' (entered at the event id #${location.enteredEventId}). `;
}

/**
 * Adds the state location prefix to a data-flow StatesError (States.Runtime,
 * States.QueryEvaluationError, States.IntrinsicFailure); other errors pass through unchanged.
 */
export function locateError(error: unknown, location: StateLocation | undefined): unknown {
  if (!location || !(error instanceof StatesError) || !LOCATED_ERRORS.has(error.error)) return error;
  if (error.cause?.startsWith('An error occurred while executing the state ')) return error;
  return new StatesError(error.error, statePrefix(location) + (error.cause ?? ''));
}

const LOCATED_ERRORS: ReadonlySet<string> = new Set([
  'States.Runtime',
  'States.QueryEvaluationError',
  'States.IntrinsicFailure',
]);

export function runtimeError(cause: string): StatesError {
  return new StatesError('States.Runtime', cause);
}

export function queryEvaluationError(cause: string): StatesError {
  return new StatesError('States.QueryEvaluationError', cause);
}

export function intrinsicFailure(cause: string): StatesError {
  return new StatesError('States.IntrinsicFailure', cause);
}

/**
 * AWS's text when a JSONata field returns the wrong type, e.g. for Map `Items`:
 * "The JSONata expression '$ItemsVar' specified for the field 'Items' returned an unexpected
 * result type. Expected 'array', but was 'null' for value: null".
 */
export function jsonataResultTypeError(
  expression: string,
  field: string,
  expected: string,
  value: unknown,
): StatesError {
  const type = value === null || value === undefined ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return queryEvaluationError(
    `The JSONata expression '${expression}' specified for the field '${field}' returned an unexpected result type. Expected '${expected}', but was '${type}' for value: ${JSON.stringify(value ?? null)}`,
  );
}

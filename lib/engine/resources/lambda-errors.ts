import { StatesError } from '../types.ts';

/** The error payload the Node.js Lambda runtime returns for a function error. */
export interface LambdaErrorPayload {
  readonly errorType: string;
  readonly errorMessage: string;
  readonly trace: string[];
}

/** A function error (the handler threw or could not be loaded), carried with Lambda's payload. */
export class LambdaFunctionError extends Error {
  constructor(readonly payload: LambdaErrorPayload) {
    super(payload.errorMessage);
    this.name = payload.errorType;
  }
}

/** What the Node.js runtime reports for a thrown value: `{ errorType, errorMessage, trace }`. */
export function errorPayload(thrown: unknown): LambdaErrorPayload {
  if (thrown instanceof LambdaFunctionError) return thrown.payload;
  if (thrown instanceof Error) {
    return {
      errorType: thrown.name || 'Error',
      errorMessage: thrown.message,
      trace: (thrown.stack ?? '').split('\n').filter((line) => line !== ''),
    };
  }
  return { errorType: typeof thrown, errorMessage: String(thrown), trace: [] };
}

/** Step Functions reports a function error as Error = errorType, Cause = the error payload as JSON. */
export function functionErrorToStatesError(thrown: unknown): StatesError {
  const payload = errorPayload(thrown);
  return new StatesError(payload.errorType, JSON.stringify(payload));
}

/** An invocation-level failure from the Lambda service (not the function), named as Step Functions names it. */
export function lambdaServiceError(
  code: string,
  message: string,
  httpStatus: number,
  requestId: string,
): StatesError {
  return new StatesError(
    `Lambda.${code}`,
    `${message} (Service: AWSLambda; Status Code: ${httpStatus}; Error Code: ${code}; Request ID: ${requestId}; Proxy: null)`,
  );
}

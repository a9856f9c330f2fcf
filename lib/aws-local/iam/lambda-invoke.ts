/**
 * Lambda's Invoke as the IAM simulator's front serves it (`POST /2015-03-31/functions/<name>/invocations`,
 * REST JSON): the function the path names (a name, a full or partial ARN, with or without a
 * qualifier), the ARN IAM authorizes `lambda:InvokeFunction` against, and the invocation type.
 * What a function answers is written back as Invoke does: the payload, and on an error
 * `X-Amz-Function-Error: Unhandled` with `{ errorType, errorMessage }`.
 */

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;
const FUNCTION_NAME =
  /^(?:(?:arn:aws:lambda:)?(?:([a-z0-9-]+):)?(?:(\d{12}):)?function:)?([A-Za-z0-9_-]{1,64})(?::([A-Za-z0-9$_-]+))?$/;

export type InvocationType = 'RequestResponse' | 'Event' | 'DryRun';

export interface InvokeRequest {
  /** The ARN authorized: the function's, qualified when the request names a version or alias. */
  readonly resource: string;
  /** The unqualified function ARN. */
  readonly functionArn: string;
  readonly qualifier?: string;
  readonly invocationType: InvocationType;
}

export type ParsedInvoke =
  | { readonly ok: true; readonly request: InvokeRequest }
  | {
      readonly ok: false;
      readonly type:
        | 'ResourceNotFoundException'
        | 'InvalidParameterValueException'
        | 'UnknownOperationException';
      readonly message: string;
    };

/** The Invoke a request asks for, or why it is refused. */
export function parseInvoke(
  method: string,
  rawPath: string,
  rawQuery: string,
  invocationTypeHeader: string | undefined,
  scope: { readonly region: string; readonly account: string },
): ParsedInvoke {
  const path = INVOKE_PATH.exec(rawPath);
  if (method !== 'POST' || !path)
    return {
      ok: false,
      type: 'UnknownOperationException',
      message: `the IAM simulator serves Lambda's Invoke (POST /2015-03-31/functions/<name>/invocations) only, not ${method} ${rawPath}`,
    };
  const name = FUNCTION_NAME.exec(decodeURIComponent(path[1] ?? ''));
  if (!name)
    return {
      ok: false,
      type: 'InvalidParameterValueException',
      message: 'FunctionName is not a function name or ARN',
    };
  const [, region, account, functionName, arnQualifier] = name;
  if ((region && region !== scope.region) || (account && account !== scope.account))
    return {
      ok: false,
      type: 'ResourceNotFoundException',
      message: `Function not found: the simulated account is ${scope.account} in ${scope.region}`,
    };
  const queryQualifier = new URLSearchParams(rawQuery).get('Qualifier') ?? undefined;
  if (arnQualifier && queryQualifier && arnQualifier !== queryQualifier)
    return {
      ok: false,
      type: 'InvalidParameterValueException',
      message: 'The derived qualifier from the function name does not match the specified qualifier.',
    };
  const qualifier = arnQualifier ?? queryQualifier;
  const invocationType = invocationTypeHeader ?? 'RequestResponse';
  if (invocationType !== 'RequestResponse' && invocationType !== 'Event' && invocationType !== 'DryRun')
    return {
      ok: false,
      type: 'InvalidParameterValueException',
      message: `X-Amz-Invocation-Type ${invocationType} is not RequestResponse, Event or DryRun`,
    };
  const functionArn = `arn:aws:lambda:${scope.region}:${scope.account}:function:${functionName}`;
  return {
    ok: true,
    request: {
      resource: qualifier ? `${functionArn}:${qualifier}` : functionArn,
      functionArn,
      ...(qualifier ? { qualifier } : {}),
      invocationType,
    },
  };
}

/** How a function's handler ended: its result, or the error it threw. */
export type FunctionOutcome =
  | { readonly result: unknown }
  | { readonly error: { readonly name?: string; readonly message?: string } };

/** Invoke's answer to a synchronous invocation: status, headers and payload. */
export function invokeResponse(outcome: FunctionOutcome): {
  status: number;
  headers: Record<string, string>;
  payload: string;
} {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-amz-executed-version': '$LATEST',
  };
  if ('error' in outcome)
    return {
      status: 200,
      headers: { ...headers, 'x-amz-function-error': 'Unhandled' },
      payload: JSON.stringify({
        errorType: outcome.error.name ?? 'Error',
        errorMessage: outcome.error.message ?? '',
        trace: [],
      }),
    };
  return { status: 200, headers, payload: JSON.stringify(outcome.result ?? null) };
}

/** The `lambda` tool: invokes a function synchronously through an injected LambdaClient. */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { NotConfiguredError, ToolFailedError } from '../shared/errors.ts';
import { DEFAULT_OUTPUT_LIMIT_BYTES, truncateText } from '../shared/truncate.ts';
import type { ToolContext, ToolOutput } from './types.ts';

export interface LambdaInput {
  readonly functionName: string;
  readonly payload?: unknown;
  readonly qualifier?: string;
}

export interface LambdaResult {
  readonly statusCode: number;
  /** The function's parsed JSON result (or its text when it is not JSON). */
  readonly result: unknown;
  /** Set when the function threw: Unhandled / Handled. */
  readonly functionError?: string;
}

/** Invokes `functionName` with `payload`; a function error is returned, not thrown. */
export async function invokeLambda(
  client: LambdaClient,
  input: LambdaInput,
  signal?: AbortSignal,
): Promise<LambdaResult> {
  const out = await client.send(
    new InvokeCommand({
      FunctionName: input.functionName,
      Qualifier: input.qualifier,
      InvocationType: 'RequestResponse',
      Payload: Buffer.from(JSON.stringify(input.payload ?? {})),
    }),
    { abortSignal: signal },
  );
  const text = out.Payload ? Buffer.from(out.Payload).toString('utf8') : '';
  let result: unknown = text;
  try {
    result = text === '' ? null : JSON.parse(text);
  } catch {
    result = truncateText(text, DEFAULT_OUTPUT_LIMIT_BYTES).text;
  }
  return {
    statusCode: out.StatusCode ?? 200,
    result,
    ...(out.FunctionError ? { functionError: out.FunctionError } : {}),
  };
}

/** The lambda step tool: a function error becomes a failure named after the function's errorType. */
export async function runLambda(input: LambdaInput, ctx: ToolContext): Promise<ToolOutput> {
  if (!ctx.lambda)
    throw new NotConfiguredError('the lambda tool needs a Lambda client', {
      location: `steps.${ctx.stepId}`,
    });
  const out = await invokeLambda(ctx.lambda, input, ctx.signal);
  if (out.functionError) {
    const err = (out.result ?? {}) as { errorType?: string; errorMessage?: string };
    const failure = new ToolFailedError(
      `${input.functionName} failed: ${err.errorMessage ?? out.functionError}`,
      { output: out },
    );
    if (err.errorType) failure.name = err.errorType;
    throw failure;
  }
  return { statusCode: out.statusCode, result: out.result };
}

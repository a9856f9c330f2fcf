import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as ddb from '@aws-sdk/client-dynamodb';
import { StatesError } from '../types.ts';
import { sdkMetadata } from './sdk-metadata.ts';
import { awsSdkIntegrationError, optimizedIntegrationError } from './service-errors.ts';

/** The DynamoDB exceptions the SDKs model as their own classes (others are reported generically). */
const MODELED: ReadonlySet<string> = new Set([
  'ConditionalCheckFailedException',
  'ResourceNotFoundException',
  'ProvisionedThroughputExceededException',
  'ItemCollectionSizeLimitExceededException',
  'TransactionConflictException',
  'TransactionCanceledException',
  'RequestLimitExceeded',
  'InternalServerErrorException',
  'ResourceInUseException',
  'LimitExceededException',
  'DuplicateItemException',
  'IdempotentParameterMismatchException',
  'TransactionInProgressException',
]);

/** The actions of the optimized `arn:aws:states:::dynamodb:<action>` integration. */
export const OPTIMIZED_DYNAMODB_ACTIONS = ['putItem', 'getItem', 'updateItem', 'deleteItem'] as const;

type AnyCommand = new (input: unknown) => { middlewareStack: CommandStack };
interface CommandStack {
  add(middleware: unknown, options: { step: 'deserialize'; name?: string }): void;
}

/** The SDK v3 command class of a DynamoDB API action (`query` → QueryCommand), if the API has one. */
function commandClass(action: string): AnyCommand | undefined {
  const name = `${action.charAt(0).toUpperCase()}${action.slice(1)}Command`;
  const candidate = (ddb as unknown as Record<string, unknown>)[name];
  return typeof candidate === 'function' ? (candidate as AnyCommand) : undefined;
}

/** Sends one DynamoDB API call; returns the output (without `$metadata`) and the raw response headers. */
async function send(
  client: DynamoDBClient,
  action: string,
  input: unknown,
  signal: AbortSignal,
): Promise<{
  output: Record<string, unknown>;
  headers: Record<string, string>;
  status: number;
  requestId: string;
}> {
  const Command = commandClass(action);
  if (!Command) throw new StatesError('States.Runtime', `DynamoDB has no API action "${action}"`);
  const command = new Command(input ?? {});
  let headers: Record<string, string> = {};
  command.middlewareStack.add(
    (next: (args: unknown) => Promise<{ response: { headers?: Record<string, string> } }>) =>
      async (args: unknown) => {
        const result = await next(args);
        headers = { ...(result.response.headers ?? {}) };
        return result;
      },
    { step: 'deserialize', name: 'plangateCaptureHeaders' },
  );
  const response = (await client.send(command as never, { abortSignal: signal })) as Record<
    string,
    unknown
  > & {
    $metadata: { httpStatusCode?: number; requestId?: string };
  };
  const { $metadata, ...output } = response;
  return { output, headers, status: $metadata.httpStatusCode ?? 200, requestId: $metadata.requestId ?? '' };
}

/** `arn:aws:states:::dynamodb:<putItem|getItem|updateItem|deleteItem>`: the API response plus SdkHttpMetadata. */
export async function invokeDynamoDbOptimized(
  client: DynamoDBClient,
  action: string,
  parameters: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  try {
    const { output, headers, status, requestId } = await send(client, action, parameters, signal);
    return { ...output, ...sdkMetadata(headers, status, requestId) };
  } catch (error) {
    if (error instanceof StatesError || signal.aborted) throw error;
    throw optimizedIntegrationError(error, 'DynamoDB', 'DynamoDB', MODELED);
  }
}

/** `arn:aws:states:::aws-sdk:dynamodb:<action>`: any DynamoDB API action; the result is the API response. */
export async function invokeDynamoDbSdk(
  client: DynamoDBClient,
  action: string,
  parameters: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  try {
    return (await send(client, action, parameters, signal)).output;
  } catch (error) {
    if (error instanceof StatesError || signal.aborted) throw error;
    throw awsSdkIntegrationError(error, 'DynamoDb', MODELED);
  }
}

/** True when `action` is a DynamoDB API action the SDK integration can call. */
export function isDynamoDbAction(action: string): boolean {
  return commandClass(action) !== undefined;
}

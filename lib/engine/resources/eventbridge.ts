import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsCommandOutput,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { StatesError } from '../types.ts';
import { awsSdkIntegrationError } from './service-errors.ts';

const MODELED: ReadonlySet<string> = new Set([
  'InternalException',
  'ResourceNotFoundException',
  'ValidationException',
]);

/**
 * `arn:aws:states:::events:putEvents`: sends `Entries` (a `Detail` object is serialized to JSON, as
 * Step Functions does). The result is `{ Entries, FailedEntryCount }`; any failed entry fails the
 * task with `EventBridge.FailedEntry` and the whole response as its cause.
 */
export async function invokePutEvents(
  client: EventBridgeClient,
  parameters: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  const entries = (parameters as { Entries?: unknown } | null)?.Entries;
  if (!Array.isArray(entries)) {
    throw new StatesError(
      'EventBridge.EventBridgeException',
      "1 validation error detected: Value null at 'entries' failed to satisfy constraint: Member must not be null (Service: EventBridge, Status Code: 400)",
    );
  }
  const request: PutEventsRequestEntry[] = entries.map((entry: Record<string, unknown>) => {
    const detail = entry?.Detail;
    const time = entry?.Time;
    return {
      ...entry,
      ...(detail !== undefined && typeof detail !== 'string' ? { Detail: JSON.stringify(detail) } : {}),
      ...(typeof time === 'string' || typeof time === 'number' ? { Time: new Date(time) } : {}),
    } as PutEventsRequestEntry;
  });
  let response: PutEventsCommandOutput;
  try {
    response = await client.send(new PutEventsCommand({ Entries: request }), { abortSignal: signal });
  } catch (error) {
    if (signal.aborted) throw error;
    throw awsSdkIntegrationError(error, 'EventBridge', MODELED);
  }
  const result = { Entries: response.Entries ?? [], FailedEntryCount: response.FailedEntryCount ?? 0 };
  if (result.FailedEntryCount > 0) throw new StatesError('EventBridge.FailedEntry', JSON.stringify(result));
  return result;
}

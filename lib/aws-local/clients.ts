/**
 * SDK v3 clients for the local stack: the ordinary AWS clients with endpoint overrides and
 * dummy credentials, exactly as the Lambda handlers build them on AWS.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../runtime/journal/document-client.ts';

export interface LocalEndpoints {
  readonly dynamoEndpoint: string;
  readonly eventsEndpoint: string;
  /** The embedded engine's Step Functions API, when running. */
  readonly sfnEndpoint?: string;
  /** @default 'us-east-1' */
  readonly region?: string;
}

/** Credentials the local servers accept (they do not check signatures). */
export const LOCAL_CREDENTIALS = {
  accessKeyId: 'plangate-local',
  secretAccessKey: 'plangate-local',
} as const;

export interface LocalClients {
  readonly dynamo: DynamoDBClient;
  /** Marshals plain JavaScript values; drops undefined. */
  readonly doc: DynamoDBDocumentClient;
  readonly events: EventBridgeClient;
  readonly sfn?: SFNClient;
  /** Releases the clients' sockets. */
  destroy(): void;
}

export function localClients(endpoints: LocalEndpoints): LocalClients {
  const common = { region: endpoints.region ?? 'us-east-1', credentials: LOCAL_CREDENTIALS };
  const dynamo = new DynamoDBClient({ ...common, endpoint: endpoints.dynamoEndpoint });
  const doc = documentClient(dynamo);
  const events = new EventBridgeClient({ ...common, endpoint: endpoints.eventsEndpoint });
  const sfn = endpoints.sfnEndpoint
    ? new SFNClient({ ...common, endpoint: endpoints.sfnEndpoint })
    : undefined;
  return {
    dynamo,
    doc,
    events,
    sfn,
    destroy: () => {
      dynamo.destroy();
      events.destroy();
      sfn?.destroy();
    },
  };
}

/**
 * The same endpoints as environment variables (AWS_ENDPOINT_URL_<SERVICE>), which SDK v3 clients
 * created with no options pick up: a handler's `defaultDeps()` then talks to the local stack unchanged.
 */
export function localEnvironment(endpoints: LocalEndpoints): Record<string, string> {
  return {
    AWS_REGION: endpoints.region ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamoEndpoint,
    AWS_ENDPOINT_URL_EVENTBRIDGE: endpoints.eventsEndpoint,
    ...(endpoints.sfnEndpoint ? { AWS_ENDPOINT_URL_SFN: endpoints.sfnEndpoint } : {}),
  };
}

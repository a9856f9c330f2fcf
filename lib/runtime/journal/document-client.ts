import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** The document client plangate uses everywhere (same options locally and on AWS). */
export function documentClient(dynamo: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(dynamo, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
  });
}

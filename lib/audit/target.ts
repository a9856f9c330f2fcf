/**
 * Which events table an audit reads: the local store (dynalite opened on its data, or the running
 * session's endpoint; the engine is never started) or a table on AWS through the ordinary SDK
 * credential chain. Everything after this point is the same code for both.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../runtime/journal/document-client.ts';
import { type DefinitionReader, sfnDefinitionReader } from '../runtime/steps/integrity.ts';
import { storePaths } from '../serve/store-directory.ts';
import { openStoreReader, StoreNotFoundError, type StoreReader } from '../serve/store-reader.ts';

export type AuditTargetSpec =
  | { readonly kind: 'local'; readonly store: string }
  | { readonly kind: 'aws'; readonly table: string; readonly region?: string };

export interface AuditTarget {
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  /** e.g. `local store /home/me/.plangate` or `aws table plangate-events`. */
  readonly source: string;
  /** The definitions the engine runs (the local store's engine, or Step Functions on AWS). */
  readonly definitions?: DefinitionReader;
  close(): Promise<void>;
}

/**
 * The region as the AWS CLI chooses it: the flag, else AWS_REGION, else AWS_DEFAULT_REGION. The JS
 * SDK alone reads only AWS_REGION, so a shell set up for the AWS CLI would otherwise fail.
 */
export function awsRegion(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return flag || env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined;
}

/** Opens the target; a local store (or its events table) that does not exist is an error, never created. */
export async function openAuditTarget(spec: AuditTargetSpec): Promise<AuditTarget> {
  if (spec.kind === 'aws') {
    const dynamo = new DynamoDBClient(spec.region ? { region: spec.region } : {});
    const sfn = new SFNClient(spec.region ? { region: spec.region } : {});
    return {
      doc: documentClient(dynamo),
      table: spec.table,
      source: `aws table ${spec.table}`,
      definitions: sfnDefinitionReader(sfn),
      close: async () => {
        dynamo.destroy();
        sfn.destroy();
      },
    };
  }
  const paths = storePaths(spec.store);
  let reader: StoreReader;
  try {
    reader = await openStoreReader(paths);
  } catch (error) {
    if (!(error instanceof StoreNotFoundError)) throw error;
    throw new AuditTargetError(`${error.message} (give --store DIR, or --aws --table NAME)`);
  }
  return {
    doc: reader.doc,
    table: reader.eventsTable,
    source: `local store ${paths.root}`,
    definitions: reader.definitions,
    close: () => reader.close(),
  };
}

/** The target cannot be opened (reported, exit 1). */
export class AuditTargetError extends Error {
  override readonly name = 'AuditTargetError';
}

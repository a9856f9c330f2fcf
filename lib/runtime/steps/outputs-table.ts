/**
 * Step outputs too large for the state payload live in the outputs table; the ledger carries an
 * OutputRef (`dynamodb://<table>/<key>`, size and sha256) that later steps read back and verify.
 */
import { randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { OutputRef, StepEntry } from '../payloads/index.ts';
import { InvalidInputError } from '../shared/errors.ts';
import { sha256Hex } from '../shared/hash.ts';

const SCHEME = 'dynamodb://';

export async function storeOutput(
  dynamo: DynamoDBDocumentClient,
  table: string,
  executionId: string,
  stepId: string,
  output: Record<string, unknown>,
): Promise<OutputRef> {
  const json = JSON.stringify(output);
  const key = `${executionId}#${stepId}#${randomUUID()}`;
  await dynamo.send(
    new PutCommand({
      TableName: table,
      Item: { outputKey: key, json },
      ConditionExpression: 'attribute_not_exists(outputKey)',
    }),
  );
  return {
    uri: `${SCHEME}${table}/${key}`,
    bytes: Buffer.byteLength(json),
    sha256: `sha256:${sha256Hex(json)}`,
  };
}

export async function loadOutput(
  dynamo: DynamoDBDocumentClient,
  ref: OutputRef,
): Promise<Record<string, unknown>> {
  if (!ref.uri.startsWith(SCHEME))
    throw new InvalidInputError(`cannot read output ${ref.uri}: unknown scheme`);
  const rest = ref.uri.slice(SCHEME.length);
  const slash = rest.indexOf('/');
  const out = await dynamo.send(
    new GetCommand({
      TableName: rest.slice(0, slash),
      Key: { outputKey: rest.slice(slash + 1) },
      ConsistentRead: true,
    }),
  );
  const json = out.Item?.json;
  if (typeof json !== 'string') throw new InvalidInputError(`output ${ref.uri} does not exist`);
  if (`sha256:${sha256Hex(json)}` !== ref.sha256)
    throw new InvalidInputError(`output ${ref.uri} does not match its sha256`);
  return JSON.parse(json) as Record<string, unknown>;
}

/** A ledger entry's output, inline or read back from its ref. */
export async function entryOutput(
  dynamo: DynamoDBDocumentClient,
  entry: StepEntry | undefined,
): Promise<Record<string, unknown> | undefined> {
  if (!entry) return undefined;
  if (entry.output) return entry.output;
  if (entry.outputRef) return loadOutput(dynamo, entry.outputRef);
  return undefined;
}

/** The output inline when its JSON fits `inlineOutputLimitBytes`, else stored and referenced. */
export async function inlineOrStored(
  output: Record<string, unknown>,
  req: { readonly executionId: string; readonly stepId: string; readonly inlineOutputLimitBytes: number },
  deps: { readonly dynamo: DynamoDBDocumentClient; readonly tables: { readonly outputs: string } },
): Promise<{ output?: Record<string, unknown>; outputRef?: OutputRef }> {
  if (Buffer.byteLength(JSON.stringify(output)) <= req.inlineOutputLimitBytes) return { output };
  return {
    outputRef: await storeOutput(deps.dynamo, deps.tables.outputs, req.executionId, req.stepId, output),
  };
}

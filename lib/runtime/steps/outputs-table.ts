/**
 * Step outputs too large for the state payload live in the outputs table; the ledger carries an
 * OutputRef (`dynamodb://<table>/<key>`, size and sha256) that later steps read back and verify.
 */
import { randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type OutputRef, type RunnerResult, RunnerResultSchema, type StepEntry } from '../payloads/index.ts';
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

/**
 * A step attempt's runner result, kept whole (not TASK_COMPLETED's shortened summary) so that a
 * retry after a crash returns what the step produced instead of running it again
 * (README.md, "A step runs once"). One item per execution, step and attempt.
 */
type OutputsDeps = { readonly dynamo: DynamoDBDocumentClient; readonly tables: { readonly outputs: string } };

const runKey = (executionId: string, stepId: string, attempt: number) =>
  `run#${executionId}#${stepId}#${attempt}`;

/** Stores the attempt's result (written again with the same content, it changes nothing). */
export async function storeRunResult(executionId: string, result: RunnerResult, deps: OutputsDeps) {
  await deps.dynamo.send(
    new PutCommand({
      TableName: deps.tables.outputs,
      Item: { outputKey: runKey(executionId, result.stepId, result.attempt), json: JSON.stringify(result) },
    }),
  );
}

/** The attempt's stored result, if it has one. */
export async function loadRunResult(
  executionId: string,
  stepId: string,
  attempt: number,
  deps: OutputsDeps,
): Promise<RunnerResult | undefined> {
  const out = await deps.dynamo.send(
    new GetCommand({
      TableName: deps.tables.outputs,
      Key: { outputKey: runKey(executionId, stepId, attempt) },
      ConsistentRead: true,
    }),
  );
  const json = out.Item?.json;
  return typeof json === 'string' ? RunnerResultSchema.parse(JSON.parse(json)) : undefined;
}

/**
 * Forgets the attempt's result once its contract refused it (overwritten, not deleted: the
 * harness writes items, it never deletes them), so a retry of the step runs it again.
 */
export async function dropRunResult(executionId: string, stepId: string, attempt: number, deps: OutputsDeps) {
  await deps.dynamo.send(
    new PutCommand({
      TableName: deps.tables.outputs,
      Item: { outputKey: runKey(executionId, stepId, attempt), refused: true },
    }),
  );
}

/**
 * Exact joins across Parallel branches. A waiting step registers its task token and the
 * predecessors it needs; each predecessor signals its ledger entry and its ancestors' entries. Whichever call completes
 * the set releases the wait, once (a conditional update decides who), with SendTaskSuccess.
 * Signals may arrive before the wait; redelivery of either is harmless.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type {
  JoinRelease,
  JoinSignalRequest,
  JoinSignalResult,
  JoinWaitRequest,
  StepEntry,
} from '../payloads/index.ts';

export interface JoinDeps {
  readonly dynamo: DynamoDBDocumentClient;
  readonly joinsTable: string;
  readonly sfn: SFNClient;
}

/** Signals are stored one attribute per predecessor (ids are safe attribute-name characters). */
const SIGNAL_PREFIX = 'signal_';
/** The entries of a predecessor's own ancestors, stored beside its signal. */
const CARRIED_PREFIX = 'carried_';
const joinKey = (executionId: string, stepId: string): string => `${executionId}#${stepId}`;

export async function joinWait(req: JoinWaitRequest, deps: JoinDeps): Promise<void> {
  const key = joinKey(req.executionId, req.stepId);
  await deps.dynamo.send(
    new UpdateCommand({
      TableName: deps.joinsTable,
      Key: { joinKey: key },
      UpdateExpression: 'SET taskToken = :token, predecessors = :preds',
      ExpressionAttributeValues: { ':token': req.taskToken, ':preds': req.predecessors },
    }),
  );
  await releaseIfReady(key, deps);
}

export async function joinSignal(req: JoinSignalRequest, deps: JoinDeps): Promise<JoinSignalResult> {
  const released: string[] = [];
  for (const successor of req.successors) {
    const key = joinKey(req.executionId, successor);
    await deps.dynamo.send(
      new UpdateCommand({
        TableName: deps.joinsTable,
        Key: { joinKey: key },
        UpdateExpression: 'SET #carried = :carried, #signal = :entry',
        ExpressionAttributeNames: {
          '#signal': `${SIGNAL_PREFIX}${req.stepId}`,
          '#carried': `${CARRIED_PREFIX}${req.stepId}`,
        },
        ExpressionAttributeValues: { ':entry': req.entry, ':carried': req.carried },
      }),
    );
    if (await releaseIfReady(key, deps)) released.push(successor);
  }
  return { released };
}

/** Releases the wait when the token is registered and every predecessor signalled; true for the one caller that did. */
async function releaseIfReady(key: string, deps: JoinDeps): Promise<boolean> {
  const out = await deps.dynamo.send(
    new GetCommand({ TableName: deps.joinsTable, Key: { joinKey: key }, ConsistentRead: true }),
  );
  const item = out.Item as Record<string, unknown> | undefined;
  if (!item || typeof item.taskToken !== 'string' || item.released === true) return false;
  const predecessors = (item.predecessors ?? []) as string[];
  const entries: Record<string, StepEntry> = {};
  for (const id of predecessors) {
    const entry = item[`${SIGNAL_PREFIX}${id}`] as StepEntry | undefined;
    if (!entry) return false;
    Object.assign(entries, item[`${CARRIED_PREFIX}${id}`] as Record<string, StepEntry> | undefined);
  }
  // The predecessors' own entries last: a carried copy never stands in for the signalled one.
  for (const id of predecessors) entries[id] = item[`${SIGNAL_PREFIX}${id}`] as StepEntry;
  try {
    await deps.dynamo.send(
      new UpdateCommand({
        TableName: deps.joinsTable,
        Key: { joinKey: key },
        ConditionExpression: 'attribute_not_exists(released)',
        UpdateExpression: 'SET released = :true REMOVE taskToken',
        ExpressionAttributeValues: { ':true': true },
      }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
  const release: JoinRelease = { entries };
  await deps.sfn.send(
    new SendTaskSuccessCommand({ taskToken: item.taskToken, output: JSON.stringify(release) }),
  );
  return true;
}

/**
 * On AWS the events table's stream feeds the anchor Lambda (lambdas/anchor.ts), batched by its
 * event source mapping (at most N records or T seconds), so anchoring costs one signature per
 * execution per batch, not per event. A batch yields the newest head of each execution it
 * inserted into, and every change to an existing item: the table denies updates and deletes, so
 * a MODIFY or REMOVE is an overwrite by a PutItem without the journal's condition.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import type { ChainHeadRef } from './anchor-digest.ts';

/** An existing event changed or removed, as the stream saw it. */
export interface OverwriteSeen {
  readonly executionId: string;
  readonly sk: string;
  readonly change: 'MODIFY' | 'REMOVE';
}

export interface StreamBatchHeads {
  readonly heads: readonly ChainHeadRef[];
  readonly overwrites: readonly OverwriteSeen[];
}

export function streamBatchHeads(records: readonly DynamoDBRecord[]): StreamBatchHeads {
  const heads = new Map<string, ChainHeadRef>();
  const overwrites: OverwriteSeen[] = [];
  for (const record of records) {
    const keys = record.dynamodb?.Keys;
    if (record.eventName === 'MODIFY' || record.eventName === 'REMOVE') {
      overwrites.push({
        executionId: keys?.executionId?.S ?? '?',
        sk: keys?.sk?.S ?? '?',
        change: record.eventName,
      });
      continue;
    }
    const image = record.dynamodb?.NewImage;
    const executionId = image?.executionId?.S;
    const seq = Number(image?.seq?.N);
    const hash = image?.hash?.S;
    if (!executionId || !Number.isInteger(seq) || !hash) continue;
    const known = heads.get(executionId);
    if (!known || known.seq < seq) heads.set(executionId, { executionId, seq, hash });
  }
  return { heads: [...heads.values()], overwrites };
}

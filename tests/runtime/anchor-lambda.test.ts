/**
 * The anchor Lambda (lambdas/anchor.ts) on stream batches shaped as DynamoDB Streams delivers
 * them: one anchor per execution per batch (its newest head), overwrites reported, never anchored;
 * its anchors then catch a forged history in the table (lib/audit/anchors.ts).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { makeHandler } from '../../lambdas/anchor.ts';
import { checkAnchors } from '../../lib/audit/anchors.ts';
import type { AnchorDigest } from '../../lib/runtime/journal/anchor-digest.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import type { Telemetry } from '../../lib/runtime/telemetry/telemetry.ts';
import { loadAnchorKey } from '../../lib/serve/anchor-key.ts';
import { forgeries, type Item, rechain } from '../support/journal-forgery.ts';

function history(executionId: string, n: number): Item[] {
  return rechain(
    Array.from({ length: n }, (_, i) => ({
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      event: i === 1 ? 'GATE_APPROVED' : 'TASK_STARTED',
      executionId,
      planId: 'p',
      planVersion: 1,
      planDigest: `sha256:${'d'.repeat(64)}`,
      details: i === 1 ? { gate: 'plan', decision: 'APPROVE', approver: 'alice' } : {},
    })) as unknown as JournalRecord[],
  );
}

/** A stream record as DynamoDB Streams sends it (the attributes the anchor reads). */
function streamRecord(item: Item, eventName: DynamoDBRecord['eventName'] = 'INSERT'): DynamoDBRecord {
  const keys = { executionId: { S: String(item.executionId) }, sk: { S: String(item.sk) } };
  return {
    eventName,
    dynamodb: {
      Keys: keys,
      NewImage: { ...keys, seq: { N: String(item.seq) }, hash: { S: String(item.hash) } },
    },
  };
}

async function anchorLambda() {
  const temp = () => mkdtemp(join(tmpdir(), 'plangate-anchor-lambda-'));
  const key = await loadAnchorKey(join(await temp(), 'k'), await temp());
  const written: AnchorDigest[] = [];
  const errors: string[] = [];
  const telemetry = {
    reportError: (_: unknown, message: string) => errors.push(message),
  } as unknown as Telemetry;
  const handler = makeHandler({
    signer: key.signer,
    sink: { append: async (d) => void written.push(...d) },
    telemetry,
  });
  return { handler, written, errors, key };
}

describe('anchor Lambda', () => {
  it("anchors each execution's newest head once per batch, and its anchors catch every forgery", async () => {
    const { handler, written, key } = await anchorLambda();
    const a = history('exec-a', 8);
    const b = history('exec-b', 3);
    await handler({ Records: [...a.slice(0, 5), ...b].map((item) => streamRecord(item)) });
    expect(written.map((d) => `${d.executionId}@${d.seq}`)).toEqual(['exec-a@5', 'exec-b@3']);
    await handler({ Records: a.slice(5).map((item) => streamRecord(item)) });
    expect(written.map((d) => `${d.executionId}@${d.seq}`)).toEqual(['exec-a@5', 'exec-b@3', 'exec-a@8']);
    const mine = written.filter((d) => d.executionId === 'exec-a');
    expect(checkAnchors('exec-a', a, mine, key.publicKeyPem).problems).toEqual([]);
    for (const forgery of forgeries('alice')) {
      const forged = forgery.forge(a as unknown as JournalRecord[]);
      const kinds = checkAnchors('exec-a', forged, mine, key.publicKeyPem).problems.map((p) => p.kind);
      expect(kinds, forgery.name).toContain(forgery.expected);
    }
  });

  it('reports an overwritten or removed event as a harness error and does not anchor it', async () => {
    const { handler, written, errors } = await anchorLambda();
    const [first, second] = history('exec-c', 2) as [Item, Item];
    const out = await handler({ Records: [streamRecord(first, 'MODIFY'), streamRecord(second, 'REMOVE')] });
    expect(out).toEqual({ anchored: 0, overwrites: 2 });
    expect(written).toEqual([]);
    expect(errors).toEqual([
      'an existing event (sk 000000000001) was overwritten',
      'an existing event (sk 000000000002) was removed',
    ]);
  });
});

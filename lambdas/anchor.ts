/**
 * Anchor Lambda: fed by the events table's stream in batches, signs each execution's newest head
 * with the KMS key only it may use and writes the digests to the Object Lock bucket
 * (lib/runtime/journal/anchor-stream.ts). An overwrite or removal of an existing event seen on the
 * stream is reported as a harness error (the HarnessErrors alarm), never anchored.
 */
import { KMSClient } from '@aws-sdk/client-kms';
import { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { type AnchorSigner, signAnchor } from '../lib/runtime/journal/anchor-digest.ts';
import { streamBatchHeads } from '../lib/runtime/journal/anchor-stream.ts';
import type { DigestSink } from '../lib/runtime/journal/anchorer.ts';
import { kmsAnchorSigner } from '../lib/runtime/journal/kms-signer.ts';
import { s3DigestSink } from '../lib/runtime/journal/s3-digests.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { awsHandler } from './aws-handler.ts';
import { traced } from './default-deps.ts';

export interface AnchorDeps {
  readonly signer: AnchorSigner;
  readonly sink: DigestSink;
  readonly telemetry?: Telemetry;
  /** @default () => new Date() */
  readonly clock?: () => Date;
}

export const makeHandler =
  (deps: AnchorDeps) =>
  async (event: DynamoDBStreamEvent): Promise<{ anchored: number; overwrites: number }> => {
    const { heads, overwrites } = streamBatchHeads(event.Records);
    for (const seen of overwrites)
      deps.telemetry?.reportError(
        { execution: seen.executionId },
        `an existing event (sk ${seen.sk}) was ${seen.change === 'MODIFY' ? 'overwritten' : 'removed'}`,
        undefined,
      );
    const time = (deps.clock ?? (() => new Date()))();
    const digests = await Promise.all(heads.map((head) => signAnchor(deps.signer, head, time)));
    // A failure fails the batch: the event source mapping retries it, so no head goes unanchored.
    await deps.sink.append(digests);
    return { anchored: digests.length, overwrites: overwrites.length };
  };

export const handler = awsHandler('anchor', makeHandler, (env, telemetry) => ({
  signer: kmsAnchorSigner(traced(telemetry, new KMSClient({})), env.PLANGATE_ANCHOR_KEY_ARN),
  sink: s3DigestSink(traced(telemetry, new S3Client({})), env.PLANGATE_ANCHOR_BUCKET),
  telemetry,
}));

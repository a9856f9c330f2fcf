/**
 * Signed anchors on AWS: one object per digest in the anchor bucket, which has S3 Object Lock in
 * compliance mode (versioned, a default retention nobody can shorten), as CloudTrail keeps its
 * digest files: an object can be added but, until its retention ends, never overwritten or deleted
 * by anyone, the account's root included. Keys: `digests/<execution id, URI-encoded>/<seq>-<time>.json`.
 */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { type AnchorDigest, AnchorDigestSchema } from './anchor-digest.ts';
import type { DigestSink } from './anchorer.ts';
import { formatSeq } from './journal.ts';

const PREFIX = 'digests/';

export function digestObjectKey(digest: AnchorDigest): string {
  return `${PREFIX}${encodeURIComponent(digest.executionId)}/${formatSeq(digest.seq)}-${digest.time}.json`;
}

export function s3DigestSink(s3: S3Client, bucket: string): DigestSink {
  return {
    async append(digests) {
      await Promise.all(
        digests.map((digest) =>
          s3.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: digestObjectKey(digest),
              Body: JSON.stringify(digest),
              ContentType: 'application/json',
              // Object Lock buckets require an integrity checksum on every put.
              ChecksumAlgorithm: 'SHA256',
            }),
          ),
        ),
      );
    },
  };
}

/** Every digest in the bucket (of one execution when given), and the keys that held no digest. */
export async function readS3Digests(
  s3: S3Client,
  bucket: string,
  executionId?: string,
): Promise<{ digests: AnchorDigest[]; unreadable: { key: string; message: string }[] }> {
  const digests: AnchorDigest[] = [];
  const unreadable: { key: string; message: string }[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: executionId === undefined ? PREFIX : `${PREFIX}${encodeURIComponent(executionId)}/`,
        ContinuationToken: token,
      }),
    );
    for (const object of page.Contents ?? []) {
      if (!object.Key) continue;
      const body = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key }));
      const text = (await body.Body?.transformToString('utf8')) ?? '';
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        unreadable.push({ key: object.Key, message: 'not JSON' });
        continue;
      }
      const parsed = AnchorDigestSchema.safeParse(value);
      if (parsed.success) digests.push(parsed.data);
      else unreadable.push({ key: object.Key, message: parsed.error.issues[0]?.message ?? 'not a digest' });
    }
    token = page.NextContinuationToken;
  } while (token);
  return { digests, unreadable };
}

/**
 * Where an audit finds the signed anchors and the public key it trusts. Locally: the store's
 * digest log; the key given with `--anchor-key FILE`, else the local anchor key's public half
 * (outside the store), else, said so, the copy kept beside the digests, which whoever rewrites
 * the store could replace with their own. On AWS: the anchor bucket's digests, and the key given
 * with `--anchor-key FILE`, else the KMS key's public half (kms:GetPublicKey on the key the
 * digests name, which must be the one key all of them name).
 */
import { createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { GetPublicKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AnchorDigest } from '../runtime/journal/anchor-digest.ts';
import { readS3Digests } from '../runtime/journal/s3-digests.ts';
import { anchorKeyDir, readAnchorPublicKey } from '../serve/anchor-key.ts';
import { readDigestLog, type UnreadableDigest } from '../serve/digest-log.ts';
import { storePaths } from '../serve/store-directory.ts';
import { type AnchorCheck, checkAnchors, digestsByExecution } from './anchors.ts';
import { readExecutionItems } from './verify.ts';

export interface AnchorSource {
  readonly byExecution: ReadonlyMap<string, readonly AnchorDigest[]>;
  readonly unreadable: readonly UnreadableDigest[];
  /** Where the digests were read, e.g. the digest log's path. */
  readonly where: string;
  readonly publicKeyPem: string | undefined;
  /** Which public key is trusted, said with the summary. */
  readonly keyNote: string;
}

export interface LocalAnchorOptions {
  readonly store: string;
  /** A public key file (SPKI PEM) to trust instead of the local anchor key. */
  readonly anchorKeyFile?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export async function localAnchorSource(options: LocalAnchorOptions): Promise<AnchorSource> {
  const log = await readDigestLog(storePaths(options.store));
  let publicKeyPem: string | undefined;
  let keyNote: string;
  if (options.anchorKeyFile !== undefined) {
    publicKeyPem = await readFile(options.anchorKeyFile, 'utf8');
    keyNote = `anchors checked with the public key in ${options.anchorKeyFile}`;
  } else {
    const dir = anchorKeyDir(options.env);
    publicKeyPem = await readAnchorPublicKey(dir);
    keyNote = publicKeyPem
      ? `anchors checked with the local anchor key's public half (${dir})`
      : log.publicKeyPem
        ? "anchors checked with the store's own copy of the public key (pin the signer's key with --anchor-key FILE)"
        : 'no public key to check anchors with';
    publicKeyPem ??= log.publicKeyPem;
  }
  return {
    byExecution: digestsByExecution(log.digests),
    unreadable: log.unreadable,
    where: log.file,
    publicKeyPem,
    keyNote,
  };
}

export interface AwsAnchorOptions {
  readonly bucket: string;
  readonly region?: string;
  readonly anchorKeyFile?: string;
}

export async function awsAnchorSource(options: AwsAnchorOptions): Promise<AnchorSource> {
  const config = options.region ? { region: options.region } : {};
  const s3 = new S3Client(config);
  try {
    const { digests, unreadable } = await readS3Digests(s3, options.bucket);
    let publicKeyPem: string | undefined;
    let keyNote: string;
    if (options.anchorKeyFile !== undefined) {
      publicKeyPem = await readFile(options.anchorKeyFile, 'utf8');
      keyNote = `anchors checked with the public key in ${options.anchorKeyFile}`;
    } else {
      const keys = [...new Set(digests.map((d) => d.keyId))];
      if (keys.length === 1 && keys[0]) {
        const kms = new KMSClient(config);
        try {
          const out = await kms.send(new GetPublicKeyCommand({ KeyId: keys[0] }));
          if (out.PublicKey)
            publicKeyPem = createPublicKey({ key: Buffer.from(out.PublicKey), format: 'der', type: 'spki' })
              .export({ type: 'spki', format: 'pem' })
              .toString();
        } finally {
          kms.destroy();
        }
      }
      keyNote =
        keys.length > 1
          ? `the digests name ${keys.length} keys: give the signer's public key with --anchor-key FILE`
          : `anchors checked with the public key KMS gives for ${keys[0] ?? 'no key'}`;
    }
    return {
      byExecution: digestsByExecution(digests),
      unreadable: unreadable.map((u, i) => ({ line: i + 1, message: `${u.key}: ${u.message}` })),
      where: `s3://${options.bucket}/digests/`,
      publicKeyPem,
      keyNote,
    };
  } finally {
    s3.destroy();
  }
}

/** One execution's chain, as stored now, against its anchors. */
export async function verifyAnchors(
  doc: DynamoDBDocumentClient,
  table: string,
  executionId: string,
  source: AnchorSource,
): Promise<AnchorCheck> {
  const items = await readExecutionItems(doc, table, executionId);
  return checkAnchors(executionId, items, source.byExecution.get(executionId) ?? [], source.publicKeyPem);
}

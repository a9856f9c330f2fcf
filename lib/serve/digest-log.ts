/**
 * The local store's digest log (`<store>/anchors/digests.jsonl`): signed anchors of the journal's
 * heads, one JSON line each, appended and fsynced, and beside it a copy of the public key they
 * verify with (`anchor-key.pub`). It may live in the store: its lines are signed with a key the
 * store does not hold, so whoever rewrites the store can delete or garble them (reported, or
 * shown as "not yet anchored") but cannot forge one.
 */
import { mkdir, open, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type AnchorDigest, AnchorDigestSchema } from '../runtime/journal/anchor-digest.ts';
import type { DigestSink } from '../runtime/journal/anchorer.ts';
import { PUBLIC_KEY_FILE } from './anchor-key.ts';
import type { StorePaths } from './store-directory.ts';

const DIGESTS_FILE = 'digests.jsonl';

export function digestLogFile(paths: StorePaths): string {
  return join(paths.anchors, DIGESTS_FILE);
}

/**
 * The sink the local stack's anchorer appends to; records the public key beside the digests. A
 * line a killed process left half-written was never a digest: it is cut off before appending.
 */
export async function openDigestLog(paths: StorePaths, publicKeyPem: string): Promise<DigestSink> {
  await mkdir(paths.anchors, { recursive: true });
  await writeFile(join(paths.anchors, PUBLIC_KEY_FILE), publicKeyPem);
  const text = await readFile(digestLogFile(paths), 'utf8').catch(() => '');
  if (text !== '' && !text.endsWith('\n'))
    await truncate(digestLogFile(paths), Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
  return {
    async append(digests) {
      if (digests.length === 0) return;
      const file = await open(digestLogFile(paths), 'a', 0o644);
      try {
        await file.write(digests.map((d) => `${JSON.stringify(d)}\n`).join(''));
        await file.datasync();
      } finally {
        await file.close();
      }
    },
  };
}

/** A line of the log that is not a digest: reported by `plangate audit verify`, with its line number. */
export interface UnreadableDigest {
  readonly line: number;
  readonly message: string;
}

export interface DigestLogContents {
  readonly digests: readonly AnchorDigest[];
  readonly unreadable: readonly UnreadableDigest[];
  /** The public key copy kept beside the digests, if any. */
  readonly publicKeyPem: string | undefined;
  readonly file: string;
}

export async function readDigestLog(paths: StorePaths): Promise<DigestLogContents> {
  const file = digestLogFile(paths);
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  const digests: AnchorDigest[] = [];
  const unreadable: UnreadableDigest[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      unreadable.push({ line: index + 1, message: 'not JSON' });
      continue;
    }
    const parsed = AnchorDigestSchema.safeParse(value);
    if (parsed.success) digests.push(parsed.data);
    else {
      const issue = parsed.error.issues[0];
      unreadable.push({
        line: index + 1,
        message: `${issue?.path.join('.') || 'digest'}: ${issue?.message}`,
      });
    }
  }
  const publicKeyPem = await readFile(join(paths.anchors, PUBLIC_KEY_FILE), 'utf8').catch(() => undefined);
  return { digests, unreadable, publicKeyPem, file };
}

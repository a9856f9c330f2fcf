/** Anchors of the journal's head: signing and checking them, when they are made, and the local key. */
import { generateKeyPairSync, sign } from 'node:crypto';
import { appendFile, mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type AnchorDigest,
  type AnchorSigner,
  anchorSignatureValid,
  signAnchor,
} from '../../lib/runtime/journal/anchor-digest.ts';
import { Anchorer } from '../../lib/runtime/journal/anchorer.ts';
import { GENESIS_HASH } from '../../lib/runtime/journal/journal.ts';
import type { EventType, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { AnchorKeyPlacementError, loadAnchorKey } from '../../lib/serve/anchor-key.ts';
import { digestLogFile, openDigestLog, readDigestLog } from '../../lib/serve/digest-log.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';

const HEAD = { executionId: 'exec-1', seq: 7, hash: `sha256:${'a'.repeat(64)}` };
const T = new Date('2026-01-02T03:04:05.000Z');

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'plangate-anchor-'));
}

/** An ECDSA P-256 signer answering as KMS does (DER signatures of the SHA-256 of the message). */
function p256Signer(): { signer: AnchorSigner; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    signer: {
      keyId: 'arn:aws:kms:us-east-1:123456789012:key/test',
      algorithm: 'ecdsa-p256-sha256',
      sign: async (message) => sign('sha256', message, { key: privateKey, dsaEncoding: 'der' }),
    },
  };
}

describe('anchor digests', () => {
  it('verify with the signing key only, and not once any signed field changes', async () => {
    const key = await loadAnchorKey(join(await tempDir(), 'k'), await tempDir());
    const other = await loadAnchorKey(join(await tempDir(), 'k'), await tempDir());
    const digest = await signAnchor(key.signer, HEAD, T);
    expect(digest).toMatchObject({
      v: 1,
      executionId: 'exec-1',
      seq: 7,
      head: HEAD.hash,
      time: T.toISOString(),
    });
    expect(anchorSignatureValid(digest, key.publicKeyPem)).toBe(true);
    expect(anchorSignatureValid(digest, other.publicKeyPem)).toBe(false);
    const changes: Partial<AnchorDigest>[] = [
      { seq: 8 },
      { head: `sha256:${'b'.repeat(64)}` },
      { executionId: 'exec-2' },
      { time: '2026-01-02T03:04:06.000Z' },
      { keyId: other.signer.keyId },
      { signature: Buffer.alloc(64).toString('base64') },
    ];
    for (const change of changes)
      expect(anchorSignatureValid({ ...digest, ...change }, key.publicKeyPem)).toBe(false);
  });

  it('verify ECDSA P-256 signatures in DER (what KMS ECC_NIST_P256 returns), and refuse a key of the other kind', async () => {
    const { signer, publicKeyPem } = p256Signer();
    const digest = await signAnchor(signer, HEAD, T);
    expect(anchorSignatureValid(digest, publicKeyPem)).toBe(true);
    const ed = await loadAnchorKey(join(await tempDir(), 'k'), await tempDir());
    expect(anchorSignatureValid(digest, ed.publicKeyPem)).toBe(false);
    expect(anchorSignatureValid({ ...digest, algorithm: 'ed25519' }, publicKeyPem)).toBe(false);
  });
});

describe('the local anchor key', () => {
  it('is created on first use (private half 0600) and the same key is loaded again', async () => {
    const dir = join(await tempDir(), 'keys');
    const first = await loadAnchorKey(dir, await tempDir());
    expect((await stat(join(dir, 'anchor-key'))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(dir, 'anchor-key.pub'), 'utf8')).toBe(first.publicKeyPem);
    const again = await loadAnchorKey(dir, await tempDir());
    expect(again.signer.keyId).toBe(first.signer.keyId);
    expect(first.signer.keyId).toMatch(/^ed25519:[0-9a-f]{64}$/);
  });

  it('is refused inside the store, where whoever rewrites the store could use it', async () => {
    const store = await tempDir();
    await expect(loadAnchorKey(join(store, 'keys'), store)).rejects.toBeInstanceOf(AnchorKeyPlacementError);
    await expect(loadAnchorKey(store, store)).rejects.toThrow(/PLANGATE_ANCHOR_KEY_DIR/);
  });
});

function record(seq: number, event: EventType = 'TASK_STARTED', executionId = 'exec-1'): JournalRecord {
  return {
    timestamp: T.toISOString(),
    event,
    executionId,
    planId: 'p',
    planVersion: 1,
    planDigest: `sha256:${'c'.repeat(64)}`,
    details: {},
    seq,
    prevHash: GENESIS_HASH,
    hash: `sha256:${seq.toString(16).padStart(64, '0')}`,
  };
}

function recordingAnchorer(props: { maxEvents?: number; maxDelayMs?: number } = {}) {
  const written: AnchorDigest[][] = [];
  const signer: AnchorSigner = { keyId: 'k', algorithm: 'ed25519', sign: async () => Buffer.from('sig') };
  const anchorer = new Anchorer({
    signer,
    sink: { append: async (d) => void written.push([...d]) },
    ...props,
  });
  return { anchorer, written };
}

describe('Anchorer: batches, not one anchor per event', () => {
  it('anchors at once at a gate and at the end of a run, the newest head only', async () => {
    const { anchorer, written } = recordingAnchorer({ maxDelayMs: 60_000 });
    for (let seq = 1; seq <= 4; seq++) anchorer.observe(record(seq));
    anchorer.observe(record(5, 'GATE_APPROVAL_REQUESTED'));
    await anchorer.flush();
    expect(written.flat().map((d) => d.seq)).toEqual([5]);
    anchorer.observe(record(6));
    anchorer.observe(record(7, 'EXECUTION_COMPLETE'));
    await anchorer.flush();
    expect(written.flat().map((d) => d.seq)).toEqual([5, 7]);
  });

  it('anchors every maxEvents events, and maxDelayMs after the first unanchored one', async () => {
    const { anchorer, written } = recordingAnchorer({ maxEvents: 3, maxDelayMs: 30 });
    for (let seq = 1; seq <= 3; seq++) anchorer.observe(record(seq));
    await anchorer.flush();
    expect(written.flat().map((d) => d.seq)).toEqual([3]);
    anchorer.observe(record(4));
    await new Promise((r) => setTimeout(r, 120));
    expect(written.flat().map((d) => d.seq)).toEqual([3, 4]);
  });

  it('anchors each execution of a batch, never an older head over a newer one', async () => {
    const { anchorer, written } = recordingAnchorer({ maxDelayMs: 60_000 });
    anchorer.observe(record(2, 'TASK_STARTED', 'a'));
    anchorer.observe(record(1, 'TASK_STARTED', 'a'));
    anchorer.observe(record(9, 'TASK_STARTED', 'b'));
    await anchorer.flush();
    expect(written.flat().map((d) => `${d.executionId}@${d.seq}`)).toEqual(['a@2', 'b@9']);
    await anchorer.flush();
    expect(written).toHaveLength(1);
  });

  it('reports a failed write and carries on', async () => {
    const errors: unknown[] = [];
    const signer: AnchorSigner = { keyId: 'k', algorithm: 'ed25519', sign: async () => Buffer.from('s') };
    const anchorer = new Anchorer({
      signer,
      sink: { append: async () => Promise.reject(new Error('disk full')) },
      onError: (e) => errors.push(e),
    });
    anchorer.observe(record(1, 'EXECUTION_COMPLETE'));
    await anchorer.flush();
    expect(String(errors[0])).toContain('disk full');
  });
});

describe('the local digest log', () => {
  it('cuts off a line a killed process left half-written before appending', async () => {
    const paths = storePaths(join(await tempDir(), '.plangate'));
    const key = await loadAnchorKey(join(await tempDir(), 'k'), paths.root);
    const first = await signAnchor(key.signer, HEAD, T);
    await (await openDigestLog(paths, key.publicKeyPem)).append([first]);
    await appendFile(digestLogFile(paths), '{"v":1,"executionId":"exec-1","se');
    const second = await signAnchor(key.signer, { ...HEAD, seq: 8 }, T);
    await (await openDigestLog(paths, key.publicKeyPem)).append([second]);
    expect((await readFile(digestLogFile(paths), 'utf8')).split('\n')).toHaveLength(3);
    const log = await readDigestLog(paths);
    expect(log.digests.map((d) => d.seq)).toEqual([7, 8]);
    expect(log.unreadable).toEqual([]);
    expect(log.publicKeyPem).toBe(key.publicKeyPem);
  });
});

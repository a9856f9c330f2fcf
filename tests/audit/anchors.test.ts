/**
 * checkAnchors on forged histories: any re-chained change at or before an anchored seq, and any
 * truncation below it, is found (fast-check over chains, anchors, and where the change lands); a
 * change after the last anchor is not, and is counted as not yet anchored, as docs/audit.md says.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkAnchors } from '../../lib/audit/anchors.ts';
import { type AnchorDigest, signAnchor } from '../../lib/runtime/journal/anchor-digest.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { type LocalAnchorKey, loadAnchorKey } from '../../lib/serve/anchor-key.ts';
import { type Item, rechain } from '../support/journal-forgery.ts';

let key: LocalAnchorKey;

/** A new key in a directory of its own, for a store elsewhere. */
async function freshKey(): Promise<LocalAnchorKey> {
  const temp = () => mkdtemp(join(tmpdir(), 'plangate-anchors-'));
  return loadAnchorKey(join(await temp(), 'k'), await temp());
}
beforeAll(async () => {
  key = await freshKey();
});

const EXEC = 'exec-anchored';

function history(n: number): JournalRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    event: i === 0 ? 'PLAN_CREATED' : 'TASK_STARTED',
    executionId: EXEC,
    planId: 'p',
    planVersion: 1,
    planDigest: `sha256:${'d'.repeat(64)}`,
    details: { step: i },
    seq: 0,
    prevHash: '',
    hash: '',
  })) as JournalRecord[];
}

async function anchorsOf(items: readonly Item[], seqs: readonly number[]): Promise<AnchorDigest[]> {
  return Promise.all(
    seqs.map((seq) =>
      signAnchor(key.signer, { executionId: EXEC, seq, hash: String(items[seq - 1]?.hash) }, new Date()),
    ),
  );
}

const records = (items: readonly Item[]) => items as unknown as JournalRecord[];

const chainAndAnchors = fc.integer({ min: 2, max: 30 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    anchored: fc.uniqueArray(fc.integer({ min: 1, max: n }), { minLength: 1 }),
  }),
);

describe('checkAnchors', () => {
  it('an untouched chain holds at its last anchor; the rest is not yet anchored', async () => {
    const items = rechain(history(10));
    const check = checkAnchors(EXEC, items, await anchorsOf(items, [3, 7]), key.publicKeyPem);
    expect(check).toMatchObject({ problems: [], anchoredSeq: 7, unanchored: 3, digests: 2 });
  });

  it('finds every re-chained edit at or before an anchored seq, names the last anchor that holds, and misses none', async () => {
    await fc.assert(
      fc.asyncProperty(chainAndAnchors, fc.nat(), fc.string(), async ({ n, anchored }, where, value) => {
        const items = rechain(history(n));
        const digests = await anchorsOf(items, anchored);
        const at = where % n;
        const forged = rechain(
          records(items).map((r, i) => (i === at ? { ...r, details: { ...r.details, forged: value } } : r)),
        );
        const check = checkAnchors(EXEC, forged, digests, key.publicKeyPem);
        const last = Math.max(...anchored);
        if (at + 1 <= last) {
          const first = check.problems[0];
          expect(first?.kind).toBe('diverged');
          const lastGood = Math.max(0, ...anchored.filter((s) => s <= at));
          expect(check.anchoredSeq).toBe(lastGood);
          expect(first?.message).toContain(lastGood > 0 ? `after seq ${lastGood},` : 'from the first event');
        } else {
          expect(check.problems).toEqual([]);
          expect(check.unanchored).toBe(n - last);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('finds a dropped tail that reaches below an anchored seq', async () => {
    await fc.assert(
      fc.asyncProperty(chainAndAnchors, fc.nat(), async ({ n, anchored }, drop) => {
        const items = rechain(history(n));
        const digests = await anchorsOf(items, anchored);
        const kept = items.slice(0, n - (1 + (drop % n)));
        const check = checkAnchors(EXEC, kept, digests, key.publicKeyPem);
        const truncated = anchored.some((s) => s > kept.length);
        expect(check.problems.some((p) => p.kind === 'truncated')).toBe(truncated);
      }),
      { numRuns: 100 },
    );
  });

  it('reports an anchor the trusted key did not sign, and one it cannot check without a key', async () => {
    const items = rechain(history(5));
    const [digest] = await anchorsOf(items, [5]);
    if (!digest) throw new Error('no digest');
    const other = await freshKey();
    const bad = checkAnchors(EXEC, items, [digest], other.publicKeyPem);
    expect(bad.problems.map((p) => p.kind)).toEqual(['bad-signature']);
    expect(bad.anchoredSeq).toBe(0);
    expect(checkAnchors(EXEC, items, [digest], undefined).problems[0]?.message).toContain('no public key');
  });
});

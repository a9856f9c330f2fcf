/**
 * Checks an execution's stored chain against its signed anchors (lib/runtime/journal/anchor-digest.ts):
 * the chain check (verify.ts) trusts the table, since whoever can write it can re-chain a
 * rewritten history with the documented hash; an anchor, signed with a key the table's writers
 * cannot use, pins the head at one sequence number. A rewritten, re-chained, inserted or
 * re-ordered event at or before an anchored seq changes the hash stored there; a dropped tail
 * leaves the anchored seq missing. Events after the last anchor are reported as not yet anchored.
 */
import { type AnchorDigest, anchorSignatureValid } from '../runtime/journal/anchor-digest.ts';

export const ANCHOR_PROBLEM_KINDS = [
  /** The stored event at an anchored seq does not have the anchored head hash: the history up to it was rewritten. */
  'diverged',
  /** The stored chain ends before an anchored seq: its tail was dropped. */
  'truncated',
  /** A digest's signature does not verify with the trusted public key (forged, or another key's). */
  'bad-signature',
  /** A line of the digest log is not a digest at all. */
  'unreadable-digest',
] as const;
export type AnchorProblemKind = (typeof ANCHOR_PROBLEM_KINDS)[number];

export interface AnchorProblem {
  readonly executionId: string;
  readonly seq: number | undefined;
  readonly kind: AnchorProblemKind;
  readonly message: string;
}

export interface AnchorCheck {
  readonly problems: readonly AnchorProblem[];
  /** The highest seq whose anchor holds (0: none). */
  readonly anchoredSeq: number;
  /** When that anchor was signed. */
  readonly anchoredAt: string | undefined;
  /** Stored events after the last anchor that holds: not yet anchored (not a problem by itself). */
  readonly unanchored: number;
  /** Digests of this execution read. */
  readonly digests: number;
}

/**
 * Checks one execution's raw items (key order, each with its `sk` and `hash`) against the digests
 * of that execution, verified with `publicKeyPem`.
 */
export function checkAnchors(
  executionId: string,
  items: readonly Record<string, unknown>[],
  digests: readonly AnchorDigest[],
  publicKeyPem: string | undefined,
): AnchorCheck {
  const hashAt = new Map<number, unknown>();
  let lastSeq = 0;
  for (const item of items) {
    if (typeof item.sk !== 'string' || !/^\d+$/.test(item.sk)) continue;
    const seq = Number(item.sk);
    hashAt.set(seq, item.hash);
    lastSeq = Math.max(lastSeq, seq);
  }
  const problems: AnchorProblem[] = [];
  const problem = (seq: number, kind: AnchorProblemKind, message: string) =>
    problems.push({ executionId, seq, kind, message: `seq ${seq}: ${message}` });
  const valid: AnchorDigest[] = [];
  for (const digest of digests) {
    if (publicKeyPem !== undefined && anchorSignatureValid(digest, publicKeyPem)) valid.push(digest);
    else
      problem(
        digest.seq,
        'bad-signature',
        publicKeyPem === undefined
          ? `the anchor signed ${digest.time} cannot be checked: no public key`
          : `the anchor signed ${digest.time} (key ${digest.keyId}) does not verify with the trusted public key`,
      );
  }
  valid.sort((a, b) => a.seq - b.seq || a.time.localeCompare(b.time));
  let good: AnchorDigest | undefined;
  for (const digest of valid) {
    const since = good
      ? `after seq ${good.seq}, the last anchor that holds (signed ${good.time})`
      : 'from the first event (no earlier anchor holds)';
    const stored = hashAt.get(digest.seq);
    if (stored === undefined) {
      problem(
        digest.seq,
        'truncated',
        digest.seq > lastSeq
          ? `anchored (head ${digest.head}, signed ${digest.time}) but the stored chain ends at seq ${lastSeq}: seq ${lastSeq + 1}..${digest.seq} were removed`
          : `anchored (head ${digest.head}, signed ${digest.time}) but no event is stored there`,
      );
    } else if (stored !== digest.head) {
      problem(
        digest.seq,
        'diverged',
        `the stored chain's hash here is not the head anchored ${digest.time} (${digest.head}): the history diverges ${since}, at or before seq ${digest.seq}`,
      );
    } else if (problems.every((p) => p.kind === 'bad-signature')) {
      good = digest;
    }
  }
  return {
    problems,
    anchoredSeq: good?.seq ?? 0,
    anchoredAt: good?.time,
    unanchored: good ? Math.max(0, lastSeq - good.seq) : lastSeq,
    digests: digests.length,
  };
}

/** The digests grouped by execution (an execution whose events are all gone is still listed). */
export function digestsByExecution(digests: readonly AnchorDigest[]): Map<string, AnchorDigest[]> {
  const out = new Map<string, AnchorDigest[]>();
  for (const digest of digests) {
    const list = out.get(digest.executionId) ?? [];
    list.push(digest);
    out.set(digest.executionId, list);
  }
  return out;
}

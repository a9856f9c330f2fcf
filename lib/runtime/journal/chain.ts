/**
 * The one check of an execution's hash chain, for every caller: `plangate audit verify` (every
 * problem, on the table's raw items or an export's records), and `plangate events` / `plangate
 * files` and the tests (the first problem, on records). Checks each item's shape, its key against
 * its record, its content against its hash, its link to the event before it (telling a
 * reordering and a copy from another execution apart from a plain break), gaps in the sequence,
 * and optionally the index attributes the auditor queries by (a changed `approver` would hide a
 * decision from `--approver`).
 */
import { type JournalRecord, JournalRecordSchema } from '../payloads/index.ts';
import { formatSeq, fromItem, GENESIS_HASH, hashEvent, indexAttributes } from './journal.ts';

export const CHAIN_PROBLEM_KINDS = [
  /** Sequence numbers missing between two stored events (deleted events). */
  'gap',
  /** The content no longer matches its hash. */
  'edited',
  /** The event links to another event of the execution than the one stored before it, or is stored out of order. */
  'reordered',
  /** The event is a copy of another execution's event, or belongs to another plan or execution. */
  'foreign',
  /** The event's link to the one before it is wrong for no reason the others explain. */
  'broken-link',
  /** The item's key and its record's `seq` disagree. */
  'key-mismatch',
  /** An index attribute (`planTask`, `approver`) disagrees with the record it indexes. */
  'index-mismatch',
  /** The item is not a journal record at all. */
  'malformed',
] as const;
export type ChainProblemKind = (typeof CHAIN_PROBLEM_KINDS)[number];

export interface ChainProblem {
  readonly executionId: string;
  /** The stored item's sequence number (from its key), or for a gap the first missing one. */
  readonly seq: number | undefined;
  readonly kind: ChainProblemKind;
  readonly message: string;
}

/** A problem and where it was found: the position in the given items, and the record there. */
export interface LocatedChainProblem {
  readonly index: number;
  /** The record at that position, when the item is one. */
  readonly record: JournalRecord | undefined;
  readonly problem: ChainProblem;
}

export interface ChainCheckOptions {
  /**
   * Whether the items carry the table's index attributes to check (records do not).
   * @default true
   */
  readonly indexAttributes?: boolean;
}

/**
 * Every problem of one execution's raw items (records with their `sk` key), in the order given
 * (the table's key order), as it is found: a caller that wants only the first stops there. A
 * copy from another execution shows as `edited` here (its hash does not match its new place);
 * the auditor, who can query the table, tells it apart.
 */
export function* chainProblems(
  executionId: string,
  items: readonly Record<string, unknown>[],
  options: ChainCheckOptions = {},
): Generator<LocatedChainProblem> {
  const entries = items.map((item) => ({
    item,
    keySeq: typeof item.sk === 'string' && /^\d+$/.test(item.sk) ? Number(item.sk) : undefined,
    parsed: JournalRecordSchema.safeParse(fromItem(item)),
  }));
  const seqOfHash = new Map<string, number>();
  for (const { keySeq, parsed } of entries) {
    if (parsed.success && keySeq !== undefined) seqOfHash.set(parsed.data.hash, keySeq);
  }
  const planId = entries.find((e) => e.parsed.success)?.item.planId;
  let previous: { seq: number; hash: string } | undefined;
  let expected = 1;
  for (const [index, { item, keySeq, parsed }] of entries.entries()) {
    const located = (seq: number | undefined, kind: ChainProblemKind, message: string) => ({
      index,
      record: parsed.success ? parsed.data : undefined,
      problem: { executionId, seq, kind, message: `seq ${seq ?? '?'}: ${message}` },
    });
    const seq = keySeq;
    if (seq === undefined) {
      yield located(undefined, 'malformed', `item key ${JSON.stringify(item.sk)} is not a sequence number`);
      continue;
    }
    if (seq > expected) {
      yield located(
        expected,
        'gap',
        seq - expected === 1
          ? `missing (the next stored event is seq ${seq})`
          : `seq ${expected}..${seq - 1} are missing (the next stored event is seq ${seq})`,
      );
    } else if (seq < expected) {
      // Not in key order: only records handed over in another order (the table returns key order).
      yield located(seq, 'reordered', `stored after seq ${expected - 1}`);
    }
    const afterGap = seq > expected;
    expected = Math.max(expected, seq + 1);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      yield located(
        seq,
        'malformed',
        `${issue?.path.join('.') || 'record'}: ${issue?.message ?? 'not a journal record'}`,
      );
      previous = undefined;
      continue;
    }
    const record = parsed.data;
    if (formatSeq(record.seq) !== item.sk) {
      yield located(seq, 'key-mismatch', `the record says seq ${record.seq} but is stored under seq ${seq}`);
    }
    const contentIntact = hashEvent(record.prevHash, record) === record.hash;
    if (!contentIntact) {
      yield located(seq, 'edited', `${record.event}: content does not match its hash`);
    } else if (record.planId !== planId) {
      yield located(
        seq,
        'foreign',
        `${record.event} belongs to plan ${record.planId}, the execution runs ${planId}`,
      );
    } else if (record.executionId !== executionId) {
      yield located(
        seq,
        'foreign',
        `${record.event} belongs to execution ${record.executionId}, not ${executionId}`,
      );
    }
    const expectedPrev = seq === 1 ? GENESIS_HASH : previous?.seq === seq - 1 ? previous.hash : undefined;
    if (contentIntact && expectedPrev !== undefined && record.prevHash !== expectedPrev) {
      const follows = record.prevHash === GENESIS_HASH ? 0 : seqOfHash.get(record.prevHash);
      if (follows !== undefined) {
        yield located(
          seq,
          'reordered',
          follows === 0
            ? `${record.event} is the execution's first event but is stored at seq ${seq}`
            : `${record.event} follows the event stored at seq ${follows}, not seq ${seq - 1}`,
        );
      } else if (!afterGap) {
        yield located(
          seq,
          'broken-link',
          `${record.event}: prevHash is not seq ${seq - 1}'s hash nor any other event's (seq ${seq - 1} rehashed, or this link edited)`,
        );
      }
    }
    if (options.indexAttributes ?? true) {
      yield* indexAttributeProblems(item, record, (message) => located(seq, 'index-mismatch', message));
    }
    previous = { seq, hash: record.hash };
  }
}

/** The last item's hash, when it is a record: keep it to detect later truncation of the tail. */
export function chainHead(items: readonly Record<string, unknown>[]): string | undefined {
  const last = items.at(-1);
  const parsed = last ? JournalRecordSchema.safeParse(fromItem(last)) : undefined;
  return parsed?.success ? parsed.data.hash : undefined;
}

function* indexAttributeProblems(
  item: Record<string, unknown>,
  record: JournalRecord,
  located: (message: string) => LocatedChainProblem,
): Generator<LocatedChainProblem> {
  const { planTask, approver } = indexAttributes(record);
  if (item.planTask !== planTask) {
    yield located(
      `index attribute planTask is ${JSON.stringify(item.planTask)}, the record says ${JSON.stringify(planTask)}`,
    );
  }
  if (item.approver !== approver) {
    yield located(
      `index attribute approver is ${JSON.stringify(item.approver)}, the record says ${JSON.stringify(approver)}`,
    );
  }
}

/** The first place a chain of one execution's records breaks, if anywhere. */
export type ChainVerdict =
  | { readonly ok: true; readonly count: number }
  | {
      readonly ok: false;
      /** Index in the given array. */
      readonly index: number;
      /** The stored event's sequence number, or for a gap the first missing one. */
      readonly seq: number | undefined;
      readonly problem: ChainProblemKind;
      readonly message: string;
    };

/**
 * Checks an execution's records (the execution of the first), in the order given: consecutive
 * sequence numbers from 1, each hash intact, each link to the previous; stops at the first problem.
 */
export function verifyChain(events: readonly JournalRecord[]): ChainVerdict {
  const items = events.map((record) => ({ ...record, sk: formatSeq(record.seq) }));
  const first = chainProblems(events[0]?.executionId ?? '', items, { indexAttributes: false }).next();
  if (first.done) return { ok: true, count: events.length };
  const { index, problem } = first.value;
  return { ok: false, index, seq: problem.seq, problem: problem.kind, message: problem.message };
}

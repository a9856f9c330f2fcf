/** The chain checker alone, on generated chains: any single tampering is found where it happened. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkExecution } from '../../lib/audit/verify.ts';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import { formatSeq, fromItem, GENESIS_HASH, hashEvent } from '../../lib/runtime/journal/journal.ts';
import type { JournalEvent, JournalRecord } from '../../lib/runtime/payloads/index.ts';

const ID = 'exec-prop';

/** A chain of `notes.length` TASK_STARTED items, as the journal would store them. */
function chain(notes: readonly string[]): Record<string, unknown>[] {
  let prevHash = GENESIS_HASH;
  return notes.map((note, i) => {
    const event: JournalEvent = {
      timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString(),
      event: 'TASK_STARTED',
      executionId: ID,
      planId: 'p',
      planVersion: 1,
      planDigest: 'sha256:d',
      task_id: 't',
      details: { attempt: 1, progress: note },
    };
    const record: JournalRecord = { ...event, seq: i + 1, prevHash, hash: hashEvent(prevHash, event) };
    prevHash = record.hash;
    return { ...record, sk: formatSeq(i + 1), planTask: 'p#t' };
  });
}

const notes = fc.array(fc.string(), { minLength: 3, maxLength: 12 });

describe('checkExecution', () => {
  it('passes an intact chain', async () => {
    await fc.assert(
      fc.asyncProperty(notes, async (n) => {
        expect((await checkExecution(ID, chain(n))).problems).toEqual([]);
      }),
    );
  });

  it('locates an edit, a deletion (not of the newest) and a swap', async () => {
    await fc.assert(
      fc.asyncProperty(
        notes,
        fc.nat(),
        fc.nat(),
        fc.constantFrom('edit', 'delete', 'swap'),
        fc.string(),
        async (n, a, b, op, text) => {
          const items = chain(n);
          const i = a % (items.length - 1);
          const j = i + 1 + (b % (items.length - 1 - i));
          let expected: [number, string][];
          if (op === 'edit') {
            const item = items[i]!;
            const details = item.details as { progress: string };
            fc.pre(details.progress !== `${text}!`);
            items[i] = { ...item, details: { ...details, progress: `${text}!` } };
            expected = [[i + 1, 'edited']];
          } else if (op === 'delete') {
            items.splice(i, 1);
            expected = [[i + 1, 'gap']];
          } else {
            const [x, y] = [items[i]!, items[j]!];
            items[i] = { ...y, sk: x.sk, seq: x.seq };
            items[j] = { ...x, sk: y.sk, seq: y.seq };
            expected = [
              [i + 1, 'reordered'],
              [j + 1, 'reordered'],
            ];
          }
          const found = (await checkExecution(ID, items)).problems.map((p) => [p.seq, p.kind]);
          for (const problem of expected) expect(found).toContainEqual(problem);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reports what is not a record, and a key that is not a sequence number', async () => {
    const items = chain(['a', 'b', 'c']);
    items[1] = { ...items[1], hash: 42 };
    items.push({ executionId: ID, sk: 'zzz' });
    const found = (await checkExecution(ID, items)).problems.map((p) => [p.seq, p.kind]);
    expect(found).toEqual([
      [2, 'malformed'],
      [undefined, 'malformed'],
    ]);
  });

  it("is the check behind verifyChain: the first problem it finds is verifyChain's verdict", async () => {
    await fc.assert(
      fc.asyncProperty(
        notes,
        fc.nat(),
        fc.constantFrom('edit', 'delete', 'swap', 'rehash'),
        async (n, a, op) => {
          const records = chain(n).map(fromItem);
          const i = a % (records.length - 1);
          const record = records[i]!;
          if (op === 'edit') records[i] = { ...record, details: { progress: 'edited' } };
          else if (op === 'delete') records.splice(i, 1);
          else if (op === 'swap') [records[i], records[i + 1]] = [records[i + 1]!, record];
          else {
            const edited = { ...record, details: { progress: 'edited' } };
            records[i] = { ...edited, hash: hashEvent(edited.prevHash, edited) };
          }
          const items = records.map((r) => ({ ...r, sk: formatSeq(r.seq) }));
          const [first] = (await checkExecution(ID, items, { indexAttributes: false })).problems;
          expect(first).toBeDefined();
          expect(verifyChain(records)).toMatchObject({
            ok: false,
            seq: first!.seq,
            problem: first!.kind,
            message: first!.message,
          });
        },
      ),
    );
  });
});

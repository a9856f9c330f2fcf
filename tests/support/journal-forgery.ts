/**
 * Forged histories, as someone holding write access to the events table would make them: each
 * takes an execution's stored records and returns the items to store instead, re-chained with the
 * documented hash (lib/runtime/journal/journal.ts hashEvent) wherever that hides the change from
 * the chain check. `replaceExecution` writes them with plain, unconditional puts and deletes.
 */
import { DeleteCommand, type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { readExecutionItems } from '../../lib/audit/verify.ts';
import { fromItem, GENESIS_HASH, hashEvent, toItem } from '../../lib/runtime/journal/journal.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';

export type Item = Record<string, unknown>;

/** Numbers the records 1.. and chains them again with the documented hash: a chain that checks out. */
export function rechain(records: readonly JournalRecord[]): Item[] {
  let prevHash = GENESIS_HASH;
  return records.map((record, index) => {
    const hash = hashEvent(prevHash, record);
    const chained: JournalRecord = { ...record, seq: index + 1, prevHash, hash };
    prevHash = hash;
    return toItem(chained);
  });
}

/** Every string value equal to `from`, anywhere in the record, replaced by `to`. */
function renamed<T>(value: T, from: string, to: string): T {
  if (value === from) return to as T;
  if (Array.isArray(value)) return value.map((v) => renamed(v, from, to)) as T;
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renamed(v, from, to)])) as T;
  return value;
}

export interface Forgery {
  readonly name: string;
  /** The anchor problem `plangate audit verify` must report (the chain itself may check out). */
  readonly expected: 'diverged' | 'truncated';
  readonly forge: (records: readonly JournalRecord[]) => Item[];
}

/** An event stored in the middle (at least 1), for forgeries that need one. */
const middle = (records: readonly JournalRecord[]) => Math.max(1, Math.floor(records.length / 2));

/** The forgeries of issue 29, for a history in which `approver` decided. */
export function forgeries(approver: string, impostor = 'mallory'): Forgery[] {
  return [
    {
      name: `who approved rewritten in every event (${approver} → ${impostor}), re-chained`,
      expected: 'diverged',
      forge: (records) => rechain(records.map((r) => renamed(r, approver, impostor))),
    },
    {
      name: 'the last event dropped',
      expected: 'truncated',
      forge: (records) => rechain(records.slice(0, -1)),
    },
    {
      name: 'the last three events dropped',
      expected: 'truncated',
      forge: (records) => rechain(records.slice(0, -3)),
    },
    {
      name: 'an event inserted in the middle, re-chained',
      expected: 'diverged',
      forge: (records) => {
        const at = middle(records);
        const copy = { ...(records[at] as JournalRecord), details: { forged: true } };
        return rechain([...records.slice(0, at), copy, ...records.slice(at)]);
      },
    },
    {
      name: 'two events swapped, re-chained',
      expected: 'diverged',
      forge: (records) => {
        const at = middle(records);
        const swapped = [...records];
        [swapped[at - 1], swapped[at]] = [swapped[at] as JournalRecord, swapped[at - 1] as JournalRecord];
        return rechain(swapped);
      },
    },
    {
      name: 'an event removed from the middle, re-chained',
      expected: 'diverged',
      forge: (records) => rechain(records.filter((_, i) => i !== middle(records))),
    },
    {
      name: "the first event's timestamp moved, re-chained",
      expected: 'diverged',
      forge: (records) =>
        rechain(records.map((r, i) => (i === 0 ? { ...r, timestamp: '2020-01-01T00:00:00.000Z' } : r))),
    },
  ];
}

/** Replaces an execution's stored items with `items` (unconditional deletes and puts, as an attacker would). */
export async function replaceExecution(
  doc: DynamoDBDocumentClient,
  table: string,
  executionId: string,
  items: readonly Item[],
): Promise<void> {
  for (const item of await readExecutionItems(doc, table, executionId))
    await doc.send(new DeleteCommand({ TableName: table, Key: { executionId, sk: item.sk } }));
  for (const item of items) await doc.send(new PutCommand({ TableName: table, Item: item }));
}

/** The records stored for an execution now. */
export async function storedRecords(
  doc: DynamoDBDocumentClient,
  table: string,
  executionId: string,
): Promise<JournalRecord[]> {
  return (await readExecutionItems(doc, table, executionId)).map(fromItem);
}

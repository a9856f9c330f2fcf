/**
 * CSV for event exports: RFC 4180 quoting, and spreadsheet formula injection neutralised. A cell
 * a spreadsheet would evaluate (starting with = + - @, tab or CR) gets a leading `'`; so the
 * guard can be undone exactly, a cell that itself starts with `'` gets one too.
 */
import { canonicalJson } from '../plan/digest.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';

/** Characters that make a spreadsheet read a cell as a formula (OWASP CSV injection). */
const FORMULA_START = /^[=+\-@\t\r']/;
const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/;

/** One cell: formula-guarded, then quoted when it holds a quote, comma, line break or edge space. */
export function csvCell(value: string): string {
  const guarded = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(guarded) ? `"${guarded.replaceAll('"', '""')}"` : guarded;
}

/** The value a cell held before {@link csvCell} guarded it. */
export function uncell(cell: string): string {
  return cell.startsWith("'") ? cell.slice(1) : cell;
}

export function csvRow(values: readonly string[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}

/** Parses RFC 4180 CSV (CRLF or LF rows, quoted cells may span lines) into raw cells (still guarded). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 2;
        continue;
      }
      if (c === '"') quoted = false;
      else cell += c;
      i++;
      continue;
    }
    if (c === '"' && cell === '') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || (c === '\r' && text[i + 1] === '\n')) {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      if (c === '\r') i++;
    } else cell += c;
    i++;
  }
  if (quoted) throw new Error('CSV ends inside a quoted cell');
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

/** The export's columns, in order; `details` is canonical JSON. */
export const CSV_COLUMNS = [
  'executionId',
  'seq',
  'timestamp',
  'event',
  'planId',
  'planVersion',
  'planDigest',
  'task_id',
  'task_name',
  'details',
  'prevHash',
  'hash',
] as const;

/** A record as one CSV row (unguarded values; {@link csvRow} guards them). */
export function recordCells(record: JournalRecord): string[] {
  return CSV_COLUMNS.map((column) => {
    const value = record[column];
    if (value === undefined) return '';
    if (column === 'details') return canonicalJson(value);
    return String(value);
  });
}

/** A CSV row (raw cells, as parsed) back to the record it was exported from. */
export function recordOfCells(cells: readonly string[]): JournalRecord {
  const value = (column: (typeof CSV_COLUMNS)[number]): string =>
    uncell(cells[CSV_COLUMNS.indexOf(column)] ?? '');
  const optional = (column: 'task_id' | 'task_name') =>
    value(column) === '' ? {} : { [column]: value(column) };
  return {
    executionId: value('executionId'),
    seq: Number(value('seq')),
    timestamp: value('timestamp'),
    event: value('event') as JournalRecord['event'],
    planId: value('planId'),
    planVersion: Number(value('planVersion')),
    planDigest: value('planDigest'),
    ...optional('task_id'),
    ...optional('task_name'),
    details: JSON.parse(value('details')) as Record<string, unknown>,
    prevHash: value('prevHash'),
    hash: value('hash'),
  };
}

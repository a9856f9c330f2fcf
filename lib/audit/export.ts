/**
 * Event exports: every matching event streamed to a file (JSON lines or CSV), then one trailer
 * line, the manifest, holding the count and the SHA-256 of every byte before it. The file is
 * written beside its destination and renamed into place only when complete, so a failed export
 * leaves nothing that looks finished.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { z } from 'zod';
import { canonicalJson } from '../plan/digest.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { CSV_COLUMNS, csvCell, csvRow, parseCsv, recordCells, recordOfCells } from './csv.ts';

export const EXPORT_FORMATS = ['jsonl', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The first cell of a CSV export's trailer row; a JSONL export's trailer is `{"manifest":…}`. */
export const CSV_MANIFEST_MARKER = '#manifest';

export const ExportManifestSchema = z.object({
  format: z.enum(EXPORT_FORMATS),
  /** Events exported. */
  count: z.number().int().nonnegative(),
  /** Hex SHA-256 of the file's bytes before the trailer line (the CSV header included). */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** Where the events came from and which filter chose them. */
  source: z.string(),
  filter: z.record(z.string(), z.unknown()),
  exportedAt: z.string(),
});
export type ExportManifest = z.infer<typeof ExportManifestSchema>;

export interface ExportProps {
  readonly out: string;
  readonly format: ExportFormat;
  readonly source: string;
  readonly filter: Record<string, unknown>;
  /** @default () => new Date() */
  readonly clock?: () => Date;
}

/** Writes `events` to `props.out` with its manifest trailer and returns the manifest. */
export async function exportEvents(
  events: AsyncIterable<JournalRecord>,
  props: ExportProps,
): Promise<ExportManifest> {
  const partial = `${props.out}.partial`;
  const stream = createWriteStream(partial, { mode: 0o600 });
  // A write error surfaces through the next write or the finish; this listener keeps it from being uncaught.
  let streamError: Error | undefined;
  stream.on('error', (error) => {
    streamError = error;
  });
  const digest = createHash('sha256');
  let count = 0;
  const write = async (text: string): Promise<void> => {
    if (streamError) throw streamError;
    if (!stream.write(text)) await once(stream, 'drain');
  };
  const content = async (text: string): Promise<void> => {
    digest.update(text, 'utf8');
    await write(text);
  };
  try {
    if (props.format === 'csv') await content(csvRow(CSV_COLUMNS));
    for await (const record of events) {
      await content(props.format === 'csv' ? csvRow(recordCells(record)) : `${canonicalJson(record)}\n`);
      count++;
    }
    const manifest: ExportManifest = {
      format: props.format,
      count,
      sha256: digest.digest('hex'),
      source: props.source,
      filter: props.filter,
      exportedAt: (props.clock ?? (() => new Date()))().toISOString(),
    };
    await write(
      props.format === 'csv'
        ? `${CSV_MANIFEST_MARKER},${csvCell(JSON.stringify(manifest))}\r\n`
        : `${JSON.stringify({ manifest })}\n`,
    );
    stream.end();
    await once(stream, 'finish');
    await rename(partial, props.out);
    return manifest;
  } catch (error) {
    if (!stream.destroyed) {
      const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
      stream.destroy();
      await closed;
    }
    await rm(partial, { force: true });
    throw error;
  }
}

/** What reading an export back found: its manifest, its records, and whether they agree. */
export type ExportCheck =
  | { readonly ok: true; readonly manifest: ExportManifest; readonly records: JournalRecord[] }
  | { readonly ok: false; readonly problem: string };

/** Reads an export, recomputes its digest and count, and parses its records. */
export async function checkExport(file: string): Promise<ExportCheck> {
  const text = await readFile(file, 'utf8');
  const body = text.replace(/\r?\n$/, '');
  const cut = body.lastIndexOf('\n');
  const content = text.slice(0, cut + 1);
  const trailer = body.slice(cut + 1);
  const manifest = parseTrailer(trailer);
  if (!manifest)
    return { ok: false, problem: `${file}: the last line is not an export manifest (truncated?)` };
  const actual = createHash('sha256').update(content, 'utf8').digest('hex');
  if (actual !== manifest.sha256) {
    return {
      ok: false,
      problem: `${file}: content SHA-256 is ${actual}, the manifest says ${manifest.sha256} (altered)`,
    };
  }
  const records =
    manifest.format === 'csv'
      ? parseCsv(content)
          .slice(1)
          .map((cells) => recordOfCells(cells))
      : content
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as JournalRecord);
  if (records.length !== manifest.count) {
    return {
      ok: false,
      problem: `${file}: ${records.length} events, the manifest says ${manifest.count}`,
    };
  }
  return { ok: true, manifest, records };
}

function parseTrailer(line: string): ExportManifest | undefined {
  try {
    if (line.startsWith(`${CSV_MANIFEST_MARKER},`)) {
      const [cells] = parseCsv(line);
      return ExportManifestSchema.parse(JSON.parse(cells?.[1] ?? ''));
    }
    return ExportManifestSchema.parse((JSON.parse(line) as { manifest?: unknown }).manifest);
  } catch {
    return undefined;
  }
}

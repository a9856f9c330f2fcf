/**
 * The harness Lambdas' log in a local store (`.plangate/logs/harness.jsonl`): the same JSON
 * entries and EMF metric documents they write to CloudWatch Logs on AWS, one per line, appended by
 * whichever process holds the store (`plangate run`, `serve`, `resume`). `plangate logs` reads it.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HarnessHandlerName } from '../runtime/catalog.ts';
import { type LogSink, Telemetry } from '../runtime/telemetry/telemetry.ts';
import type { StorePaths } from './store-directory.ts';

/** The log file of a store. */
export function harnessLogFile(paths: StorePaths): string {
  return join(paths.logs, 'harness.jsonl');
}

/** The store's log, open for appending (mode 0600: it names executions and people). */
export class HarnessLog implements LogSink {
  private fd: number | undefined;

  private constructor(fd: number) {
    this.fd = fd;
  }

  static open(paths: StorePaths): HarnessLog {
    mkdirSync(paths.logs, { recursive: true, mode: 0o700 });
    return new HarnessLog(openSync(harnessLogFile(paths), 'a', 0o600));
  }

  /** Lines the file system refused (disk full, read-only): a log line is not state, and is dropped. */
  dropped = 0;

  /** One line, written at once (entries of handlers running side by side never interleave). */
  write(line: string): void {
    if (this.fd === undefined) return;
    try {
      writeSync(this.fd, `${line}\n`);
    } catch {
      // a handler must not fail for a log line it could not write
      this.dropped++;
    }
  }

  /** The telemetry of one handler running in this process, writing here. */
  telemetry(handler: HarnessHandlerName): Telemetry {
    return new Telemetry({ handler, sink: this });
  }

  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}

/** A log entry as read back: a Powertools entry or an EMF metric document. */
export type HarnessLogEntry = Record<string, unknown>;

export interface HarnessLogFilter {
  /** The execution: its ARN, or its name (the ARN's last part). */
  readonly execution: string;
  /** Only entries about this step. */
  readonly step?: string;
}

/**
 * The entries about one execution, in the order they were written (metric documents carry the
 * execution as metadata). Empty when the store has no log yet.
 */
export async function readHarnessLog(
  paths: StorePaths,
  filter: HarnessLogFilter,
): Promise<HarnessLogEntry[]> {
  let text: string;
  try {
    text = await readFile(harnessLogFile(paths), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const matches = (execution: unknown) =>
    typeof execution === 'string' &&
    (execution === filter.execution || execution.endsWith(`:${filter.execution}`));
  const entries: HarnessLogEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: HarnessLogEntry;
    try {
      entry = JSON.parse(line) as HarnessLogEntry;
    } catch {
      continue; // a line cut short by a crash
    }
    if (!matches(entry.execution)) continue;
    if (filter.step !== undefined && entry.step !== filter.step) continue;
    entries.push(entry);
  }
  return entries;
}

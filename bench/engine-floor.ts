/**
 * The least a durable engine with plangate's history format must spend on one execution of a
 * workload, on this machine: JSON-encoding its history (one JSON.stringify over all its events,
 * the cheapest way) plus one write(2) per batch the engine had to write before acting (before
 * each task call, at the end). Measured from a history the durable engine actually stored.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';

export interface DurabilityFloor {
  /** Events in the execution's history. */
  readonly historyEvents: number;
  /** Lines (write batches) in its history file. */
  readonly writes: number;
  readonly historyBytes: number;
  /** Median of JSON.stringify over every event of the history at once. */
  readonly encodeHistoryMs: number;
  /** Median of one synchronous append of an average-sized batch line to a file. */
  readonly writeMicros: number;
  /** encodeHistoryMs + writes × writeMicros. */
  readonly floorMs: number;
}

const SAMPLES = 31;

/** Measures the floor from the newest history file in `executionsDir/<machine dir>`. */
export function durabilityFloor(machineDir: string, scratchFile: string): DurabilityFloor {
  const newest = fs
    .readdirSync(machineDir)
    .map((f) => path.join(machineDir, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  if (!newest) throw new Error(`no history in ${machineDir}`);
  const text = fs.readFileSync(newest, 'utf8');
  const lines = text.split('\n').filter((l) => l !== '');
  const events = lines.flatMap((l) => {
    const parsed: unknown = JSON.parse(l);
    return Array.isArray(parsed) ? parsed : [parsed];
  });
  const encode: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const started = performance.now();
    JSON.stringify(events);
    encode.push(performance.now() - started);
  }
  const line = 'x'.repeat(Math.max(1, Math.round(Buffer.byteLength(text) / lines.length) - 1)) + '\n';
  const fd = fs.openSync(scratchFile, 'a');
  const write: number[] = [];
  try {
    for (let i = 0; i < SAMPLES * 10; i++) {
      const started = performance.now();
      fs.writeSync(fd, line);
      write.push(performance.now() - started);
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(scratchFile, { force: true });
  }
  const encodeHistoryMs = median(encode);
  const writeMicros = median(write) * 1000;
  return {
    historyEvents: events.length,
    writes: lines.length,
    historyBytes: Buffer.byteLength(text),
    encodeHistoryMs: round(encodeHistoryMs),
    writeMicros: round(writeMicros),
    floorMs: round(encodeHistoryMs + (lines.length * writeMicros) / 1000),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

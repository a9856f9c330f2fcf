/**
 * The least a durable engine with plangate's history format must spend on one execution of a
 * workload, on this machine: encoding its history (store format 3, event-codec.ts, all events in
 * one batch, the cheapest way) plus one write(2) per batch the engine had to write before acting
 * (before each task call, at the end). Measured from a history the durable engine actually
 * stored. For comparison, the same for the earlier format (the AWS-shaped events as JSON).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { EventCodec } from '../lib/engine/persistence/event-codec.ts';
import { decodeHistory } from '../lib/engine/persistence/store.ts';

export interface DurabilityFloor {
  /** Events in the execution's history. */
  readonly historyEvents: number;
  /** Lines (write batches) in its history file. */
  readonly writes: number;
  readonly historyBytes: number;
  /** Median of encoding every event of the history at once (store format 3). */
  readonly encodeHistoryMs: number;
  /** The earlier format: bytes of the events as JSON, and the median of one JSON.stringify over them. */
  readonly jsonHistoryBytes: number;
  readonly jsonEncodeHistoryMs: number;
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
  const events = decodeHistory(text);
  const encode: number[] = [];
  const encodeJson: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    let started = performance.now();
    new EventCodec().encodeBatch(events);
    encode.push(performance.now() - started);
    started = performance.now();
    JSON.stringify(events);
    encodeJson.push(performance.now() - started);
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
    jsonHistoryBytes: Buffer.byteLength(JSON.stringify(events)),
    jsonEncodeHistoryMs: round(median(encodeJson)),
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

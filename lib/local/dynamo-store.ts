/**
 * Storage for the local DynamoDB: dynalite's key-value store held in memory (memory-level, the
 * store dynalite uses when it has no path) and made durable by an append-only log in the data
 * directory, read back on start.
 *
 * Why: on LevelDB (classic-level), each PutItem of the events table is six asynchronous LevelDB
 * calls (table, item, three index entries, the item) through the libuv thread pool, plus
 * LevelDB's own compactions: about a third of `plangate run`'s CPU per step. Here each is an
 * in-memory tree update plus one write(2) of a length-prefixed frame, synchronously, before the
 * operation resolves, so dynalite answers a write only once the operating system has it.
 *
 * What it promises is what LevelDB without `sync` promised: a write dynalite answered survives
 * the process being killed (kill -9) but not the machine losing power. A frame torn by a crash
 * mid-write is the log's tail and is dropped (with the write nobody was answered for). Values
 * live outside the JavaScript heap (Buffers). On start the log is read into memory and, when it
 * has grown to more than twice the live data, rewritten to the live data (temp file, fsync,
 * rename). A store written by LevelDB (an older plangate) is copied into the log on first start.
 * One process at a time: `owner.pid` in the directory says which.
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  renameSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { writeFully } from './append-log.ts';

/** The log's file in the data directory. */
export const LOG_FILE = 'dynamo.log';
const OWNER_FILE = 'owner.pid';
/** A log this much larger than its live data (and this big) is rewritten on start. */
const COMPACT_RATIO = 2;
const COMPACT_MIN_BYTES = 4 * 1024 * 1024;

type Op = { readonly type: 'put'; key: Buffer; value: Buffer } | { readonly type: 'del'; key: Buffer };

/** The part of memory-level's (abstract-level's) implementation interface this class takes over. */
interface MemoryLevelImplementation {
  _open(options: unknown): Promise<void>;
  _close(): Promise<void>;
  _put(key: Buffer, value: Buffer, options: unknown): Promise<void>;
  _del(key: Buffer, options: unknown): Promise<void>;
  _batch(operations: Op[], options: unknown): Promise<void>;
  _clear(options: unknown): Promise<void>;
}
type MemoryLevelClass = new (options: Record<string, unknown>) => MemoryLevelImplementation;
type LevelClass = new (
  location: string,
  options: Record<string, unknown>,
) => {
  open(): Promise<void>;
  close(): Promise<void>;
  iterator(options: Record<string, unknown>): AsyncIterable<[Buffer, Buffer]>;
};

// memory-level, level and classic-level are dynalite's dependencies: resolved from dynalite.
const fromDynalite = createRequire(createRequire(import.meta.url).resolve('dynalite'));
const { MemoryLevel } = fromDynalite('memory-level') as { MemoryLevel: MemoryLevelClass };
const levelModule = fromDynalite('level') as { Level: LevelClass };
/** LevelDB, as dynalite opened it before: for reading an older store once. */
const LevelDb: LevelClass = levelModule.Level;

/** Stores open in this process, by directory: one each, as LevelDB's lock allowed. */
const openDirs = new Set<string>();
/** The store dynalite last constructed per directory, until {@link whenStoreOpen} takes it. */
const constructed = new Map<string, LoggedMemoryLevel>();

class LoggedMemoryLevel extends MemoryLevel {
  private fd: number | undefined;
  /** The log's length: where the next frame starts. */
  private size = 0;
  /** Settles when the store is open (abstract-level opens it on its own, after construction). */
  readonly opened: Promise<void>;
  private settleOpen: (error?: Error) => void = () => {};

  constructor(
    private readonly dir: string,
    options: Record<string, unknown> = {},
  ) {
    super({ ...options, storeEncoding: 'buffer' });
    this.opened = new Promise<void>((resolve, reject) => {
      this.settleOpen = (error) => (error ? reject(error) : resolve());
    });
    // Whoever waits for it hears of a failure; nobody waiting is not an unhandled rejection.
    this.opened.catch(() => {});
    constructed.set(dir, this);
  }

  override async _open(options: unknown): Promise<void> {
    await super._open(options);
    try {
      if (openDirs.has(this.dir))
        throw new Error(`the local DynamoDB store in ${this.dir} is already open in this process`);
      claimOwnership(this.dir);
      const log = join(this.dir, LOG_FILE);
      if (!existsSync(log)) await importLevelDb(this.dir, log);
      const { entries, validBytes, totalBytes } = readLog(log);
      await super._batch(
        [...entries.values()].map(([key, value]) => ({ type: 'put', key, value })),
        {},
      );
      const liveBytes = [...entries.values()].reduce((n, [k, v]) => n + k.length + v.length + 9, 0);
      if (validBytes > COMPACT_MIN_BYTES && validBytes > COMPACT_RATIO * liveBytes) {
        rewriteLog(log, entries.values());
      } else if (validBytes < totalBytes) {
        // Drop a torn tail so the next frame starts on a frame boundary.
        truncateSync(log, validBytes);
      }
      this.fd = openSync(log, 'a');
      this.size = fstatSync(this.fd).size;
      openDirs.add(this.dir);
      this.settleOpen();
    } catch (error) {
      if (!openDirs.has(this.dir)) releaseOwnership(this.dir);
      this.settleOpen(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
  }

  override async _close(): Promise<void> {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    releaseOwnership(this.dir);
    openDirs.delete(this.dir);
    await super._close();
  }

  override async _put(key: Buffer, value: Buffer, options: unknown): Promise<void> {
    this.append([{ type: 'put', key, value }]);
    await super._put(key, value, options);
  }

  override async _del(key: Buffer, options: unknown): Promise<void> {
    this.append([{ type: 'del', key }]);
    await super._del(key, options);
  }

  override async _batch(operations: Op[], options: unknown): Promise<void> {
    if (operations.length > 0) this.append(operations);
    await super._batch(operations, options);
  }

  override async _clear(): Promise<void> {
    throw new Error('the local DynamoDB store does not support clear()');
  }

  /** Writes one frame (all of `ops`, or none of them after a crash) before memory changes. */
  private append(ops: readonly Op[]): void {
    if (this.fd === undefined) throw new Error(`the local DynamoDB store in ${this.dir} is not open`);
    const frame = encodeFrame(ops);
    try {
      writeFully(this.fd, frame);
      this.size += frame.length;
    } catch (error) {
      // A part-written frame (a full disk) would swallow the frames after it: cut it off.
      ftruncateSync(this.fd, this.size);
      throw error;
    }
  }
}

/**
 * Makes dynalite keep its data in a {@link LoggedMemoryLevel}: dynalite takes `Level` from the
 * `level` package when its database module first loads, so this runs before dynalite is loaded.
 */
export function loadDynalite(): (options: Record<string, unknown>) => import('node:http').Server {
  levelModule.Level = LoggedMemoryLevel as unknown as LevelClass;
  return fromDynalite('dynalite') as (options: Record<string, unknown>) => import('node:http').Server;
}

/** Resolves once the store dynalite just made for `dir` is open; fails when dynalite bypassed it. */
export async function whenStoreOpen(dir: string): Promise<void> {
  const store = constructed.get(dir);
  constructed.delete(dir);
  if (!store)
    throw new Error(
      `dynalite did not keep ${dir} in plangate's logged store (was dynalite loaded before lib/local/dynamo-store.ts?)`,
    );
  await store.opened;
}

// Frames: u32 byte length of the body, then the body: per op a u8 type (1 put, 2 del), u32 key
// length, the key and, for a put, u32 value length and the value.
function encodeFrame(ops: readonly Op[]): Buffer {
  let size = 4;
  for (const op of ops) size += 5 + op.key.length + (op.type === 'put' ? 4 + op.value.length : 0);
  const frame = Buffer.allocUnsafe(size);
  frame.writeUInt32LE(size - 4, 0);
  let at = 4;
  for (const op of ops) {
    frame.writeUInt8(op.type === 'put' ? 1 : 2, at);
    frame.writeUInt32LE(op.key.length, at + 1);
    frame.set(op.key, at + 5);
    at += 5 + op.key.length;
    if (op.type === 'put') {
      frame.writeUInt32LE(op.value.length, at);
      frame.set(op.value, at + 4);
      at += 4 + op.value.length;
    }
  }
  return frame;
}

/** The live entries of a log (latin1 key → [key, value]), and how many bytes of it are whole frames. */
function readLog(path: string): {
  entries: Map<string, [Buffer, Buffer]>;
  validBytes: number;
  totalBytes: number;
} {
  const data = readFileSync(path);
  const entries = new Map<string, [Buffer, Buffer]>();
  let at = 0;
  while (at + 4 <= data.length) {
    const end = at + 4 + data.readUInt32LE(at);
    if (end > data.length) break;
    let p = at + 4;
    while (p < end) {
      const type = data.readUInt8(p);
      const keyLength = data.readUInt32LE(p + 1);
      // Copies: a subarray would keep the whole log file's buffer alive.
      const key = Buffer.from(data.subarray(p + 5, p + 5 + keyLength));
      p += 5 + keyLength;
      if (type === 1) {
        const valueLength = data.readUInt32LE(p);
        entries.set(key.toString('latin1'), [key, Buffer.from(data.subarray(p + 4, p + 4 + valueLength))]);
        p += 4 + valueLength;
      } else if (type === 2) {
        entries.delete(key.toString('latin1'));
      } else {
        throw new Error(`${path}: unknown operation ${type} at byte ${p - 5 - keyLength}`);
      }
    }
    at = end;
  }
  return { entries, validBytes: at, totalBytes: data.length };
}

/** Replaces the log with one holding just `entries`, atomically (temp file, fsync, rename, fsync dir). */
function rewriteLog(path: string, entries: Iterable<[Buffer, Buffer]>): void {
  const temp = `${path}.compacting`;
  const fd = openSync(temp, 'w');
  try {
    let ops: Op[] = [];
    let bytes = 0;
    for (const [key, value] of entries) {
      ops.push({ type: 'put', key, value });
      bytes += key.length + value.length;
      if (bytes > 1024 * 1024) {
        writeFully(fd, encodeFrame(ops));
        ops = [];
        bytes = 0;
      }
    }
    if (ops.length > 0) writeFully(fd, encodeFrame(ops));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  syncDirectory(join(path, '..'));
}

/** Copies a LevelDB store dynalite wrote in `dir` (an older plangate's) into a new log, once. */
async function importLevelDb(dir: string, log: string): Promise<void> {
  if (!existsSync(join(dir, 'CURRENT'))) {
    writeFileSync(log, '');
    return;
  }
  const db = new LevelDb(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  const entries: [Buffer, Buffer][] = [];
  try {
    for await (const entry of db.iterator({})) entries.push(entry);
  } finally {
    await db.close();
  }
  rewriteLog(log, entries);
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  } finally {
    closeSync(fd);
  }
}

/** Takes `owner.pid` in `dir`, unless a live process other than this one holds it. */
function claimOwnership(dir: string): void {
  const file = join(dir, OWNER_FILE);
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(pid) && pid !== process.pid && processAlive(pid))
      throw new Error(`the local DynamoDB store in ${dir} is in use by process ${pid}`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  writeFileSync(file, `${process.pid}\n`);
}

function releaseOwnership(dir: string): void {
  const file = join(dir, OWNER_FILE);
  try {
    if (Number(readFileSync(file, 'utf8').trim()) === process.pid) unlinkSync(file);
  } catch {
    // Already gone.
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

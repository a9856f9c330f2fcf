/**
 * The write-ahead log of a durable store: one file that the events of every execution go
 * into, so that any number of running executions share one `write(2)` per flush and one
 * `fdatasync` per group (see docs/engine-speed.md, "The durability contract").
 *
 * The log lives in generations (`wal/<n>.log`). The current generation is appended to; a full
 * one is sealed (fdatasync'd) and a new one begun, and the sealed one is checkpointed: its lines
 * are appended to the histories they belong to (`executions/<machine>/<execution>.jsonl`),
 * those are fdatasync'd, and only then is the sealed generation deleted. A restart applies
 * whatever generations are left (a kill may come at any point of this) and deletes them.
 *
 * Lines (one per flushed batch of one execution):
 * - `#<id>\t<JSON [machine, execution]>\n` declares which history `<id>` stands for in this
 *   generation (before its first data line);
 * - `<id>\t<offset>\t<history line>\n`: the history line (format 2, with its newline) belongs at
 *   byte `<offset>` of that history, which makes applying a generation twice harmless: a line
 *   the history already holds is skipped.
 * A line without its newline is a write cut short by a kill: it and anything after it never
 * counted (nothing was acknowledged on it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ByteWriter } from './byte-writer.ts';

/** Who a data line belongs to; its id is assigned per generation. */
export interface WalOwner {
  readonly machineName: string;
  readonly executionName: string;
  walGeneration: number;
  walId: number;
}

/** A data line of a generation file. */
export interface WalEntry {
  readonly owner: readonly [machineName: string, executionName: string];
  /** Where the line belongs in its history file. */
  readonly offset: number;
  /** The history line, newline included. */
  readonly line: Buffer;
}

/** The complete lines of a generation file, in order; stops at the first incomplete or malformed one. */
export function parseWal(bytes: Buffer): WalEntry[] {
  const owners = new Map<number, readonly [string, string]>();
  const out: WalEntry[] = [];
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf(0x0a, at);
    if (end < 0) break; // torn by a kill mid-write
    const tab = bytes.indexOf(0x09, at);
    if (tab < 0 || tab > end) break;
    if (bytes[at] === 0x23) {
      // #<id>\t[machine, execution]
      const id = Number(bytes.toString('latin1', at + 1, tab));
      let owner: unknown;
      try {
        owner = JSON.parse(bytes.toString('utf8', tab + 1, end));
      } catch {
        break;
      }
      if (!Number.isSafeInteger(id) || !isOwner(owner)) break;
      owners.set(id, owner);
    } else {
      const tab2 = bytes.indexOf(0x09, tab + 1);
      if (tab2 < 0 || tab2 > end) break;
      const owner = owners.get(Number(bytes.toString('latin1', at, tab)));
      const offset = Number(bytes.toString('latin1', tab + 1, tab2));
      // a history line is a JSON array: anything else is not a line this log wrote
      if (!owner || !Number.isSafeInteger(offset) || bytes[tab2 + 1] !== 0x5b || bytes[end - 1] !== 0x5d)
        break;
      out.push({ owner, offset, line: bytes.subarray(tab2 + 1, end + 1) });
    }
    at = end + 1;
  }
  return out;
}

function isOwner(value: unknown): value is readonly [string, string] {
  return (
    Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string'
  );
}

/** The generations left in `dir`, oldest first. */
export function walGenerations(dir: string): number[] {
  return fs
    .readdirSync(dir)
    .map((f) => /^(\d{1,15})\.log$/.exec(f)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

export function walFile(dir: string, generation: number): string {
  return path.join(dir, `${generation}.log`);
}

/** A sealed generation: fdatasync'd, still open for reading until its checkpoint is done. */
export interface SealedGeneration {
  readonly generation: number;
  readonly fd: number;
  readonly file: string;
}

/** Readonly props of a {@link WriteAheadLog}. */
export interface WriteAheadLogProps {
  readonly dir: string;
  /** The generation to begin (one past any generation left on disk). */
  readonly generation: number;
  /**
   * Longest time data written to the log may wait for its fdatasync (the group window):
   * a power loss loses at most the events written in the last window.
   */
  readonly syncWindowMs: number;
}

const RESOLVED = Promise.resolve();

export class WriteAheadLog {
  private readonly dir: string;
  private readonly syncWindowMs: number;
  generation: number;
  private fd: number;
  /** Lines staged since the last write. */
  private readonly staged = new ByteWriter();
  /** Bytes written to the current generation. */
  written = 0;
  private nextId = 0;
  /** Writes so far (a write is one `write(2)` of everything staged). */
  private writes = 0;
  /** Writes known to be on stable storage. */
  private syncedWrites = 0;
  /** The fdatasync in flight and the writes it covers. */
  private syncing: Promise<void> | undefined;
  private syncingWrites = 0;
  /** The fdatasync that follows the one in flight (for writes made after it began). */
  private followingSync: Promise<void> | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  /** When the oldest write that no started sync covers was made (performance.now()), or -1. */
  private unsyncedSince = -1;
  /** Group-window syncs in flight (nobody waits for them; a seal does). */
  private readonly background = new Set<Promise<void>>();
  /** The first failed write or sync: the log then refuses every write (nothing could be promised). */
  private failure: Error | undefined;
  /** Generations sealed but not yet checkpointed, by number (their fds, for reading ranges). */
  private readonly sealed = new Map<number, number>();
  /** fdatasyncs of the log so far (for the bench and tests). */
  syncs = 0;

  constructor(props: WriteAheadLogProps) {
    this.dir = props.dir;
    this.syncWindowMs = props.syncWindowMs;
    this.generation = props.generation;
    this.fd = fs.openSync(walFile(this.dir, this.generation), 'a+');
  }

  /** Stages one history line of `owner` that belongs at `offset` of its history; returns the line's position in this generation. */
  stage(owner: WalOwner, offset: number, line: Uint8Array): number {
    const w = this.staged;
    if (owner.walGeneration !== this.generation) {
      owner.walGeneration = this.generation;
      owner.walId = this.nextId++;
      w.byte(0x23);
      w.number(owner.walId);
      w.byte(0x09);
      w.text(JSON.stringify([owner.machineName, owner.executionName]));
      w.byte(0x0a);
    }
    w.number(owner.walId);
    w.byte(0x09);
    w.number(offset);
    w.byte(0x09);
    const position = this.written + w.length;
    w.raw(line);
    return position;
  }

  /** Whether lines wait to be written. */
  get pending(): boolean {
    return this.staged.length > 0;
  }

  /** Writes every staged line with one `write(2)` (kill -9 cannot undo it); starts the group window. */
  write(): void {
    if (this.failure) throw this.failure;
    const w = this.staged;
    if (w.length === 0) return;
    try {
      writeAll(this.fd, w.bytes());
    } catch (error) {
      this.failure = error as Error;
      throw error;
    }
    this.written += w.length;
    w.reset();
    this.writes++;
    // The window holds even when the event loop gets no turn (an engine busy with promise
    // callbacks only runs no timers): a write that finds the window passed starts the sync itself.
    const now = performance.now();
    if (this.unsyncedSince < 0) this.unsyncedSince = now;
    else if (now - this.unsyncedSince >= this.syncWindowMs) this.syncInBackground();
    if (this.syncTimer === undefined) {
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        if (this.unsyncedSince >= 0) this.syncInBackground();
      }, this.syncWindowMs);
      this.syncTimer.unref();
    }
  }

  /** Starts an fdatasync of everything written so far that nobody waits for (the group window). */
  private syncInBackground(): void {
    this.unsyncedSince = -1;
    const covers = this.writes;
    const syncing = new Promise<void>((resolve) => {
      fs.fdatasync(this.fd, (error) => {
        this.background.delete(syncing);
        // remembered: the next write throws it, nothing is promised any more
        if (error) this.failure ??= error;
        else {
          this.syncs++;
          if (covers > this.syncedWrites) this.syncedWrites = covers;
        }
        resolve();
      });
    });
    this.background.add(syncing);
  }

  /**
   * Resolves once everything written so far is on stable storage. Callers that come while an
   * fdatasync is in flight share the next one: one sync serves every execution in the group.
   */
  durable(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.syncedWrites >= this.writes) return RESOLVED;
    if (this.syncing === undefined) return this.startSync();
    if (this.syncingWrites >= this.writes) return this.syncing;
    this.followingSync ??= this.syncing.then(
      () => {
        this.followingSync = undefined;
        return this.durable();
      },
      (error) => {
        this.followingSync = undefined;
        throw error;
      },
    );
    return this.followingSync;
  }

  private startSync(): Promise<void> {
    return this.syncFile(this.fd, this.writes);
  }

  /** fdatasync of `fd` in libuv's pool; once done, the first `covers` writes are on stable storage. */
  private syncFile(fd: number, covers: number): Promise<void> {
    this.syncingWrites = covers;
    const syncing = new Promise<void>((resolve, reject) => {
      fs.fdatasync(fd, (error) => {
        this.syncing = undefined;
        if (error) {
          this.failure ??= error;
          reject(error);
          return;
        }
        this.syncs++;
        if (covers > this.syncedWrites) this.syncedWrites = covers;
        resolve();
      });
    });
    this.syncing = syncing;
    return syncing;
  }

  /** Reads `length` bytes at `position` of a generation (current or sealed, not yet checkpointed). */
  read(generation: number, position: number, length: number, into: Buffer, at: number): void {
    const fd = generation === this.generation ? this.fd : this.sealed.get(generation);
    if (fd === undefined) throw new Error(`write-ahead log generation ${generation} is gone`);
    readFully(fd, into, at, length, position);
  }

  /**
   * Seals the current generation (written, then fdatasync'd off the event loop, so everything in
   * it is durable) and begins the next one; the sealed one stays readable until {@link retire}.
   */
  async seal(): Promise<SealedGeneration> {
    this.write();
    // fdatasyncs in flight belong to this generation's fd: let them finish first
    while (this.syncing || this.background.size > 0) {
      await this.syncing?.catch(() => undefined);
      await Promise.all(this.background);
    }
    if (this.failure) throw this.failure;
    // from here to the switch nothing awaits: no write can slip in between
    const sealed = { generation: this.generation, fd: this.fd, file: walFile(this.dir, this.generation) };
    const covers = this.writes;
    this.unsyncedSince = -1;
    this.sealed.set(sealed.generation, sealed.fd);
    this.generation++;
    this.fd = fs.openSync(walFile(this.dir, this.generation), 'a+');
    this.written = 0;
    this.nextId = 0;
    // syncs of the new generation wait for this one (durable() chains on `syncing`), so no sync
    // of the new fd can claim the sealed generation's writes before they are on disk
    if (covers > this.syncedWrites) await this.syncFile(sealed.fd, covers);
    return sealed;
  }

  /** Deletes a checkpointed generation. */
  retire(sealed: SealedGeneration): void {
    this.sealed.delete(sealed.generation);
    fs.closeSync(sealed.fd);
    fs.rmSync(sealed.file, { force: true });
  }

  /** Stops the group timer and closes the current generation (after a final checkpoint it is empty and deleted). */
  close(deleteCurrent: boolean): void {
    clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    fs.closeSync(this.fd);
    if (deleteCurrent) fs.rmSync(walFile(this.dir, this.generation), { force: true });
  }
}

/** write(2) until every byte is written (a regular file may take fewer bytes than asked). */
export function writeAll(fd: number, bytes: Uint8Array, position?: number): void {
  let done = 0;
  while (done < bytes.length) {
    done += fs.writeSync(
      fd,
      bytes,
      done,
      bytes.length - done,
      position === undefined ? null : position + done,
    );
  }
}

function readFully(fd: number, into: Buffer, at: number, length: number, position: number): void {
  let done = 0;
  while (done < length) {
    const n = fs.readSync(fd, into, at + done, length - done, position + done);
    if (n === 0) throw new Error('write-ahead log ends before a line it holds');
    done += n;
  }
}

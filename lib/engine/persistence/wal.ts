/**
 * The write-ahead log of a durable store: one file that the events of every execution go
 * into, so that any number of running executions share one `write(2)` per flush and one
 * `fdatasync` per group (see "The durability contract" in README.md).
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
 * - `<id>\t<offset>\t<history line>\n`: the history line (format 3, with its newline) belongs at
 *   byte `<offset>` of that history, which makes applying a generation twice harmless: a line
 *   the history already holds is skipped.
 * A line without its newline is a write cut short by a kill: it and anything after it never
 * counted (nothing was acknowledged on it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ByteWriter, type WriteSync } from './byte-writer.ts';
import { isTransientRefusal, type StoreFault, storeFault } from './store-faults.ts';

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
  return parseWalUpTo(bytes).entries;
}

/** {@link parseWal}, and the length of the lines read: anything after `end` was dropped (a torn last record). */
export function parseWalUpTo(bytes: Buffer): { entries: WalEntry[]; end: number } {
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
      // a history line is a JSON array (format 3: maybe followed by a tab and raw payload texts):
      // anything else is not a line this log wrote
      if (!owner || !Number.isSafeInteger(offset) || bytes[tab2 + 1] !== 0x5b) break;
      if (bytes[end - 1] !== 0x5d) {
        const rawAt = bytes.indexOf(0x09, tab2 + 1);
        if (rawAt < 0 || rawAt > end) break;
      }
      out.push({ owner, offset, line: bytes.subarray(tab2 + 1, end + 1) });
    }
    at = end + 1;
  }
  return { entries: out, end: at };
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

/** A generation no longer written to: kept (and readable) until a checkpoint has applied it. */
export interface SealedGeneration {
  readonly generation: number;
  readonly fd: number;
  readonly file: string;
  /** Bytes in it. */
  readonly bytes: number;
  /** Writes of the log up to its end. */
  readonly endWrites: number;
  /** Whether it is on stable storage (its fdatasync is done). */
  synced: boolean;
  /** Its fdatasync, when one is under way (a retire waits for it: the fd must stay open). */
  syncing?: Promise<void>;
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
  /** How the log's bytes are written. @default fs.writeSync (tests inject ENOSPC or EROFS here) */
  readonly writeSync?: WriteSync;
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
  private written = 0;
  private nextId = 0;
  /** Writes so far (a write is one `write(2)` of everything staged). */
  private writes = 0;
  /** Writes known to be on stable storage. */
  private syncedWrites = 0;
  /** The strict fdatasync in flight (of the current generation) and the writes it covers. */
  private syncing: Promise<void> | undefined;
  private syncingWrites = 0;
  /** The fdatasync that follows the one in flight (for writes made after it began). */
  private followingSync: Promise<void> | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  /** When the oldest write that no started sync covers was made (performance.now()), or -1. */
  private unsyncedSince = -1;
  /** Generations sealed and not yet retired, oldest first, and the bytes in them. */
  private readonly sealed: SealedGeneration[] = [];
  private sealedBytes = 0;
  /** fdatasyncs of the log so far (for the bench and tests). */
  syncs = 0;
  /** The first failed sync: the log then refuses every write (what the disk holds is not known). */
  private failure: Error | undefined;
  /**
   * The last write the file system refused (disk full, read-only), until a write succeeds: what
   * was staged stays staged, and the next write tries again.
   */
  private refused: StoreFault | undefined;
  /** A refused write may have left part of its bytes: cut back to {@link written} before the next. */
  private mustTruncate = false;
  private readonly writeSync: WriteSync;

  constructor(props: WriteAheadLogProps) {
    this.dir = props.dir;
    this.syncWindowMs = props.syncWindowMs;
    this.writeSync = props.writeSync ?? fs.writeSync;
    this.generation = props.generation;
    this.fd = fs.openSync(walFile(this.dir, this.generation), 'a+');
  }

  /**
   * Starts staging a history line of `owner` that belongs at `offset` of its history: the caller
   * writes the line (with its newline) into the returned writer, straight after what is staged
   * (no copy). {@link positionOf} tells where it begins in this generation.
   */
  beginLine(owner: WalOwner, offset: number): ByteWriter {
    const w = this.staged;
    this.lineMark = w.length;
    this.lineDeclared = owner.walGeneration !== this.generation ? owner.walGeneration : undefined;
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
    return w;
  }

  /** Staged length before the line {@link beginLine} began, and the owner's generation when it declared the owner. */
  private lineMark = 0;
  private lineDeclared: number | undefined;

  /** Takes back the line begun last (encoding it failed): nothing of it is written. */
  abandonLine(owner: WalOwner): void {
    this.staged.length = this.lineMark;
    if (this.lineDeclared !== undefined) {
      owner.walGeneration = this.lineDeclared;
      this.nextId--;
    }
  }

  /** The position in this generation of what is staged at `staged` (a length of the staging writer). */
  positionOf(staged: number): number {
    return this.written + staged;
  }

  /** Whether lines wait to be written. */
  get pending(): boolean {
    return this.staged.length > 0;
  }

  /** Generations sealed and not yet retired. */
  get sealedCount(): number {
    return this.sealed.length;
  }

  /** Bytes in generations not yet retired (what a checkpoint would apply). */
  get unappliedBytes(): number {
    return this.written + this.sealedBytes;
  }

  /**
   * Why the log cannot write: a failed sync (for good), or the last refused write (until a write
   * succeeds).
   */
  get fault(): StoreFault | undefined {
    return this.failure ? storeFault(this.failure, false) : this.refused;
  }

  /**
   * Writes every staged line with one `write(2)` (kill -9 cannot undo it); starts the group window.
   * A write the file system refuses (ENOSPC, EROFS) throws, leaves the file as it was before it
   * (a part it took is cut off) and keeps the lines staged for the next write.
   */
  write(): void {
    if (this.failure) throw this.failure;
    const w = this.staged;
    if (w.length === 0 && !this.mustTruncate) return;
    try {
      if (this.mustTruncate) {
        fs.ftruncateSync(this.fd, this.written);
        this.mustTruncate = false;
      }
      w.writeTo(this.fd, this.writeSync);
    } catch (error) {
      this.mustTruncate = true;
      try {
        fs.ftruncateSync(this.fd, this.written);
        this.mustTruncate = false;
      } catch {
        // cut before the next write instead
      }
      if (isTransientRefusal(error)) this.refused ??= storeFault(error as Error, true);
      else this.failure = error as Error;
      throw error;
    }
    this.refused = undefined;
    if (w.length === 0) return;
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

  /**
   * Tries again what the file system refused (a write, the seal of a generation); throws while it
   * still refuses. Nothing to do once the log is writable.
   */
  retry(): void {
    if (this.failure) throw this.failure;
    if (this.refused === undefined) return;
    this.write();
    if (this.refused === undefined) return;
    // refused at a seal, with nothing staged: seal again
    this.refused = undefined;
    this.syncInBackground();
    if (this.refused) throw (this.refused as StoreFault).error;
  }

  /**
   * The group window's sync, which nobody waits for. Appends to a file that is being
   * fdatasync'd can stall for the length of the sync (measured: up to ~60 ms for 175 KB on this
   * machine's disk), so the generation is sealed first and synced while writes go to the next one.
   */
  private syncInBackground(): void {
    this.unsyncedSince = -1;
    if (this.syncing || this.written === 0) return; // a strict sync of this generation is under way
    // A refused write or open (disk full, read-only) leaves the log as it was: noted in `refused`,
    // and the window begins again with the next write that succeeds. Thrown from here, a timer's
    // callback, it would crash the process instead.
    let sealed: SealedGeneration;
    try {
      sealed = this.seal();
    } catch (error) {
      if (!isTransientRefusal(error)) this.failure ??= error as Error;
      else this.refused ??= storeFault(error as Error, true);
      this.unsyncedSince = performance.now();
      return;
    }
    this.syncSealed(sealed).catch(() => undefined);
  }

  /** fdatasync of a sealed generation (once); the log counts as synced up to the oldest one that is not. */
  private syncSealed(g: SealedGeneration): Promise<void> {
    if (g.synced) return RESOLVED;
    g.syncing ??= new Promise<void>((resolve, reject) => {
      fs.fdatasync(g.fd, (error) => {
        g.syncing = undefined;
        if (error) {
          this.failure ??= error;
          reject(error);
          return;
        }
        g.synced = true;
        this.syncs++;
        this.advanceSynced();
        resolve();
      });
    });
    return g.syncing;
  }

  private advanceSynced(): void {
    for (const g of this.sealed) {
      if (!g.synced) return;
      if (g.endWrites > this.syncedWrites) this.syncedWrites = g.endWrites;
    }
  }

  /**
   * Resolves once everything written so far is on stable storage (strict durability). Callers
   * that come while an fdatasync is in flight share the next one: one sync serves every
   * execution in the group. Syncs the current generation in place.
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
    const covers = this.writes;
    this.syncingWrites = covers;
    const fd = this.fd;
    // older generations first: a sync of this one says nothing about theirs
    const older = this.sealed.map((g) => this.syncSealed(g));
    const syncing = Promise.all(older)
      .then(
        () =>
          new Promise<void>((resolve, reject) => {
            fs.fdatasync(fd, (error) => (error ? reject(error) : resolve()));
          }),
      )
      .then(
        () => {
          this.syncing = undefined;
          this.syncs++;
          if (covers > this.syncedWrites) this.syncedWrites = covers;
        },
        (error: Error) => {
          this.syncing = undefined;
          this.failure ??= error;
          throw error;
        },
      );
    this.syncing = syncing;
    return syncing;
  }

  /** Reads `length` bytes at `position` of a generation (current or sealed, not yet retired). */
  read(generation: number, position: number, length: number, into: Buffer, at: number): void {
    const fd =
      generation === this.generation ? this.fd : this.sealed.find((g) => g.generation === generation)?.fd;
    if (fd === undefined) throw new Error(`write-ahead log generation ${generation} is gone`);
    readFully(fd, into, at, length, position);
  }

  /**
   * Ends the current generation (after writing what is staged) and begins the next one; the
   * sealed one stays readable until {@link retire}. Nothing awaits in here: no write can slip
   * in between.
   */
  seal(): SealedGeneration {
    this.write();
    // opened before anything changes: a refused open (no space, read-only) leaves the log as it was
    const next = fs.openSync(walFile(this.dir, this.generation + 1), 'a+');
    const sealed: SealedGeneration = {
      generation: this.generation,
      fd: this.fd,
      file: walFile(this.dir, this.generation),
      bytes: this.written,
      endWrites: this.writes,
      synced: this.written === 0,
    };
    this.sealed.push(sealed);
    this.sealedBytes += sealed.bytes;
    this.generation++;
    this.fd = next;
    this.written = 0;
    this.nextId = 0;
    return sealed;
  }

  /** Every sealed generation not yet retired (after sealing the current one if it holds anything). */
  sealAll(): SealedGeneration[] {
    if (this.written > 0 || this.pending) this.seal();
    return [...this.sealed];
  }

  /** Deletes generations a checkpoint has applied. */
  async retire(generations: readonly SealedGeneration[]): Promise<void> {
    // a strict sync may still use a generation sealed under it
    await this.syncing?.catch(() => undefined);
    for (const g of generations) await g.syncing?.catch(() => undefined);
    // applied to history files that are synced: as durable as a synced generation
    for (const g of generations) g.synced = true;
    this.advanceSynced();
    for (const g of generations) {
      const at = this.sealed.indexOf(g);
      if (at >= 0) {
        this.sealed.splice(at, 1);
        this.sealedBytes -= g.bytes;
      }
    }
    // off the event loop: unlinking a file of megabytes frees its blocks, milliseconds on ext4
    await Promise.all(
      generations.map(async (g) => {
        await fs.promises.unlink(g.file).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
        await new Promise<void>((resolve, reject) =>
          fs.close(g.fd, (error) => (error ? reject(error) : resolve())),
        );
      }),
    );
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

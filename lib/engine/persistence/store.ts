/**
 * Durable storage of the engine: an atomically replaced snapshot of the state machine registry,
 * definitions by content, and the histories of executions (each execution's only state).
 * History events go first to one write-ahead log shared by all executions (wal.ts: one `write(2)`
 * per flush for every execution, fdatasync in groups), and from there, at checkpoints, to one
 * append-only history file per execution. Each history line holds a batch of events in the compact
 * format of event-codec.ts (payload texts once, then by reference); files written in the older
 * format (one event object, or an array of them, per line) are still read and appended to.
 * Finished executions are summarised (summaries.jsonl) so that a restart reads only the
 * histories of executions that may still run. The durability contract: README.md (this folder).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { WriteSync } from './byte-writer.ts';
import { EventCodec, FORMAT_2, FORMAT_3, QuotedTexts } from './event-codec.ts';
import type { StoredEvent } from './history.ts';
import { acquireProcessLock, LockHeldError, type ProcessLock } from './process-lock.ts';
import { isTransientRefusal, type StoreFault, storeFault } from './store-faults.ts';
import {
  parseWal,
  parseWalUpTo,
  type WalOwner,
  WriteAheadLog,
  walFile,
  walGenerations,
  writeAll,
} from './wal.ts';

/** The history of one execution. */
export interface ExecutionLog {
  /**
   * Queues events in order for the store's next {@link EngineStore.write}; the store may keep the
   * array itself: never change it afterwards.
   */
  stage(events: readonly StoredEvent[]): void;
  /** Stages events and writes them at once. */
  append(events: readonly StoredEvent[]): void;
  /** Every stored event, oldest first. */
  readAll(): StoredEvent[];
  /** Releases what the history holds in memory while the execution is not running; a later `stage` takes it up again. */
  close(): void;
}

/** What a store has done so far (bench and tests). */
export interface EngineStoreStats {
  /** Bytes read from files (histories, the log at recovery, summaries). */
  readonly bytesRead: number;
  /** fdatasyncs of the write-ahead log. */
  readonly walSyncs: number;
  /** Log generations checkpointed into history files. */
  readonly checkpoints: number;
}

/** Where the engine keeps state machines and executions. */
export interface EngineStore {
  readRegistry(): unknown;
  writeRegistry(snapshot: unknown): void;
  openLog(machineName: string, executionName: string): ExecutionLog;
  /** Every stored execution, as (machine name, execution name). */
  listLogs(): Array<{ machineName: string; executionName: string }>;
  /** Writes every staged event of every history with one `write(2)`: after it, kill -9 loses none of them. */
  write(): void;
  /** Whether staged events wait for the next {@link EngineStore.write}. */
  readonly unwritten: boolean;
  /** Resolves once everything written so far is on stable storage (survives a power loss). */
  durable(): Promise<void>;
  /** Why the store cannot write (disk full, read-only, a failed sync), while it cannot. */
  readonly fault: StoreFault | undefined;
  /** Tries again what the file system refused; throws while it still refuses. */
  retry(): void;
  /** What the start-up found and did about it (a torn last record dropped), for the operator. */
  readonly recoveryNotes: readonly string[];
  /**
   * Keeps what a restarted engine needs to know of a finished execution without reading its
   * history (kept with the checkpoint that holds its last event).
   */
  noteFinished(machineName: string, executionName: string, summary: object): void;
  /** Summaries of finished executions that did not run again since, by `<machine>\t<execution>`. */
  readSummaries(): Map<string, object>;
  /**
   * Keeps a definition once, by its content, and returns the reference executions record
   * (`sha256:<hex>`), so that starting an execution does not copy its definition into its history.
   */
  putDefinition(text: string): string;
  /** A definition kept by {@link EngineStore.putDefinition}, or undefined. */
  getDefinition(ref: string): string | undefined;
  stats(): EngineStoreStats;
  /** Writes and checkpoints everything, and releases what the store holds open (the engine closes). */
  close(): Promise<void>;
}

function definitionRef(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

const DEFINITION_REF = /^sha256:([0-9a-f]{64})$/;

/** Keeps everything in memory: for tests and EXPRESS-like throwaway runs. */
export class MemoryEngineStore implements EngineStore {
  private registry: unknown;
  private readonly logs = new Map<
    string,
    { machineName: string; executionName: string; batches: (readonly StoredEvent[])[] }
  >();

  readRegistry(): unknown {
    return this.registry === undefined ? undefined : structuredClone(this.registry);
  }

  writeRegistry(snapshot: unknown): void {
    this.registry = structuredClone(snapshot);
  }

  openLog(machineName: string, executionName: string): ExecutionLog {
    const id = `${machineName}:${executionName}`;
    let entry = this.logs.get(id);
    if (!entry) {
      entry = { machineName, executionName, batches: [] };
      this.logs.set(id, entry);
    }
    const batches = entry.batches;
    return {
      // the history hands over each batch and never touches it again: kept as it is, not copied
      stage: (batch) => {
        batches.push(batch);
      },
      append: (batch) => {
        batches.push(batch);
      },
      readAll: () => batches.flat(),
      close: () => {},
    };
  }

  listLogs(): Array<{ machineName: string; executionName: string }> {
    return [...this.logs.values()].map(({ machineName, executionName }) => ({ machineName, executionName }));
  }

  private readonly definitions = new Map<string, string>();

  putDefinition(text: string): string {
    const ref = definitionRef(text);
    this.definitions.set(ref, text);
    return ref;
  }

  getDefinition(ref: string): string | undefined {
    return this.definitions.get(ref);
  }

  write(): void {}

  /** Memory keeps what is staged: nothing waits for a write. */
  get unwritten(): boolean {
    return false;
  }

  durable(): Promise<void> {
    return Promise.resolve();
  }

  /** Memory does not fail. */
  readonly fault = undefined;
  readonly recoveryNotes: readonly string[] = [];

  retry(): void {}

  noteFinished(): void {}

  readSummaries(): Map<string, object> {
    return new Map();
  }

  stats(): EngineStoreStats {
    return { bytesRead: 0, walSyncs: 0, checkpoints: 0 };
  }

  async close(): Promise<void> {}
}

/** Readonly props of a {@link FileEngineStore}. */
export interface FileEngineStoreProps {
  /** Directory holding `registry.json`, `wal/`, `summaries.jsonl` and `executions/<machine>/<execution>.jsonl`. */
  readonly dir: string;
  /**
   * Longest time written events wait for their fdatasync (the group window, see
   * README.md); a power loss loses at most this window. @default 20
   */
  readonly syncWindowMs?: number;
  /** Size of a write-ahead log generation that starts a checkpoint into the history files. @default 8 MiB */
  readonly checkpointBytes?: number;
  /** How the write-ahead log's bytes are written. @default fs.writeSync (tests inject ENOSPC or EROFS here) */
  readonly writeSync?: WriteSync;
}

/**
 * Sealed log generations (one per group window with writes) that start a checkpoint however
 * small they are: each holds an open file until then.
 */
const MAX_SEALED_GENERATIONS = 64;

/** File names are derived from validated names, then percent-encoded, so no name can escape the directory. */
function fileSafe(name: string): string {
  return `_${encodeURIComponent(name).replace(/\./g, '%2E')}`;
}

function fromFileSafe(file: string): string {
  return decodeURIComponent(file.slice(1));
}

function summaryKey(machineName: string, executionName: string): string {
  return `${machineName}\t${executionName}`;
}

/**
 * Durable store in a directory (default `.plangate/engine`): events go to one write-ahead log
 * (wal.ts) and from there, at checkpoints, to one history file per execution.
 */
/**
 * Claims the store for this process (`<dir>/LOCK`, process-lock.ts): a second engine on the same
 * directory would apply and delete the write-ahead log under the first. A lock whose process is
 * gone (killed) is taken over; one of this process is shared (a restart within one process, as
 * tests do).
 */
function lockStore(dir: string): ProcessLock {
  try {
    return acquireProcessLock(path.join(dir, 'LOCK'), { holder: 'a plangate engine', sameProcess: 'share' });
  } catch (error) {
    if (!(error instanceof LockHeldError)) throw error;
    throw new Error(
      `the engine store ${dir} is in use by process ${error.holder.pid} (${error.holder.holder}, since ${error.holder.since}); stop it, or give this engine another store`,
    );
  }
}

export class FileEngineStore implements EngineStore {
  private readonly dir: string;
  private readonly executionsDir: string;
  private readonly definitionsDir: string;
  private readonly walDir: string;
  private readonly summariesFile: string;
  private readonly checkpointBytes: number;
  /** Definitions known to be on disk. */
  private readonly storedDefinitions = new Set<string>();
  /** Machine directories known to exist (one mkdir per machine, not per execution). */
  private readonly machineDirs = new Set<string>();
  private readonly wal: WriteAheadLog;
  /** Histories with lines in the log that their files do not hold yet, by file. */
  private readonly unapplied = new Map<string, FileExecutionLog>();
  /**
   * Summaries of finished executions by key, kept with the checkpoint of the generation holding
   * their last event; forgotten when the history grows again (a redrive) before that.
   */
  private readonly finished = new Map<string, { readonly line: string; readonly generation: number }>();
  private checkpointing: Promise<void> | undefined;
  /** The last checkpoint the file system refused, until one succeeds. */
  private checkpointFault: StoreFault | undefined;
  private readonly counters = { bytesRead: 0, checkpoints: 0 };
  private readonly lock: ProcessLock;
  /**
   * What the start-up found and did about it, for the operator: a torn last record of the log
   * (a write cut short, never acknowledged) dropped, with what was kept.
   */
  readonly recoveryNotes: string[] = [];
  /** @internal The quoted names every history's codec writes (names recur from history to history). */
  readonly quotes = new QuotedTexts();

  constructor(props: FileEngineStoreProps) {
    this.dir = path.resolve(props.dir);
    this.executionsDir = path.join(this.dir, 'executions');
    this.definitionsDir = path.join(this.dir, 'definitions');
    this.walDir = path.join(this.dir, 'wal');
    this.summariesFile = path.join(this.dir, 'summaries.jsonl');
    this.checkpointBytes = props.checkpointBytes ?? 8 * 1024 * 1024;
    fs.mkdirSync(this.executionsDir, { recursive: true });
    fs.mkdirSync(this.definitionsDir, { recursive: true });
    fs.mkdirSync(this.walDir, { recursive: true });
    this.lock = lockStore(this.dir);
    // spare history files of an earlier store version: only their second names are left
    fs.rmSync(path.join(this.dir, 'spares'), { recursive: true, force: true });
    const left = walGenerations(this.walDir);
    this.recover(left);
    this.wal = new WriteAheadLog({
      dir: this.walDir,
      generation: (left.at(-1) ?? -1) + 1,
      syncWindowMs: props.syncWindowMs ?? 20,
      writeSync: props.writeSync,
    });
  }

  write(): void {
    this.wal.write();
    this.checkpointIfDue();
  }

  /** Starts a checkpoint when the log is long enough (not within a second of a refused one). */
  private checkpointIfDue(): void {
    if (
      this.checkpointing === undefined &&
      (this.checkpointFault === undefined || Date.now() - Date.parse(this.checkpointFault.since) >= 1000) &&
      (this.wal.unappliedBytes >= this.checkpointBytes || this.wal.sealedCount >= MAX_SEALED_GENERATIONS)
    ) {
      this.checkpointing = this.checkpoint()
        .then(() => {
          this.checkpointFault = undefined;
        })
        .catch((error: Error) => {
          // what the checkpoint did not apply stays in the log, and a later write tries again
          this.checkpointFault = storeFault(error, isTransientRefusal(error));
        })
        .finally(() => {
          this.checkpointing = undefined;
        });
    }
  }

  /** Why the store cannot write, if it cannot (see store-faults.ts). */
  get fault(): StoreFault | undefined {
    return this.wal.fault ?? this.checkpointFault;
  }

  retry(): void {
    this.wal.retry();
    this.checkpointIfDue();
  }

  get unwritten(): boolean {
    return this.wal.pending;
  }

  durable(): Promise<void> {
    return this.wal.durable();
  }

  stats(): EngineStoreStats {
    return { ...this.counters, walSyncs: this.wal.syncs };
  }

  async close(): Promise<void> {
    await this.checkpointing;
    try {
      if (this.wal.pending || this.wal.unappliedBytes > 0) await this.checkpoint();
      if (this.finished.size > 0) await this.appendSummaries(Number.POSITIVE_INFINITY, []);
    } catch (error) {
      // refused (disk full, read-only): what is written stays in the log for the next start to apply
      this.wal.close(false);
      this.lock.release();
      throw error;
    }
    this.wal.close(true);
    this.lock.release();
  }

  noteFinished(machineName: string, executionName: string, summary: object): void {
    this.finished.set(summaryKey(machineName, executionName), {
      line: JSON.stringify([machineName, executionName, summary]),
      generation: this.wal.generation,
    });
  }

  readSummaries(): Map<string, object> {
    const out = new Map<string, object>();
    if (!fs.existsSync(this.summariesFile)) return out;
    const text = fs.readFileSync(this.summariesFile, 'utf8');
    this.counters.bytesRead += text.length;
    let lines = 0;
    for (const line of text.split('\n')) {
      if (!line) continue;
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        continue; // torn by a kill, or by an append the file system refused part-way
      }
      if (!Array.isArray(entry)) continue;
      lines++;
      const key = summaryKey(String(entry[0]), String(entry[1]));
      if (entry.length > 2 && typeof entry[2] === 'object' && entry[2] !== null) out.set(key, entry[2]);
      else out.delete(key);
    }
    // compaction: superseded lines go once they outnumber the live ones
    if (lines > 2 * out.size + 64) {
      const tmp = `${this.summariesFile}.${process.pid}.tmp`;
      const body = [...out].map(([key, summary]) => `${JSON.stringify([...key.split('\t'), summary])}\n`);
      const fd = fs.openSync(tmp, 'w');
      try {
        writeAll(fd, Buffer.from(body.join('')));
        fs.fdatasyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, this.summariesFile);
      fsyncDirectory(this.dir);
    }
    return out;
  }

  putDefinition(text: string): string {
    const ref = definitionRef(text);
    if (this.storedDefinitions.has(ref)) return ref;
    const file = this.definitionFile(ref);
    if (!fs.existsSync(file)) {
      // written whole (and durable) before any history refers to it
      const tmp = `${file}.${process.pid}.tmp`;
      const fd = fs.openSync(tmp, 'w');
      try {
        writeAll(fd, Buffer.from(text));
        fs.fdatasyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, file);
      fsyncDirectory(this.definitionsDir);
    }
    this.storedDefinitions.add(ref);
    return ref;
  }

  getDefinition(ref: string): string | undefined {
    if (!DEFINITION_REF.test(ref)) return undefined;
    const file = this.definitionFile(ref);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
  }

  private definitionFile(ref: string): string {
    return path.join(this.definitionsDir, `${ref.slice('sha256:'.length)}.json`);
  }

  readRegistry(): unknown {
    const file = path.join(this.dir, 'registry.json');
    if (!fs.existsSync(file)) return undefined;
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  }

  writeRegistry(snapshot: unknown): void {
    // durable before the API answers (state machines are created rarely: one sync each is cheap)
    const file = path.join(this.dir, 'registry.json');
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    try {
      writeAll(fd, Buffer.from(JSON.stringify(snapshot)));
      fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
    fsyncDirectory(this.dir);
  }

  openLog(machineName: string, executionName: string): ExecutionLog {
    const file = this.historyFile(machineName, executionName);
    return this.unapplied.get(file) ?? new FileExecutionLog(this, file, machineName, executionName);
  }

  private historyFile(machineName: string, executionName: string): string {
    const machineDir = path.join(this.executionsDir, fileSafe(machineName));
    if (!this.machineDirs.has(machineDir)) {
      fs.mkdirSync(machineDir, { recursive: true });
      this.machineDirs.add(machineDir);
    }
    return path.join(machineDir, `${fileSafe(executionName)}.jsonl`);
  }

  listLogs(): Array<{ machineName: string; executionName: string }> {
    const out: Array<{ machineName: string; executionName: string }> = [];
    const filed = new Set<string>();
    for (const m of fs.readdirSync(this.executionsDir)) {
      if (!m.startsWith('_')) continue;
      for (const f of fs.readdirSync(path.join(this.executionsDir, m))) {
        if (f.startsWith('_') && f.endsWith('.jsonl')) {
          const machineName = fromFileSafe(m);
          const executionName = fromFileSafe(f.slice(0, -6));
          out.push({ machineName, executionName });
          filed.add(summaryKey(machineName, executionName));
        }
      }
    }
    this.filed = filed;
    return out;
  }

  /**
   * Histories that have a file: all listed by {@link listLogs} (the engine lists them when it
   * starts) and those a checkpoint created since; undefined until listed (any may have one). A
   * new execution's history then needs no lookup of its file (a name a large directory does not
   * have took 5–15 µs to look up).
   */
  private filed: Set<string> | undefined;

  /** @internal Whether a history may have a file (false: it has none for sure). */
  mayHaveFile(log: FileExecutionLog): boolean {
    return this.filed === undefined || this.filed.has(log.key);
  }

  /** @internal A checkpoint creates the history's file. */
  creatingFile(log: FileExecutionLog): void {
    this.filed?.add(log.key);
  }

  // ---- what the histories need of the store ------------------------------------------------------

  /**
   * @internal Encodes `events` as the history line of `log` at `offset` straight into the log's
   * staged bytes; returns where the line is.
   */
  stageLine(
    log: FileExecutionLog,
    offset: number,
    codec: EventCodec,
    events: readonly StoredEvent[],
  ): LogRange {
    const w = this.wal.beginLine(log, offset);
    const start = w.length;
    try {
      codec.encodeInto(w, events);
    } catch (error) {
      // a value JSON cannot hold: the log stays as it was (its staged bytes go to the disk as they are)
      this.wal.abandonLine(log);
      throw error;
    }
    this.unapplied.set(log.file, log);
    // it runs again (a redrive): a summary noted before no longer holds
    if (this.finished.size > 0) this.finished.delete(log.key);
    return {
      generation: this.wal.generation,
      position: this.wal.positionOf(start),
      length: w.length - start,
    };
  }

  /** @internal Writes what is staged, when a history is read (it must see its own lines). */
  writeStaged(): void {
    if (this.wal.pending) this.write();
  }

  /** @internal */
  readLogRange(generation: number, position: number, length: number, into: Buffer, at: number): void {
    this.wal.read(generation, position, length, into, at);
  }

  /** @internal */
  countRead(bytes: number): void {
    this.counters.bytesRead += bytes;
  }

  /** @internal A history whose lines are all in its file now. */
  applied(log: FileExecutionLog): void {
    if (this.unapplied.get(log.file) === log) this.unapplied.delete(log.file);
  }

  // ---- checkpoints and recovery ------------------------------------------------------------------

  /**
   * Seals the current log generation, appends its lines to their history files, makes those
   * durable (fdatasync, and their directories when a file is new), records the summaries of the
   * executions that finished in it, and deletes the generation. All but the seal runs off the
   * event loop (file I/O in libuv's pool); histories read their lines from the sealed
   * generation until their file holds them.
   */
  private async checkpoint(): Promise<void> {
    const sealed = this.wal.sealAll();
    const last = sealed.at(-1)?.generation ?? -1;
    const logs = [...this.unapplied.values()].filter((l) => l.hasLinesUpTo(last));
    // each generation is read once, off the event loop, rather than a synchronous read per line
    const generations = new Map<number, Buffer>();
    await Promise.all(
      sealed.map(async (g) => {
        generations.set(g.generation, await readFileRange(g.fd, g.bytes));
      }),
    );
    const newFiles = new Set<string>();
    await Promise.all(logs.map((l) => l.applyUpTo(last, newFiles, generations)));
    await Promise.all([...newFiles].map((dir) => fsyncDirectoryAsync(dir)));
    await this.appendSummaries(
      last,
      logs.map((l) => l.key),
    );
    await this.wal.retire(sealed);
    this.counters.checkpoints++;
  }

  /**
   * Appends the summaries of executions that finished up to `generation`, and forgets the summary
   * of every other history `touched` there (it ran again: a restart reads it whole).
   */
  private async appendSummaries(generation: number, touched: readonly string[]): Promise<void> {
    const lines: string[] = [];
    const summarized = new Set<string>();
    for (const [key, f] of this.finished) {
      if (f.generation > generation) continue;
      lines.push(f.line);
      summarized.add(key);
      this.finished.delete(key);
    }
    for (const key of touched) if (!summarized.has(key)) lines.push(JSON.stringify(key.split('\t')));
    if (lines.length === 0) return;
    const handle = await fs.promises.open(this.summariesFile, 'a');
    try {
      await handle.writeFile(`${lines.join('\n')}\n`);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /** Forgets the summaries of histories a restart found in the log (they ran again since). */
  private forgetSummaries(touched: readonly string[]): void {
    if (touched.length === 0) return;
    const fd = fs.openSync(this.summariesFile, 'a');
    try {
      writeAll(fd, Buffer.from(`${touched.map((key) => JSON.stringify(key.split('\t'))).join('\n')}\n`));
      fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Applies the generations a stopped engine left (killed, or a power loss after their fdatasync):
   * every complete line goes to its history at its offset unless the history already holds it;
   * then the histories are made durable, their summaries forgotten, and the generations deleted.
   */
  private recover(generations: readonly number[]): void {
    if (generations.length === 0) return;
    const open = new Map<string, { fd: number; size: number }>();
    const touched = new Set<string>();
    const dirs = new Set<string>();
    try {
      for (const generation of generations) {
        const bytes = fs.readFileSync(walFile(this.walDir, generation));
        this.counters.bytesRead += bytes.length;
        const { entries, end } = parseWalUpTo(bytes);
        if (end < bytes.length)
          this.recoveryNotes.push(
            `the write-ahead log ${walFile(this.walDir, generation)} ended in a torn record (${bytes.length - end} bytes after its last complete line): dropped; the ${entries.length} complete record(s) before it are applied`,
          );
        for (const entry of entries) {
          const [machineName, executionName] = entry.owner;
          const file = this.historyFile(machineName, executionName);
          touched.add(summaryKey(machineName, executionName));
          let history = open.get(file);
          if (history === undefined) {
            const fd = fs.openSync(file, 'a+');
            history = { fd, size: completeSize(fd) };
            open.set(file, history);
            dirs.add(path.dirname(file));
          }
          const end = entry.offset + entry.line.length;
          if (history.size >= end) continue; // applied before the stop
          if (history.size < entry.offset) {
            throw new Error(
              `the store is damaged: history ${file} ends at byte ${history.size}, but the write-ahead log continues it at byte ${entry.offset}`,
            );
          }
          // a part of this very line from a checkpoint that was cut short
          if (history.size > entry.offset) fs.ftruncateSync(history.fd, entry.offset);
          writeAll(history.fd, entry.line);
          history.size = end;
        }
      }
      for (const { fd } of open.values()) fs.fdatasyncSync(fd);
    } finally {
      for (const { fd } of open.values()) fs.closeSync(fd);
    }
    for (const dir of dirs) fsyncDirectory(dir);
    this.forgetSummaries([...touched]);
    for (const generation of generations) fs.rmSync(walFile(this.walDir, generation), { force: true });
    fsyncDirectory(this.walDir);
  }
}

/**
 * Every history of a store directory as a restarted engine would read it (history files plus
 * the write-ahead log, applied in memory), without changing anything: an engine may be running
 * on the directory (tests and tools look at a live store with this; a second FileEngineStore would
 * recover, that is apply and delete, the log under the running engine).
 */
export function peekStoreHistories(dir: string): Map<string, StoredEvent[]> {
  const texts = new Map<string, Buffer>();
  const executionsDir = path.join(dir, 'executions');
  if (fs.existsSync(executionsDir)) {
    for (const m of fs.readdirSync(executionsDir)) {
      if (!m.startsWith('_')) continue;
      for (const f of fs.readdirSync(path.join(executionsDir, m))) {
        if (!f.startsWith('_') || !f.endsWith('.jsonl')) continue;
        const key = summaryKey(fromFileSafe(m), fromFileSafe(f.slice(0, -6)));
        texts.set(key, fs.readFileSync(path.join(executionsDir, m, f)));
      }
    }
  }
  const walDir = path.join(dir, 'wal');
  if (fs.existsSync(walDir)) {
    for (const generation of walGenerations(walDir)) {
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(walFile(walDir, generation));
      } catch {
        continue; // checkpointed and deleted meanwhile: its lines are in the history files
      }
      for (const entry of parseWal(bytes)) {
        const key = summaryKey(entry.owner[0], entry.owner[1]);
        const text = texts.get(key) ?? Buffer.alloc(0);
        if (text.length !== entry.offset) continue; // held already (or the file was read mid-checkpoint)
        texts.set(key, Buffer.concat([text, entry.line]));
      }
    }
  }
  const out = new Map<string, StoredEvent[]>();
  for (const [key, text] of texts) out.set(key, decodeHistory(text.toString('utf8')));
  return out;
}

/** The first `length` bytes of an open file, read in libuv's thread pool. */
async function readFileRange(fd: number, length: number): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = await new Promise<number>((resolve, reject) =>
      fs.read(fd, bytes, done, length - done, done, (error, read) => (error ? reject(error) : resolve(read))),
    );
    if (n === 0) throw new Error('write-ahead log generation ends before the lines it holds');
    done += n;
  }
  return bytes;
}

/** The size of a history file without a torn last line (cut off: it was never acknowledged). */
function completeSize(fd: number): number {
  const size = fs.fstatSync(fd).size;
  if (size === 0) return 0;
  const last = Buffer.alloc(1);
  fs.readSync(fd, last, 0, 1, size - 1);
  if (last[0] === 0x0a) return size;
  const all = Buffer.alloc(size);
  fs.readSync(fd, all, 0, size, 0);
  const end = all.lastIndexOf(0x0a) + 1;
  fs.ftruncateSync(fd, end);
  return end;
}

function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

async function fsyncDirectoryAsync(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Lines of a history in the log, not yet in its file. */
interface LogRange {
  readonly generation: number;
  readonly position: number;
  readonly length: number;
}

/** The history of one execution: its file, and its newest lines while they are only in the write-ahead log. */
class FileExecutionLog implements ExecutionLog, WalOwner {
  walGeneration = -1;
  walId = -1;
  /** `<machine>\t<execution>`, as summaries are kept. */
  readonly key: string;
  /** Encoder state after the history's last line; set when the execution appends. */
  private codec: EventCodec | undefined;
  /** Bytes of the file that belong to the history (known once read; the file may grow beyond while a checkpoint writes). */
  private fileSize: number | undefined;
  private readonly ranges: LogRange[] = [];
  private rangeBytes = 0;

  constructor(
    private readonly store: FileEngineStore,
    readonly file: string,
    readonly machineName: string,
    readonly executionName: string,
  ) {
    this.key = summaryKey(machineName, executionName);
  }

  stage(events: readonly StoredEvent[]): void {
    if (events.length === 0) return;
    if (this.codec === undefined) this.load();
    let range: LogRange;
    try {
      range = this.store.stageLine(
        this,
        (this.fileSize as number) + this.rangeBytes,
        this.codec as EventCodec,
        events,
      );
    } catch (error) {
      this.codec = undefined; // part of the batch moved it on: taken up again from the history
      throw error;
    }
    this.ranges.push(range);
    this.rangeBytes += range.length;
  }

  append(events: readonly StoredEvent[]): void {
    this.stage(events);
    this.store.write();
  }

  close(): void {
    this.codec = undefined;
  }

  readAll(): StoredEvent[] {
    return decodeHistory(this.text().toString('utf8'), new EventCodec());
  }

  hasLinesUpTo(generation: number): boolean {
    const first = this.ranges[0];
    return first !== undefined && first.generation <= generation;
  }

  /**
   * Appends this history's lines of sealed generations up to `last` (their bytes in
   * `generations`) to its file and makes them durable.
   */
  async applyUpTo(
    last: number,
    newFiles: Set<string>,
    generations: ReadonlyMap<number, Buffer>,
  ): Promise<void> {
    const lines: Buffer[] = [];
    let total = 0;
    for (const range of this.ranges) {
      if (range.generation > last) break;
      const bytes = generations.get(range.generation) as Buffer;
      lines.push(bytes.subarray(range.position, range.position + range.length));
      total += range.length;
    }
    const count = lines.length;
    const bytes = count === 1 ? (lines[0] as Buffer) : Buffer.concat(lines, total);
    const fileSize = this.fileSize as number;
    if (fileSize === 0) this.store.creatingFile(this);
    // at the history's end as this store knows it: a checkpoint the file system refused part-way
    // may have left part of these bytes there, which this one writes over
    const handle = await fs.promises.open(this.file, fs.constants.O_WRONLY | fs.constants.O_CREAT);
    try {
      let done = 0;
      while (done < bytes.length)
        done += (await handle.write(bytes, done, bytes.length - done, fileSize + done)).bytesWritten;
      await handle.datasync();
    } finally {
      await handle.close();
    }
    if (fileSize === 0) newFiles.add(path.dirname(this.file));
    this.fileSize = fileSize + total;
    this.ranges.splice(0, count);
    this.rangeBytes -= total;
    if (this.ranges.length === 0) this.store.applied(this);
  }

  /** The lines of the first `count` ranges (`total` bytes), read back from the log. */
  private rangeBytesOf(count: number, total: number): Buffer {
    const bytes = Buffer.allocUnsafe(total);
    let at = 0;
    for (let i = 0; i < count; i++) {
      const range = this.ranges[i] as LogRange;
      this.store.readLogRange(range.generation, range.position, range.length, bytes, at);
      at += range.length;
    }
    return bytes;
  }

  /** The history's bytes: its file (up to what belongs to it) and its lines still in the log. */
  private text(): Buffer {
    this.store.writeStaged();
    let file: Buffer = fs.existsSync(this.file) ? fs.readFileSync(this.file) : Buffer.alloc(0);
    this.store.countRead(file.length);
    if (this.fileSize !== undefined) file = file.subarray(0, this.fileSize);
    if (this.ranges.length === 0) return file;
    return Buffer.concat([file, this.rangeBytesOf(this.ranges.length, this.rangeBytes)]);
  }

  /**
   * Takes up the encoder state the history's lines leave behind; the first time, also cuts a
   * partial last line that a kill left in the file (an older engine wrote the file directly).
   */
  private load(): void {
    if (this.fileSize === undefined) {
      if (this.store.mayHaveFile(this) && fs.existsSync(this.file)) {
        const fd = fs.openSync(this.file, 'r+');
        try {
          this.fileSize = completeSize(fd);
        } finally {
          fs.closeSync(fd);
        }
      } else this.fileSize = 0;
    }
    const codec = new EventCodec(this.store.quotes);
    if (this.fileSize > 0 || this.ranges.length > 0) decodeHistory(this.text().toString('utf8'), codec);
    this.codec = codec;
  }
}

/**
 * The events of a history file: format-3 and format-2 lines (see event-codec.ts) and the older
 * lines (one event as a JSON object, or a batch as an array of them). Stops at a torn last line.
 */
export function decodeHistory(text: string, codec = new EventCodec()): StoredEvent[] {
  const out: StoredEvent[] = [];
  let start = 0;
  /** The first tab at or after `start` (a format-3 line's raw texts follow it; JSON has no tab of its own). */
  let tab = -1;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    const complete = end >= 0;
    if (!complete) end = text.length;
    if (end === start) {
      start++;
      continue;
    }
    if (tab < start) {
      tab = text.indexOf('\t', start);
      if (tab < 0) tab = text.length;
    }
    const jsonEnd = Math.min(tab, end);
    const line = text.slice(start, jsonEnd);
    start = end + 1;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      break; // a torn last line: never acknowledged
    }
    if (Array.isArray(parsed) && parsed[0] === FORMAT_3) {
      // its JSON may be whole while its raw texts are cut short: only the newline completes it
      if (!complete) break;
      codec.decodeLine(parsed, out, jsonEnd < end ? text.slice(jsonEnd + 1, end) : '');
      continue;
    }
    if (Array.isArray(parsed) && parsed[0] === FORMAT_2) {
      codec.decodeLine(parsed, out);
      continue;
    }
    const events = (Array.isArray(parsed) ? parsed : [parsed]) as StoredEvent[];
    for (const e of events) {
      out.push(e);
      codec.follow(e);
    }
  }
  return out;
}

/** What {@link peekStoredDefinitions} answers: the definitions a store holds, as its engine would read them. */
export interface StoredDefinitions {
  /** The definition an execution runs (its ExecutionStarted's, inline or by reference), if stored. */
  ofExecution(machineName: string, executionName: string): string | undefined;
  /** A published version's definition, if the registry holds it. */
  ofVersion(machineName: string, version: number): string | undefined;
}

/**
 * A store's definitions read without changing anything (no lock, no recovery): what an audit
 * compares with an execution's pin while no engine has the store. A definition file is read as
 * it is, whatever its name says: an edit shows as another hash.
 */
export function peekStoredDefinitions(dir: string): StoredDefinitions {
  let histories: Map<string, StoredEvent[]> | undefined;
  const registryFile = path.join(dir, 'registry.json');
  const registry = fs.existsSync(registryFile)
    ? (JSON.parse(fs.readFileSync(registryFile, 'utf8')) as {
        machines?: { name: string; versions?: { version: number; definition: string }[] }[];
      })
    : {};
  return {
    ofExecution(machineName, executionName) {
      histories ??= peekStoreHistories(dir);
      const internal = histories.get(summaryKey(machineName, executionName))?.[0]?.internal ?? {};
      if (typeof internal.definition === 'string') return internal.definition;
      const ref = String(internal.definitionRef);
      const match = DEFINITION_REF.exec(ref);
      const file = match ? path.join(dir, 'definitions', `${match[1]}.json`) : undefined;
      return file && fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
    },
    ofVersion(machineName, version) {
      const machine = registry.machines?.find((m) => m.name === machineName);
      return machine?.versions?.find((v) => v.version === version)?.definition;
    },
  };
}

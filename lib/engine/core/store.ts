/**
 * Durable storage of the engine: one append-only JSON-lines history file per execution
 * (the execution's only state) and an atomically replaced snapshot of the state machine registry.
 * Each write is one line holding a batch of events in the compact format of event-codec.ts
 * (payload texts once, then by reference); files written in the older format (one event object,
 * or an array of them, per line) are still read and appended to. Writes are
 * synchronous `write(2)` calls, so a process killed with -9 loses nothing it wrote; a torn last
 * line (killed mid-write, never acknowledged) is cut off when the file is reopened.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { EventCodec, FORMAT_2 } from './event-codec.ts';
import type { StoredEvent } from './history.ts';
import { SpareFiles } from './spare-files.ts';

/** The history file of one execution. */
export interface ExecutionLog {
  /** Appends events in order, synchronously; the store may keep the array itself: never change it afterwards. */
  append(events: readonly StoredEvent[]): void;
  /** Every stored event, oldest first. */
  readAll(): StoredEvent[];
  /** Releases the file while the execution is not running; a later `append` opens it again. */
  close(): void;
}

/** Where the engine keeps state machines and executions. */
export interface EngineStore {
  readRegistry(): unknown;
  writeRegistry(snapshot: unknown): void;
  openLog(machineName: string, executionName: string): ExecutionLog;
  /** Every stored execution, as (machine name, execution name). */
  listLogs(): Array<{ machineName: string; executionName: string }>;
  /**
   * Keeps a definition once, by its content, and returns the reference executions record
   * (`sha256:<hex>`), so that starting an execution does not copy its definition into its history.
   */
  putDefinition(text: string): string;
  /** A definition kept by {@link EngineStore.putDefinition}, or undefined. */
  getDefinition(ref: string): string | undefined;
  /** Releases what the store holds open (the engine closes). */
  close(): void;
}

function definitionRef(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

const DEFINITION_REF = /^sha256:([0-9a-f]{64})$/;

/** Keeps everything in memory: for tests and EXPRESS-like throwaway runs. */
export class MemoryStore implements EngineStore {
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
      // the journal hands over each batch and never touches it again: kept as it is, not copied
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

  close(): void {}
}

/** Readonly props of a {@link FileStore}. */
export interface FileStoreProps {
  /** Directory holding `registry.json` and `executions/<machine>/<execution>.jsonl`. */
  readonly dir: string;
}

/** File names are derived from validated names, then percent-encoded, so no name can escape the directory. */
function fileSafe(name: string): string {
  return `_${encodeURIComponent(name).replace(/\./g, '%2E')}`;
}

function fromFileSafe(file: string): string {
  return decodeURIComponent(file.slice(1));
}

/** Durable store in a directory (default `.plangate/engine`). */
export class FileStore implements EngineStore {
  private readonly dir: string;
  private readonly executionsDir: string;
  private readonly definitionsDir: string;
  /** Definitions known to be on disk. */
  private readonly storedDefinitions = new Set<string>();
  /** Machine directories known to exist (one mkdir per machine, not per execution). */
  private readonly machineDirs = new Set<string>();
  private readonly spares: SpareFiles;
  /** New histories so far: the helper thread that makes spares starts with the fourth. */
  private created = 0;

  constructor(props: FileStoreProps) {
    this.dir = path.resolve(props.dir);
    this.executionsDir = path.join(this.dir, 'executions');
    this.definitionsDir = path.join(this.dir, 'definitions');
    fs.mkdirSync(this.executionsDir, { recursive: true });
    fs.mkdirSync(this.definitionsDir, { recursive: true });
    const sparesDir = path.join(this.dir, 'spares');
    // a spare left by a killed process may be a second name of a history: only the name goes
    fs.rmSync(sparesDir, { recursive: true, force: true });
    fs.mkdirSync(sparesDir, { recursive: true });
    this.spares = new SpareFiles({ dir: sparesDir });
  }

  close(): void {
    this.spares.close();
  }

  /** An empty file already named `file` and open for appending, when a spare is ready (see spare-files.ts). */
  private takeSpare(file: string): number | undefined {
    if (++this.created === 4) this.spares.start();
    return this.spares.take(file);
  }

  putDefinition(text: string): string {
    const ref = definitionRef(text);
    if (this.storedDefinitions.has(ref)) return ref;
    const file = this.definitionFile(ref);
    if (!fs.existsSync(file)) {
      // written whole before any history refers to it
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, text);
      fs.renameSync(tmp, file);
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
    const file = path.join(this.dir, 'registry.json');
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(snapshot));
    fs.renameSync(tmp, file);
  }

  openLog(machineName: string, executionName: string): ExecutionLog {
    const machineDir = path.join(this.executionsDir, fileSafe(machineName));
    if (!this.machineDirs.has(machineDir)) {
      fs.mkdirSync(machineDir, { recursive: true });
      this.machineDirs.add(machineDir);
    }
    const file = path.join(machineDir, `${fileSafe(executionName)}.jsonl`);
    return new FileExecutionLog(file, () => this.takeSpare(file));
  }

  listLogs(): Array<{ machineName: string; executionName: string }> {
    const out: Array<{ machineName: string; executionName: string }> = [];
    for (const m of fs.readdirSync(this.executionsDir)) {
      if (!m.startsWith('_')) continue;
      for (const f of fs.readdirSync(path.join(this.executionsDir, m))) {
        if (f.startsWith('_') && f.endsWith('.jsonl')) {
          out.push({ machineName: fromFileSafe(m), executionName: fromFileSafe(f.slice(0, -6)) });
        }
      }
    }
    return out;
  }
}

class FileExecutionLog implements ExecutionLog {
  private fd: number | undefined;
  /** Encoder state after the file's last line; set when the file is opened for appending. */
  private codec: EventCodec | undefined;

  constructor(
    private readonly file: string,
    /** An empty file already linked at `file`, open for appending, if the store has one ready. */
    private readonly takeSpare: () => number | undefined,
  ) {}

  append(events: readonly StoredEvent[]): void {
    if (events.length === 0) return;
    if (this.fd === undefined || this.codec === undefined) this.open();
    fs.writeSync(this.fd as number, (this.codec as EventCodec).encodeBatch(events));
  }

  close(): void {
    if (this.fd === undefined) return;
    fs.closeSync(this.fd);
    this.fd = undefined;
    this.codec = undefined;
  }

  readAll(): StoredEvent[] {
    if (!fs.existsSync(this.file)) return [];
    return decodeHistory(fs.readFileSync(this.file, 'utf8'), new EventCodec());
  }

  /**
   * Opens the file for appending, first removing a partial last line left by a kill during a
   * write, and takes up the encoder state its lines leave behind.
   */
  private open(): void {
    const spare = this.takeSpare();
    if (spare !== undefined) {
      this.fd = spare;
      this.codec = new EventCodec();
      return;
    }
    const fd = fs.openSync(this.file, 'a+');
    const codec = new EventCodec();
    try {
      const size = fs.fstatSync(fd).size;
      if (size > 0) {
        const text = fs.readFileSync(this.file);
        const end = text.lastIndexOf(0x0a) + 1;
        if (end < size) fs.ftruncateSync(fd, end);
        decodeHistory(text.subarray(0, end).toString('utf8'), codec);
      }
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
    this.fd = fd;
    this.codec = codec;
  }
}

/**
 * The events of a history file: format-2 lines (see event-codec.ts) and the older lines (one
 * event as a JSON object, or a batch as an array of them). Stops at a torn last line.
 */
export function decodeHistory(text: string, codec = new EventCodec()): StoredEvent[] {
  const out: StoredEvent[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    if (!line) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      break; // a torn last line: never acknowledged
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

/**
 * A lock file that says which process holds a directory: `{pid, start, token, holder, since}`.
 * `start` is the process's start time as the kernel counts it (Linux `/proc/<pid>/stat`), so a
 * lock whose pid was reused by another process is known stale. The file is created whole with
 * link(2) (never seen half-written), and a stale one is taken over through a marker only one
 * process can create for that lock's token: two processes that both find it stale cannot both
 * end up holding the directory.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { z } from 'zod';

const LockRecordSchema = z.object({
  pid: z.number().int().positive(),
  /** The process's start time in clock ticks since boot; null where the platform does not say. */
  start: z.number().int().nonnegative().nullable(),
  token: z.string().min(1),
  /** What holds it, for the refusal's message (e.g. `plangate serve`). */
  holder: z.string(),
  since: z.string(),
});
export type LockRecord = z.infer<typeof LockRecordSchema>;

/** The directory is held by a live process: `holder` says which. */
export class LockHeldError extends Error {
  override readonly name = 'LockHeldError';
  constructor(
    readonly file: string,
    readonly holder: LockRecord,
  ) {
    super(`held by process ${holder.pid} (${holder.holder}, since ${holder.since})`);
  }
}

/** The start time of process `pid` in clock ticks since boot, or null where it cannot be read. */
export function processStart(pid: number): number | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // the command name (field 2) may hold spaces and parentheses: fields count from its last ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = Number(fields[19]);
  return Number.isSafeInteger(start) ? start : null;
}

/** Whether the process that wrote `record` still runs (same pid, and the same start time where known). */
export function lockHolderAlive(record: Pick<LockRecord, 'pid' | 'start'>): boolean {
  if (record.pid === process.pid) return record.start === null || record.start === processStart(process.pid);
  try {
    process.kill(record.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (record.start === null) return true;
  const start = processStart(record.pid);
  // its start time cannot be read (no /proc here): the pid alone decides
  return start === null || start === record.start;
}

/** A held lock: released once, by its holder. */
export interface ProcessLock {
  readonly file: string;
  readonly record: LockRecord;
  release(): void;
}

/** Readonly options of {@link acquireProcessLock}. */
export interface ProcessLockOptions {
  /** What holds it, named in another process's refusal. */
  readonly holder: string;
  /**
   * `share`: a lock this process holds already is held again (an engine reopened within one
   * process, as tests do); `refuse`: it is refused like another process's. @default 'refuse'
   */
  readonly sameProcess?: 'share' | 'refuse';
}

/**
 * Takes `file` for this process. Throws {@link LockHeldError} when a live process holds it; a
 * lock left by a process that is gone (or whose pid now belongs to another process) is taken over.
 */
export function acquireProcessLock(file: string, options: ProcessLockOptions): ProcessLock {
  const { holder } = options;
  const record: LockRecord = {
    pid: process.pid,
    start: processStart(process.pid),
    token: randomBytes(12).toString('hex'),
    holder,
    since: new Date().toISOString(),
  };
  const tmp = `${file}.${record.token}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        fs.linkSync(tmp, file);
        return {
          file,
          record,
          release: () => {
            if (readLock(file)?.token === record.token) fs.rmSync(file, { force: true });
          },
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const found = readLock(file);
      if (found === undefined) continue; // released meanwhile
      if (found.pid === process.pid && options.sameProcess === 'share')
        return { file, record: found, release: () => fs.rmSync(file, { force: true }) };
      if (lockHolderAlive(found)) throw new LockHeldError(file, found);
      if (attempt > 100) throw new Error(`could not take over the stale lock ${file}`);
      takeOverStale(file, found, holder);
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * Removes the stale lock `stale` from `file`, unless another process is removing it (then this
 * one tries again from the start). The marker `<file>.<token>.takeover` is itself a lock: only
 * its holder may remove a lock with that token, and it checks the token once more first.
 */
function takeOverStale(file: string, stale: LockRecord, holder: string): void {
  let marker: ProcessLock;
  try {
    marker = acquireProcessLock(`${file}.${stale.token}.takeover`, { holder });
  } catch (error) {
    if (error instanceof LockHeldError) return; // another process is taking it over
    throw error;
  }
  try {
    if (readLock(file)?.token === stale.token) fs.rmSync(file, { force: true });
  } finally {
    marker.release();
  }
}

/**
 * The record in `file`, or undefined when there is none. A file another version wrote (a bare
 * pid) reads as that pid with no start time.
 */
export function readLock(file: string): LockRecord | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const bare = /^\s*(\d+)\s*$/.exec(text);
  if (bare)
    return {
      pid: Number(bare[1]),
      start: null,
      token: `pid-${bare[1]}`,
      holder: 'an earlier plangate',
      since: 'unknown',
    };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = LockRecordSchema.safeParse(json);
  // unreadable: no live process wrote it this way (the file is created whole): stale
  return parsed.success
    ? parsed.data
    : {
        pid: 0x7fffffff,
        start: null,
        token: `unreadable-${text.length}`,
        holder: 'unknown',
        since: 'unknown',
      };
}

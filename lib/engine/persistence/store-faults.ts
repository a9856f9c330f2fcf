/**
 * What a file-system error of a store means to an operator: the cause in a few words and the fix.
 * The engine's fault (`StoreFault`), the server's 503 and the CLI's one-line refusals all say it
 * this way.
 */

/** The fix for each error code a store's file system gives, by code. */
const FIXES: Readonly<Record<string, string>> = {
  ENOSPC: 'no space left on the file system: free space on it',
  EDQUOT: 'the disk quota is used up: free space or raise the quota',
  EROFS: 'the file system is read-only: remount it read-write',
  EACCES: 'permission denied: give this user write access to the store',
  EPERM: 'operation not permitted: give this user write access to the store',
  EIO: 'an I/O error: check the disk (dmesg), then restart',
  EMFILE: 'too many open files: raise the limit (ulimit -n)',
  ENFILE: 'too many open files on the system: raise the system limit',
};

/**
 * Codes of refusals a later try can get past once the operator acts (space freed, the file system
 * remounted read-write, files closed); any other failure (EIO, the store removed) is for good.
 */
const TRANSIENT: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EMFILE', 'ENFILE']);

/** Whether `error` is a refusal that a later try may get past (see {@link TRANSIENT}). */
export function isTransientRefusal(error: unknown): boolean {
  return TRANSIENT.has(errorCode(error) ?? '');
}

/** The error code of a Node file-system error (ENOSPC, EROFS, …), if it is one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The cause and fix of a file-system error (`ENOSPC: no space left …: free space on it`), or undefined for others. */
export function storeFaultAdvice(error: unknown): string | undefined {
  const code = errorCode(error);
  const fix = code === undefined ? undefined : FIXES[code];
  return fix === undefined ? undefined : `${code}: ${fix}`;
}

/** One line for an error met at start-up: the advice for a file-system error, else its message. */
export function describeStoreError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const advice = storeFaultAdvice(error);
  return (advice ? `${message} (${advice})` : message).replace(/\s*\n\s*/g, ' ');
}

/**
 * The engine store cannot write: what it has stays as it was written, new work is refused, and
 * `transient` faults (a write refused: disk full, read-only) are retried until one succeeds.
 */
export interface StoreFault {
  readonly error: Error;
  /** ENOSPC, EROFS, …, when the file system said. */
  readonly code: string | undefined;
  /** When the fault began (ISO 8601). */
  readonly since: string;
  /**
   * A write that may succeed later (retried); false after a failed fdatasync, after which what
   * the disk holds is not known: the engine must be restarted.
   */
  readonly transient: boolean;
  /** The cause and fix, for people: `ENOSPC: no space left on the file system: free space on it`. */
  readonly advice: string;
}

export function storeFault(error: Error, transient: boolean): StoreFault {
  return {
    error,
    code: errorCode(error),
    since: new Date().toISOString(),
    transient,
    advice: storeFaultAdvice(error) ?? error.message,
  };
}

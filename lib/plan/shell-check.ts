/**
 * `bash -n` over contract commands without running them. Few commands are checked one
 * process each, in parallel; many are checked in batches (each command wrapped in a
 * function definition, which `-n` parses but nothing executes) and a failing batch is
 * split in halves until the bad commands are found, so a big plan costs a few processes.
 */
import { spawn } from 'node:child_process';

/** @default 8 bash processes at a time. */
const CONCURRENCY = 8;
/** Up to this many distinct commands are checked one process each. */
const INDIVIDUAL_LIMIT = 64;
const BATCH_SIZE = 2_000;
const TIMEOUT_MS = 10_000;

/** Per command: undefined when it parses, else bash's message. Undefined overall when bash is missing. */
export async function checkShellSyntax(
  commands: readonly string[],
): Promise<Array<string | undefined> | undefined> {
  const unique = [...new Set(commands)];
  if (unique.length === 0) return [];
  const errors = new Map<string, string>();
  try {
    if (unique.length <= INDIVIDUAL_LIMIT) {
      await inParallel(unique.map((command) => () => checkOne(command, errors)));
    } else {
      const batches: string[][] = [];
      for (let i = 0; i < unique.length; i += BATCH_SIZE) batches.push(unique.slice(i, i + BATCH_SIZE));
      await inParallel(batches.map((batch) => () => checkBatch(batch, errors)));
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return commands.map((command) => errors.get(command));
}

async function checkOne(command: string, errors: Map<string, string>): Promise<void> {
  const result = await bashNoExec(command);
  if (result !== undefined) errors.set(command, result);
}

async function checkBatch(batch: readonly string[], errors: Map<string, string>): Promise<void> {
  if (batch.length === 1) return checkOne(batch[0]!, errors);
  const script = batch.map((command, i) => `__plangate_check_${i}() {\n${command}\n}\n`).join('');
  if ((await bashNoExec(script)) === undefined) return;
  const half = batch.length >> 1;
  await Promise.all([checkBatch(batch.slice(0, half), errors), checkBatch(batch.slice(half), errors)]);
}

/** Runs `bash -n` on a script given on stdin; resolves to its message, or undefined when it parses. */
function bashNoExec(script: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-n'], { stdio: ['pipe', 'ignore', 'pipe'], timeout: TIMEOUT_MS });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.on('error', reject);
    child.stdin.on('error', () => {});
    child.on('close', (code) => {
      if (code === 0) resolve(undefined);
      else
        resolve(
          stderr
            .split('\n')
            .map((l) => l.replace(/^bash: /, '').trim())
            .filter((l) => l !== '')
            .join('; ') || `bash -n exited with ${code}`,
        );
    });
    child.stdin.end(script);
  });
}

async function inParallel(tasks: ReadonlyArray<() => Promise<void>>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, tasks.length) }, worker));
}

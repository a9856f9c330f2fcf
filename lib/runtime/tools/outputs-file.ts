/**
 * Named outputs from process-based tools, GitHub-Actions style: the process appends
 * `name=value` lines to the file named by $PLANGATE_OUTPUT and the harness reads them back.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withSandboxScope } from '../sandbox/sandbox.ts';

/** The environment variable naming the outputs file. */
export const OUTPUT_FILE_ENV = 'PLANGATE_OUTPUT';

/**
 * Creates an empty outputs file, hands its path to `use`, and returns what was written to it.
 * Its directory is writable to the processes `use` starts, and only to them; a process that runs
 * on another host (the plan-process function) writes a file of its own, which comes back here.
 */
export async function withOutputsFile<T>(
  use: (path: string) => Promise<T>,
): Promise<{ result: T; outputs: Record<string, string> }> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-out-'));
  const path = join(dir, 'outputs');
  try {
    const result = await withSandboxScope({ writable: [dir], returned: [path] }, () => use(path));
    const text = await readFile(path, 'utf8').catch(() => '');
    return { result, outputs: parseOutputs(text) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Parses `name=value` lines; later lines win; lines without `=` are ignored. */
export function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    outputs[line.slice(0, eq).trim()] = line.slice(eq + 1).replace(/\r$/, '');
  }
  return outputs;
}

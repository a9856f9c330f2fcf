/** The `shell` tool: one `bash -c` command with cwd, env, timeout and bounded output. */
import { TimeoutError, ToolFailedError } from '../shared/errors.ts';
import { runProcess } from '../shared/process.ts';
import { OUTPUT_FILE_ENV, withOutputsFile } from './outputs-file.ts';
import type { ToolContext, ToolOutput } from './types.ts';

export interface ShellInput {
  readonly command: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutSeconds?: number;
  readonly maxOutputBytes?: number;
}

/**
 * Runs the command. Exit 0 returns `{ exitCode, stdout, stderr, outputs }`; any other exit,
 * a timeout or an abort throws, carrying the exit code for the classifier.
 */
export async function runShell(input: ShellInput, ctx: ToolContext): Promise<ToolOutput> {
  const timeoutMs = Math.min(
    input.timeoutSeconds ? input.timeoutSeconds * 1000 : ctx.timeoutMs,
    ctx.timeoutMs,
  );
  const { result, outputs } = await withOutputsFile((outputFile) =>
    runProcess({
      command: input.command,
      cwd: input.cwd ?? ctx.cwd,
      env: { ...input.env, [OUTPUT_FILE_ENV]: outputFile },
      timeoutMs,
      maxOutputBytes: input.maxOutputBytes,
      signal: ctx.signal,
    }),
  );
  if (result.timedOut) {
    throw new TimeoutError(`shell command timed out after ${timeoutMs} ms`, {
      location: `steps.${ctx.stepId}`,
    });
  }
  if (result.aborted)
    throw new ToolFailedError('shell command was aborted', { location: `steps.${ctx.stepId}` });
  const output = {
    exitCode: result.exitCode,
    stdout: result.stdout,
    stderr: result.stderr,
    durationMs: result.durationMs,
    outputs,
  };
  if (result.exitCode !== 0) {
    const tail = result.stderr.trim().split('\n').slice(-3).join(' | ');
    throw new ToolFailedError(
      `shell command exited ${result.exitCode ?? `on ${result.signal}`}${tail ? `: ${tail}` : ''}`,
      { exitCode: result.exitCode ?? 128, output },
    );
  }
  return output;
}

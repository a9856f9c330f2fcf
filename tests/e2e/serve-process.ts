/** `plangate serve` as a child process, its stdout read line by line as a user would watch it. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { PLANGATE_NODE_ARGS } from '../support/plangate-cli.ts';

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly lines: readonly string[];
  /** The first stdout line `test` accepts, waiting for it; throws if serve exits first. */
  line(test: (line: string) => boolean): Promise<string>;
  /** SIGTERM; resolves to the exit code. */
  stop(): Promise<number | null>;
}

export function startServe(
  args: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string>> = {},
): ServeProcess {
  const child = spawn(process.execPath, [...PLANGATE_NODE_ARGS, 'serve', ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_NO_WARNINGS: '1', ...env },
  });
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const wake of waiters.splice(0)) wake();
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    child,
    lines,
    async line(test) {
      for (;;) {
        const found = lines.find(test);
        if (found !== undefined) return found;
        await Promise.race([
          new Promise<void>((r) => waiters.push(r)),
          exited.then(() => {
            throw new Error(`serve exited: ${lines.join('\n')}\n${stderr}`);
          }),
        ]);
      }
    },
    stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * docs/api.md works as written: its "Try it" walkthrough (start `plangate serve`, submit a plan
 * signed with SigV4, watch its progress, answer its gate as the approver the plan names, see it
 * finish) is run literally, command by command, with bash in an empty directory. The shell
 * blocks are taken from the doc as they are; each top-level command (tree-sitter-bash splits
 * them) must succeed, and the run's journal then shows what the doc says happened.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { parseBash } from '../../lib/plan/shell/grammar.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { defaultStoreDir, storePaths } from '../../lib/serve/store-directory.ts';
import { listExecutions, openStoreReader } from '../../lib/serve/store-reader.ts';
import { PLANGATE_SHELL_COMMAND } from '../support/plangate-cli.ts';
import { REPO } from './cli.ts';

/** What the walkthrough drives besides plangate: curl's --aws-sigv4 and python3 (to read the email). */
const missing = ['curl', 'python3'].filter(
  (tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0,
);
if (missing.length > 0) console.warn(`api-walkthrough: no ${missing.join(', ')}: the walkthrough skips`);

/** The fenced `sh` blocks of the section titled `heading`, in order. */
function shellBlocks(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/api.md has no "## ${heading}" section`);
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

/** The top-level commands of a script, each with what follows it up to the next (`&`, comments). */
function topLevelCommands(script: string): string[] {
  const tree = parseBash(script, performance.now() + 5_000);
  if (!tree) throw new Error('the walkthrough did not parse in time');
  try {
    if (tree.rootNode.hasError) throw new Error('the walkthrough is not valid bash');
    const starts = tree.rootNode.namedChildren
      .filter((node) => node !== null && node.type !== 'comment')
      .map((node) => node?.startIndex as number);
    return starts.map((at, i) => script.slice(at, starts[i + 1] ?? script.length).trimEnd());
  } finally {
    tree.delete();
  }
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(missing.length > 0)('docs/api.md "Try it"', () => {
  it('runs as written: serve, submit, progress, the approver answers, the run finishes', async () => {
    const blocks = shellBlocks(await readFile(join(REPO, 'docs/api.md'), 'utf8'), 'Try it');
    const commands = topLevelCommands(blocks.join('\n'));
    const script = commands.join('\n');
    // The walkthrough's steps, each present: the doc may be reworded, not emptied.
    for (const step of [
      /^plangate serve\b/m,
      /--aws-sigv4/,
      /\/plans"/,
      /\/progress"/,
      /\/as-recipient"/,
      /\bkill\b/,
    ])
      expect(script).toMatch(step);

    const dir = await mkdtemp(join(tmpdir(), 'plangate-walkthrough-'));
    dirs.push(dir);
    // `plangate` on the PATH, as `npm run build && npm link` puts it there.
    const bin = join(dir, '.bin');
    await mkdir(bin);
    await writeFile(join(bin, 'plangate'), `#!/bin/sh\nexec ${PLANGATE_SHELL_COMMAND} "$@"\n`);
    await chmod(join(bin, 'plangate'), 0o755);

    // Each command announces itself on fd 3 before it runs; `set -e` stops at the first that fails.
    const traced = [
      'set -euo pipefail',
      ...commands.flatMap((command, i) => [`printf '%s\\n' ${i} >&3`, command]),
      `printf '%s\\n' done >&3`,
    ].join('\n');
    const run = spawn('bash', ['-c', traced], {
      cwd: dir,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        NODE_NO_WARNINGS: '1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    });
    const [, out, err, marks] = run.stdio as unknown as [null, Readable, Readable, Readable];
    let stdout = '';
    let stderr = '';
    let reached = '';
    out.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    err.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    marks.on('data', (chunk: Buffer) => {
      reached += chunk.toString();
    });
    const closed = new Promise<void>((resolve) => run.once('close', () => resolve()));
    const timer = setTimeout(() => run.kill('SIGKILL'), 150_000);
    const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
    clearTimeout(timer);
    // Whatever the script left behind (its `plangate serve`, when it stopped early) goes with it;
    // until then it holds the script's pipes open.
    try {
      process.kill(-(run.pid as number), 'SIGTERM');
    } catch {
      // The group is gone: the walkthrough stopped its server itself.
    }
    await closed;
    const last = reached.trim().split('\n').at(-1);
    const failed =
      last === 'done' ? '' : last ? (commands[Number(last)] as string) : '(before the first command)';
    expect(
      { code, failed },
      `the walkthrough stopped at:\n${failed}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`,
    ).toEqual({ code: 0, failed: '' });

    // What the doc says happened did: one execution, approved by the plan's approver, succeeded.
    expect(stdout).toMatch(/^SUCCEEDED$/m);
    const reader = await openStoreReader(storePaths(defaultStoreDir(dir)));
    try {
      const [execution, ...others] = await listExecutions(reader);
      expect(others).toEqual([]);
      const events = await readEvents(reader.doc, reader.eventsTable, execution?.executionArn as string);
      expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({
        approver: 'dana@example.com',
      });
      expect(events.find((e) => e.event === 'EXECUTION_COMPLETE')?.details).toMatchObject({
        succeeded: true,
      });
    } finally {
      await reader.close();
    }
  }, 180_000);
});

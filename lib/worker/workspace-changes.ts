/**
 * Which files an agent's attempt changed in its workspace, when the workspace is in a git
 * repository (seed 003's "Files modified", taken from the workspace, not from the agent's word):
 * `git status` before and after (each changed path with the content it had), and the files of
 * the commits it made. Paths are relative to the repository's root.
 */
import { execFile } from 'node:child_process';

/** At most this many paths are listed; the rest are counted. */
const MAX_FILES = 200;
const GIT_TIMEOUT_MS = 15_000;

export interface WorkspaceSnapshot {
  readonly head: string | undefined;
  /** Each path `git status` lists, with its status and content hash. */
  readonly dirty: ReadonlyMap<string, string>;
}

/** The workspace's state; undefined when it is not in a git repository (or git cannot say). */
export async function snapshotWorkspace(workspace: string): Promise<WorkspaceSnapshot | undefined> {
  const inside = await git(workspace, ['rev-parse', '--is-inside-work-tree']);
  if (inside?.trim() !== 'true') return undefined;
  const status = await git(workspace, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
  if (status === undefined) return undefined;
  const entries = parseStatus(status);
  const root = (await git(workspace, ['rev-parse', '--show-toplevel']))?.trim();
  const present = entries.filter((e) => !e.status.includes('D')).map((e) => e.path);
  const hashes =
    present.length > 0 && root
      ? ((await git(root, ['hash-object', '--stdin-paths'], present.join('\n')))?.trim().split('\n') ?? [])
      : [];
  const dirty = new Map<string, string>();
  let next = 0;
  for (const entry of entries)
    dirty.set(entry.path, `${entry.status}:${entry.status.includes('D') ? '-' : (hashes[next++] ?? '?')}`);
  const head = (await git(workspace, ['rev-parse', '-q', '--verify', 'HEAD']))?.trim() || undefined;
  return { head, dirty };
}

/** The paths changed since `before` (sorted; at most MAX_FILES, then how many more). */
export async function changedFiles(
  workspace: string,
  before: WorkspaceSnapshot,
): Promise<string[] | undefined> {
  const after = await snapshotWorkspace(workspace);
  if (!after) return undefined;
  const changed = new Set<string>();
  for (const path of new Set([...before.dirty.keys(), ...after.dirty.keys()]))
    if (before.dirty.get(path) !== after.dirty.get(path)) changed.add(path);
  if (before.head && after.head && before.head !== after.head) {
    const committed = await git(workspace, ['diff', '--name-only', '-z', before.head, after.head]);
    for (const path of (committed ?? '').split('\0')) if (path) changed.add(path);
  }
  const sorted = [...changed].sort();
  return sorted.length > MAX_FILES
    ? [...sorted.slice(0, MAX_FILES), `… and ${sorted.length - MAX_FILES} more`]
    : sorted;
}

/** `git status -z` entries: `XY path`, a rename or copy followed by its original path. */
function parseStatus(text: string): { status: string; path: string }[] {
  const fields = text.split('\0');
  const entries: { status: string; path: string }[] = [];
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as string;
    if (field.length < 4) continue;
    const status = field.slice(0, 2);
    entries.push({ status, path: field.slice(3) });
    if (status.includes('R') || status.includes('C')) i++;
  }
  return entries;
}

/** git's stdout, or undefined when it failed (not a repository, no HEAD yet, git missing). */
function git(cwd: string, args: readonly string[], stdin?: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = execFile(
      'git',
      [...args],
      { cwd, timeout: GIT_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => resolve(error ? undefined : stdout),
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end(stdin ?? '');
  });
}

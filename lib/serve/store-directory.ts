/**
 * The store directory and the session file that says which process owns it. The store holds
 * what plan code must never touch (the journal's tables, the engine, the link signing key, the
 * session's endpoints), so it lives outside every workspace: under the user's state directory,
 * one per workspace, found again from the same working directory by every command.
 * The engine store and dynalite's LevelDB are single-process, so while `plangate run` (or
 * `resume`) holds the store, `status` and `events` talk to its endpoints instead of opening it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { lockHolderAlive, processStart } from '../engine/persistence/process-lock.ts';

/** Where the stores of every workspace live: `$XDG_STATE_HOME/plangate`, else `~/.local/state/plangate`. */
export function stateRoot(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_STATE_HOME;
  return join(xdg?.startsWith('/') ? xdg : join(homedir(), '.local/state'), 'plangate');
}

/** The store directory a workspace had before stores moved out of it; still found there. */
export const LEGACY_STORE_DIR = '.plangate';

/**
 * The store of the workspace `cwd` when no `--store` is given: `<state root>/stores/<name>-<hash>`
 * of its absolute path, or `.plangate` in it where a store was made before (its `engine/` is there).
 */
export function defaultStoreDir(cwd: string = process.cwd()): string {
  const workspace = resolve(cwd);
  const legacy = join(workspace, LEGACY_STORE_DIR);
  if (existsSync(join(legacy, 'engine'))) return legacy;
  const hash = createHash('sha256').update(workspace).digest('hex').slice(0, 16);
  const name = (basename(workspace) || 'root').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40);
  return join(stateRoot(), 'stores', `${name}-${hash}`);
}

/** What `--store DIR` defaults to, for usage texts. */
export const DEFAULT_STORE_DESCRIPTION = "this directory's store under ~/.local/state/plangate";

export interface StorePaths {
  readonly root: string;
  /** Which process holds the store (lib/engine/persistence/process-lock.ts), taken before anything in it is opened. */
  readonly lock: string;
  /** The embedded engine's durable store. */
  readonly engine: string;
  /** The data directory given to dynalite and the event bus (they add `dynamodb/`, `eventbus/`). */
  readonly data: string;
  readonly session: string;
  readonly linkKey: string;
  /** The harness Lambdas' log (harness-log.ts). */
  readonly logs: string;
  /** The signed anchors of the journal's heads and the public key they verify with (digest-log.ts). */
  readonly anchors: string;
  /** The policy directory the store's holder (serve, run, resume) decides by: its reads too (read-policy.ts). */
  readonly policy: string;
}

/** The layout of the store `dir` (default: the working directory's, `defaultStoreDir`). */
export function storePaths(dir?: string): StorePaths {
  const root = resolve(dir ?? defaultStoreDir());
  return {
    root,
    lock: join(root, 'LOCK'),
    engine: join(root, 'engine'),
    data: root,
    session: join(root, 'session.json'),
    linkKey: join(root, 'approval-signing.key'),
    logs: join(root, 'logs'),
    anchors: join(root, 'anchors'),
    policy: join(root, 'policy.json'),
  };
}

/** Where a running session can be reached. */
export const SessionInfoSchema = z.object({
  pid: z.number().int(),
  startedAt: z.string(),
  dynamoEndpoint: z.string(),
  eventsEndpoint: z.string(),
  sfnEndpoint: z.string(),
  approvalUrl: z.string(),
  /**
   * The process's start time (process-lock.ts): a session file whose pid now belongs to another
   * process is not live. Absent in files written before it was kept.
   */
  processStart: z.number().int().nullable().optional(),
});
export type SessionInfo = z.infer<typeof SessionInfoSchema>;

/** Announces this process's session (its start time is added: see {@link SessionInfo.processStart}). */
export async function writeSession(
  paths: StorePaths,
  info: Omit<SessionInfo, 'processStart'>,
): Promise<void> {
  await mkdir(paths.root, { recursive: true });
  const session: SessionInfo = { ...info, processStart: processStart(info.pid) };
  await writeFile(paths.session, `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600 });
}

/**
 * The live session holding the store, if any; a session file left by a killed process (or whose
 * pid another process has since) is ignored.
 */
export async function liveSession(paths: StorePaths): Promise<SessionInfo | undefined> {
  let text: string;
  try {
    text = await readFile(paths.session, 'utf8');
  } catch {
    return undefined;
  }
  const parsed = SessionInfoSchema.safeParse(safeJson(text));
  if (!parsed.success || !lockHolderAlive({ pid: parsed.data.pid, start: parsed.data.processStart ?? null }))
    return undefined;
  return parsed.data;
}

/** Removes the session file if it is this process's. */
export async function releaseSession(paths: StorePaths): Promise<void> {
  const parsed = SessionInfoSchema.safeParse(safeJson(await readFile(paths.session, 'utf8').catch(() => '')));
  if (parsed.success && parsed.data.pid === process.pid) await rm(paths.session, { force: true });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The store's approval-id signing key (32 random bytes, mode 0600), created on first use so links survive a restart. */
export async function loadSigningKey(paths: StorePaths): Promise<Buffer> {
  try {
    const key = Buffer.from((await readFile(paths.linkKey, 'utf8')).trim(), 'base64url');
    if (key.length >= 32) return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(32);
  await mkdir(paths.root, { recursive: true });
  await writeFile(paths.linkKey, key.toString('base64url'), { mode: 0o600 });
  return key;
}

/** Where the plan a run started with is kept, so `resume` shows and follows the same plan. */
export function planFile(paths: StorePaths, digestHex: string): string {
  return join(paths.root, 'plans', `${digestHex.replace(/^sha256:/, '')}.json`);
}

/**
 * How an execution's agent steps are worked, kept with the run so `resume` (and a re-run that
 * re-attaches) works them the same way: by the run's own workers (`in-process`), or by
 * `plangate worker` processes (`external`, `--no-workers`), which the run's own workers would
 * otherwise race for the tasks.
 */
export const RunSettingsSchema = z.object({
  executionArn: z.string(),
  workers: z.enum(['in-process', 'external']),
});
export type RunSettings = z.infer<typeof RunSettingsSchema>;

function runSettingsFile(paths: StorePaths, executionArn: string): string {
  const name = createHash('sha256').update(executionArn).digest('hex').slice(0, 32);
  return join(paths.root, 'runs', `${name}.json`);
}

export async function writeRunSettings(paths: StorePaths, settings: RunSettings): Promise<void> {
  const file = runSettingsFile(paths, settings.executionArn);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(settings, null, 2)}\n`);
}

/** The settings recorded for this execution; undefined for one started before they were kept. */
export async function readRunSettings(
  paths: StorePaths,
  executionArn: string,
): Promise<RunSettings | undefined> {
  const text = await readFile(runSettingsFile(paths, executionArn), 'utf8').catch(() => '');
  const parsed = RunSettingsSchema.safeParse(safeJson(text));
  return parsed.success && parsed.data.executionArn === executionArn ? parsed.data : undefined;
}

const StorePolicySchema = z.object({ dir: z.string().min(1) });

/** Records the policy directory the process holding the store decides by (serve, run, resume at start). */
export async function writeStorePolicy(paths: StorePaths, dir: string): Promise<void> {
  await mkdir(paths.root, { recursive: true });
  await writeFile(paths.policy, `${JSON.stringify({ dir }, null, 2)}\n`, { mode: 0o600 });
}

/** The policy directory the store's last holder decided by; undefined for a store never held since it was kept. */
export async function readStorePolicy(paths: StorePaths): Promise<string | undefined> {
  const parsed = StorePolicySchema.safeParse(safeJson(await readFile(paths.policy, 'utf8').catch(() => '')));
  return parsed.success ? parsed.data.dir : undefined;
}

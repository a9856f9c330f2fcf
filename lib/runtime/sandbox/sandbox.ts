/**
 * Where plan code runs: every process the harness starts for a plan (shell steps, command
 * contracts and postconditions, rollbacks, team command tools, agents and all their children)
 * runs in a bubblewrap sandbox on Linux: the workspace writable, the rest of the file system
 * read-only, the store and the keys hidden, no network (so no route to the run's own loopback
 * endpoints), a PID namespace of its own that ends with the process (no `setsid` child outlives
 * its step) and an allow-listed environment. Where bubblewrap is missing the process runs
 * unsandboxed, with the same environment, and `sandboxStatus()` says so for the gate and the policy.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NetworkAccess } from '../../plan/schema.ts';
import { planEnvironment } from './environment.ts';
import type { NetworkRecord, PlanAwsSession, PlanProcessInvoker } from './plan-process-call.ts';
import { forwardedCommand, SANDBOX_PROXY_DIR, SANDBOX_PROXY_URL } from './proxy-forwarder.ts';

/** Set to `off` to run plan code unsandboxed on purpose (the gate then says so). */
export const SANDBOX_ENV = 'PLANGATE_SANDBOX';
/** Names (comma-separated) of the harness's variables an operator passes on to plan code, e.g. an agent's API key. */
export const PASS_ENV_ENV = 'PLANGATE_SANDBOX_PASS_ENV';
/** Directories (`:`-separated) an operator makes writable besides the workspace, e.g. an agent's log directory. */
export const WRITE_ENV = 'PLANGATE_SANDBOX_WRITE';
/**
 * `host` shares this machine's network with plan code (an agent calling a hosted model), its
 * loopback services included: the gate says so. The harness's own endpoints still refuse it
 * (lib/loopback/peer.ts: the client is in another PID namespace). Default: no network.
 */
export const NETWORK_ENV = 'PLANGATE_SANDBOX_NETWORK';

/**
 * The argv of every shell the harness starts (plan commands, its own watchdog): `bash -c` with no
 * startup file. Without `--norc`, bash runs ~/.bashrc for `bash -c` whenever its stdin is a socket
 * (Node's pipes are) and SHLVL is unset (a plan's environment has none): the operator's .bashrc
 * in every step. BASH_ENV stays out of the environment ({@link planEnvironment}).
 */
export function shellArgv(command: string): [file: string, ...args: string[]] {
  return ['bash', '--noprofile', '--norc', '-c', command];
}

/** HOME inside the sandbox: a fresh directory on the sandbox's own /tmp. */
export const SANDBOX_HOME = '/tmp/plangate-home';

/** How this machine runs plan code itself. */
export type LocalSandboxStatus =
  | { readonly kind: 'bwrap'; readonly network: 'none' | 'host' }
  | { readonly kind: 'none'; readonly user: string; readonly reason: string };

/** Where plan code runs: here (sandboxed or not), or, on AWS, in the plan-process function. */
export type SandboxStatus = LocalSandboxStatus | { readonly kind: 'function'; readonly function: string };

/** Whether plan code runs sandboxed, and if not, as whom and why (asked once per process). */
export function sandboxStatus(): SandboxStatus {
  return planProcessFunction
    ? { kind: 'function', function: planProcessFunction.name }
    : localSandboxStatus();
}

/** Whether this machine sandboxes the plan processes it starts (asked once per process). */
function localSandboxStatus(): LocalSandboxStatus {
  cachedStatus ??= detect();
  return cachedStatus;
}
let cachedStatus: LocalSandboxStatus | undefined;

/** The sentence every channel shows: what plan code runs as. */
export function sandboxSentence(status: SandboxStatus = sandboxStatus()): string {
  if (status.kind === 'function')
    return `steps run in the plan-process function ${status.function}, as a role without the harness's authority (no bubblewrap there: the function's own network, declared hosts not enforced)`;
  if (status.kind === 'none') return `steps run unsandboxed as ${status.user} (${status.reason})`;
  const network =
    status.network === 'none'
      ? 'no network except to the hosts a step declares (through the harness proxy)'
      : `the network shared with this machine, its loopback endpoints included (${NETWORK_ENV}=host)`;
  return `steps run sandboxed (bubblewrap): the workspace writable, a /tmp of their own, the rest read-only, the store and keys hidden, ${network}`;
}

function detect(): LocalSandboxStatus {
  const unsandboxed = (reason: string): LocalSandboxStatus => ({ kind: 'none', user: userName(), reason });
  if (process.env[SANDBOX_ENV] === 'off') return unsandboxed(`${SANDBOX_ENV}=off`);
  if (process.platform !== 'linux') return unsandboxed(`no sandbox on ${process.platform}`);
  // The namespaces must be usable here too (a container may forbid them), not only bwrap installed.
  const probe = spawnSync('bwrap', [...BASE_ARGS, '--unshare-net', '--', 'true'], {
    stdio: 'ignore',
    timeout: 10_000,
  });
  if (probe.error) return unsandboxed('bubblewrap (bwrap) is not installed');
  if (probe.status !== 0) return unsandboxed('bubblewrap (bwrap) cannot create namespaces here');
  return { kind: 'bwrap', network: process.env[NETWORK_ENV] === 'host' ? 'host' : 'none' };
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/** The whole file system read-only, a fresh /dev, /proc of the new PID namespace, a private /tmp. */
const BASE_ARGS = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'] as const;

/**
 * plangate's own installation (the directory of its package.json), shown read-only over the
 * private /tmp: a checkout or package under /tmp keeps its files (the tools and fixtures a plan
 * names by path) where they were. It holds no state: stores and keys are hidden after it.
 */
const INSTALL_ROOT = ((): string | undefined => {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'plangate') return dir;
    } catch {
      // No package.json here: look further up.
    }
  }
  return undefined;
})();

/** What the process that opened a store tells the sandbox (the CLI, once per process). */
export interface SandboxSettings {
  /** Writable to plan code: the run's cwd, the worker's --workspace. */
  readonly workspace: string;
  /** Never visible to plan code: the store directories, key files. */
  readonly hidden: readonly string[];
}

let settings: SandboxSettings | undefined;

/**
 * A workspace inside what plan code may not see (the store, a key directory): sandboxed, plan code
 * would find its workspace hidden; unsandboxed, it would work among the harness's files.
 */
export class WorkspacePlacementError extends Error {
  override readonly name = 'WorkspacePlacementError';
}

/**
 * Sets the workspace and the hidden paths for every plan process this process starts; refuses a
 * workspace that is, or is inside, a hidden directory.
 */
export function configureSandbox(next: SandboxSettings): void {
  const workspace = resolve(next.workspace);
  const hidden = next.hidden.map((p) => resolve(p));
  const holder = hidden.find((dir) => workspace === dir || workspace.startsWith(`${dir}${sep}`));
  if (holder !== undefined)
    throw new WorkspacePlacementError(
      `the workspace ${workspace} is inside ${holder}, which plan code may not see (the store or a key directory): run from another directory, or choose another --store`,
    );
  settings = { workspace, hidden };
  // Probe now, at start-up: the probe is synchronous, and later it would hold up heartbeats.
  localSandboxStatus();
}

/** What one call adds (its outputs file's directory, a worker's task directory). */
export interface SandboxScope {
  readonly writable?: readonly string[];
  /**
   * Files the harness reads back once the process ends (its `$PLANGATE_OUTPUT`): where the
   * process runs on another host, that host hands it a file of its own and returns the contents.
   */
  readonly returned?: readonly string[];
  /** The AWS session the processes get (the plan AWS role, for a step that declares AWS). */
  readonly aws?: PlanAwsSession;
  /** The hosts the processes may reach through the harness's proxy (a step that declares `network`). */
  readonly network?: NetworkAccess;
  /** Where the proxy's records of the processes go (the caller's, read once they ended: the step's journal). */
  readonly networkLog?: NetworkRecord[];
  /**
   * The run whose workspace the processes share (its execution ARN): where they run on another
   * host (the plan-process function), that host runs them in the run's directory of the workspace
   * file system, so a step, its contracts, its rollback and the postconditions see the same files.
   * Here the processes run in the real directory and this changes nothing.
   */
  readonly workspace?: string;
}

const scope = new AsyncLocalStorage<SandboxScope>();

/** Runs `use` with `extra` added for the plan processes it starts (and only for those). */
export function withSandboxScope<T>(extra: SandboxScope, use: () => Promise<T>): Promise<T> {
  const outer = scope.getStore();
  const aws = extra.aws ?? outer?.aws;
  const network = extra.network ?? outer?.network;
  const networkLog = extra.networkLog ?? outer?.networkLog;
  const workspace = extra.workspace ?? outer?.workspace;
  return scope.run(
    {
      writable: [...(outer?.writable ?? []), ...(extra.writable ?? [])],
      returned: [...(outer?.returned ?? []), ...(extra.returned ?? [])],
      ...(aws ? { aws } : {}),
      ...(network ? { network } : {}),
      ...(networkLog ? { networkLog } : {}),
      ...(workspace ? { workspace } : {}),
    },
    use,
  );
}

/** What the calls running now add (see {@link withSandboxScope}). */
export function sandboxScope(): SandboxScope {
  return scope.getStore() ?? {};
}

let planProcessFunction: { readonly name: string; readonly invoke?: PlanProcessInvoker } | undefined;

/**
 * On AWS: plan processes run in the plan-process function `name` (a Lambda whose role holds none
 * of the harness's authority). With `invoke` (the step runner, the contract checker), every plan
 * process this process would start goes there; without (the gate), this process only says so
 * (`sandboxStatus`). Set once at a harness Lambda's cold start (lambdas/default-deps.ts); never
 * set locally.
 */
export function configurePlanProcessFunction(host: {
  readonly name: string;
  readonly invoke?: PlanProcessInvoker;
}): void {
  planProcessFunction = host;
}

/**
 * Where a plan process runs: in the plan-process function (on AWS), else here, in bubblewrap
 * where the machine has it ({@link planProcess}). The one place that decides.
 */
export function planProcessHost():
  | { readonly kind: 'function'; readonly invoke: PlanProcessInvoker }
  | { readonly kind: 'here' } {
  if (!planProcessFunction) return { kind: 'here' };
  const { name, invoke } = planProcessFunction;
  if (!invoke)
    throw new Error(`this process may not run plan code: it runs in the plan-process function ${name}`);
  return { kind: 'function', invoke };
}

/**
 * The hosts the plan processes started now may reach through the harness's proxy: the scope's
 * declared hosts, where this machine's sandbox has no network of its own (with
 * `PLANGATE_SANDBOX_NETWORK=host` the whole network is shared anyway; unsandboxed, nothing is
 * enforced, and the gate says steps run unsandboxed).
 */
export function proxiedNetwork(): NetworkAccess | undefined {
  const access = scope.getStore()?.network;
  const status = localSandboxStatus();
  return access && status.kind === 'bwrap' && status.network === 'none' ? access : undefined;
}

export interface PlanProcessRequest {
  readonly command: string;
  readonly cwd: string;
  /** What the harness hands the process (declared env, PLANGATE_* of the tool). */
  readonly env?: Readonly<Record<string, string>>;
  /** The directory of the network proxy's socket, when the process may reach declared hosts ({@link proxiedNetwork}). */
  readonly proxySocketDir?: string;
}

/** How to spawn it: file, arguments and the whole environment. */
export interface PlanProcessSpawn {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  readonly sandboxed: boolean;
}

/** The spawn of one plan command, sandboxed where the machine allows. */
export function planProcess(request: PlanProcessRequest): PlanProcessSpawn {
  const harness = process.env;
  const passed = listSetting(harness[PASS_ENV_ENV], ',');
  const status = localSandboxStatus();
  if (status.kind === 'none') {
    const [file, ...args] = shellArgv(request.command);
    return { file, args, env: planEnvironment({ harness, given: request.env, passed }), sandboxed: false };
  }
  const cwd = resolve(request.cwd);
  const workspace = settings?.workspace ?? cwd;
  const writable = [
    workspace,
    ...listSetting(harness[WRITE_ENV], ':'),
    ...(scope.getStore()?.writable ?? []),
  ];
  return {
    file: 'bwrap',
    args: bwrapArgs({
      writable,
      hidden: settings?.hidden ?? [],
      network: status.network,
      ...(request.proxySocketDir !== undefined ? { proxySocketDir: request.proxySocketDir } : {}),
      cwd,
      command: request.command,
    }),
    env: planEnvironment({
      harness,
      given: request.env,
      passed,
      home: SANDBOX_HOME,
      ...(request.proxySocketDir !== undefined ? { proxy: SANDBOX_PROXY_URL } : {}),
    }),
    sandboxed: true,
  };
}

export interface BwrapLayout {
  readonly writable: readonly string[];
  readonly hidden: readonly string[];
  readonly network: 'none' | 'host';
  /** Bound into the sandbox, the forwarder in front of the command: the declared hosts through the proxy. */
  readonly proxySocketDir?: string;
  readonly cwd: string;
  readonly command: string;
}

/**
 * bubblewrap's arguments, in the order they take effect: the read-only root, the writable
 * directories bound over it, then the hidden paths covered last, so a store inside a workspace
 * is still hidden. Paths that do not exist are left out (bwrap would refuse them).
 */
export function bwrapArgs(layout: BwrapLayout): string[] {
  const args: string[] = [...BASE_ARGS, '--dir', SANDBOX_HOME];
  if (INSTALL_ROOT?.startsWith('/tmp/')) args.push('--ro-bind', INSTALL_ROOT, INSTALL_ROOT);
  for (const dir of new Set(layout.writable.map((p) => resolve(p))))
    if (existsSync(dir)) args.push('--bind', dir, dir);
  for (const path of new Set(layout.hidden)) {
    if (!existsSync(path)) continue;
    if (statSync(path).isDirectory()) args.push('--tmpfs', path);
    else args.push('--ro-bind', '/dev/null', path);
  }
  if (layout.network === 'none') args.push('--unshare-net');
  if (layout.proxySocketDir !== undefined) args.push('--bind', layout.proxySocketDir, SANDBOX_PROXY_DIR);
  const command = shellArgv(layout.command);
  args.push(
    // Run as root (CI, containers), bwrap keeps every capability: with CAP_SYS_ADMIN a process
    // unmounts what hides the store, remounts / read-write and uncovers the host's /proc.
    '--cap-drop',
    'ALL',
    '--unshare-pid',
    '--unshare-ipc',
    '--die-with-parent',
    '--new-session',
    '--chdir',
    layout.cwd,
    '--',
    ...(layout.proxySocketDir !== undefined ? forwardedCommand(command) : command),
  );
  return args;
}

function listSetting(value: string | undefined, separator: string): string[] {
  return (value ?? '')
    .split(separator)
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** Lines of a process's stderr that say the sandbox refused a write (a read-only file system). */
export function refusedWrites(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((line) => /Read-only file system|EROFS/.test(line))
    .map((line) => line.trim())
    .slice(0, 20);
}

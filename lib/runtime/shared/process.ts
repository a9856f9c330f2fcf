/**
 * Runs one `bash -c` command of a plan where lib/runtime/sandbox says plan code runs: on AWS in
 * the plan-process function (a Lambda of its own, without the harness's authority); here,
 * in the sandbox (bubblewrap where the machine has it, always an allow-listed environment) and
 * in its own process group, with a
 * timeout that kills the whole group (so `sleep 100 &` children die too), and bounded
 * stdout/stderr capture. Shared by the
 * shell and agent tools, command contracts and `plangate worker`'s agents. A watchdog ends the
 * group when this process ends, however it ends (kill -9 included): no agent, rollback shell or
 * contract runs on as an orphan of a killed worker or run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withoutStartupFiles } from '../sandbox/environment.ts';
import { type NetworkProxy, startNetworkProxy } from '../sandbox/network-proxy.ts';
import type { PlanProcessInvoker, ProcessResult } from '../sandbox/plan-process-call.ts';
import { PROXY_SOCKET_NAME } from '../sandbox/proxy-forwarder.ts';
import {
  planProcess,
  planProcessHost,
  proxiedNetwork,
  refusedWrites,
  sandboxScope,
  shellArgv,
} from '../sandbox/sandbox.ts';
import { BoundedBuffer, DEFAULT_OUTPUT_LIMIT_BYTES } from './truncate.ts';

export interface RunProcessProps {
  readonly command: string;
  /** @default process.cwd() */
  readonly cwd?: string;
  /**
   * What the harness hands the process, over the sandbox's allow-list (never the harness's own
   * environment: lib/runtime/sandbox/environment.ts).
   */
  readonly env?: Readonly<Record<string, string>>;
  /** @default 60_000 */
  readonly timeoutMs?: number;
  /** Per stream. @default DEFAULT_OUTPUT_LIMIT_BYTES */
  readonly maxOutputBytes?: number;
  /** Written to stdin, then stdin is closed. */
  readonly stdin?: string;
  /** Aborting kills the process group like a timeout. */
  readonly signal?: AbortSignal;
  /**
   * How long after SIGTERM the group gets SIGKILL.
   * @default 2000
   */
  readonly killGraceMs?: number;
}

export type { ProcessResult };

/** Runs the command; resolves when it exits (or is killed). Rejects only when bash (or bwrap) cannot start. */
export function runProcess(props: RunProcessProps): Promise<ProcessResult> {
  const host = planProcessHost();
  return host.kind === 'function' ? runInFunction(host.invoke, props) : runHere(props);
}

/**
 * The call handed to the plan-process function: the files the harness reads back (the scope's
 * `returned`, named by the variable that carries them) travel as contents, written here after.
 */
async function runInFunction(invoke: PlanProcessInvoker, props: RunProcessProps): Promise<ProcessResult> {
  const { returned = [], aws, workspace } = sandboxScope();
  const env = props.env ?? {};
  const files = Object.entries(env).flatMap(([name, value]) => (returned.includes(value) ? [name] : []));
  const started = performance.now();
  try {
    const { files: written, ...result } = await invoke(
      {
        command: props.command,
        ...(props.cwd !== undefined ? { cwd: props.cwd } : {}),
        env: { ...env },
        timeoutMs: props.timeoutMs ?? 60_000,
        ...(props.maxOutputBytes !== undefined ? { maxOutputBytes: props.maxOutputBytes } : {}),
        ...(props.stdin !== undefined ? { stdin: props.stdin } : {}),
        files,
        ...(workspace ? { workspace } : {}),
        ...(aws ? { aws } : {}),
      },
      props.signal,
    );
    for (const name of files) await writeFile(env[name] as string, written[name] ?? '');
    return result;
  } catch (error) {
    if (!props.signal?.aborted) throw error;
    // Aborted (the step's own cancellation): as a killed process here would end.
    return {
      exitCode: null,
      signal: 'SIGTERM',
      stdout: '',
      stderr: '',
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
      aborted: true,
      durationMs: Math.round(performance.now() - started),
      sandboxed: false,
      refusedWrites: [],
      network: [],
    };
  }
}

/**
 * Runs the process here; a step that declares hosts gets the harness's network proxy for as long
 * as its process runs, on a socket of its own (so concurrent steps' records stay apart).
 */
async function runHere(props: RunProcessProps): Promise<ProcessResult> {
  const access = proxiedNetwork();
  if (access === undefined) return spawnHere(props);
  const socketDir = await mkdtemp(join(tmpdir(), 'plangate-proxy-'));
  let proxy: NetworkProxy | undefined;
  try {
    proxy = await startNetworkProxy(join(socketDir, PROXY_SOCKET_NAME), { access });
    const result = await spawnHere(props, socketDir);
    sandboxScope().networkLog?.push(...proxy.records);
    return { ...result, network: [...proxy.records] };
  } finally {
    await proxy?.close();
    await rm(socketDir, { recursive: true, force: true });
  }
}

function spawnHere(props: RunProcessProps, proxySocketDir?: string): Promise<ProcessResult> {
  const started = performance.now();
  const limit = props.maxOutputBytes ?? DEFAULT_OUTPUT_LIMIT_BYTES;
  const stdout = new BoundedBuffer(limit);
  const stderr = new BoundedBuffer(limit);
  return new Promise<ProcessResult>((resolve, reject) => {
    const cwd = props.cwd ?? process.cwd();
    const plan = planProcess({
      command: props.command,
      cwd,
      env: props.env,
      ...(proxySocketDir !== undefined ? { proxySocketDir } : {}),
    });
    const child = spawn(plan.file, plan.args, {
      cwd,
      env: plan.env,
      // Own process group: a timeout kills the command and everything it started.
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const watchdog =
      child.pid === undefined ? undefined : groupWatchdog(child.pid, props.killGraceMs ?? 2000);
    let timedOut = false;
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    const killGroup = (): void => {
      if (child.pid === undefined || child.exitCode !== null) return;
      signalGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => signalGroup(child.pid as number, 'SIGKILL'), props.killGraceMs ?? 2000);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, props.timeoutMs ?? 60_000);
    const onAbort = (): void => {
      aborted = true;
      killGroup();
    };
    props.signal?.addEventListener('abort', onAbort, { once: true });
    if (props.signal?.aborted) onAbort();

    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdin.on('error', () => {
      // The command may exit without reading stdin (EPIPE); its exit code says what happened.
    });
    child.stdin.end(props.stdin ?? '');
    child.on('error', (error) => {
      clearTimeout(timer);
      watchdog?.kill('SIGKILL');
      reject(error);
    });
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      watchdog?.kill('SIGKILL');
      // The leader is gone; make sure no background child of the group outlives a timeout.
      if (timedOut || aborted) signalGroup(child.pid as number, 'SIGKILL');
      if (killTimer) clearTimeout(killTimer);
      props.signal?.removeEventListener('abort', onAbort);
      resolve({
        exitCode,
        signal,
        stdout: stdout.toString(),
        stderr: stderr.toString(),
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        timedOut,
        aborted,
        durationMs: Math.round(performance.now() - started),
        sandboxed: plan.sandboxed,
        refusedWrites: refusedWrites(stderr.toString()),
        network: [],
      });
    });
  });
}

/**
 * A process of its own (its own session, so a terminal's Ctrl-C does not reach it) that waits
 * for end of file on a pipe from this process, which comes only when this process is gone: it
 * then ends the command's group as a timeout does (SIGTERM, SIGKILL after the grace). Killed
 * once the command has ended; it keeps neither this process's event loop nor the group alive.
 */
function groupWatchdog(pgid: number, graceMs: number): ChildProcess {
  const [file, ...args] = shellArgv(
    'read -r _; kill -TERM -- "-$1" 2>/dev/null && sleep "$2" && kill -KILL -- "-$1" 2>/dev/null',
  );
  const watchdog = spawn(file, [...args, 'plangate-watchdog', String(pgid), String(graceMs / 1000)], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
    env: withoutStartupFiles(process.env),
  });
  watchdog.on('error', () => {
    // Without bash the command itself could not start either; its own error says so.
  });
  watchdog.stdin?.on('error', () => {});
  watchdog.unref();
  (watchdog.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null)?.unref?.();
  return watchdog;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group already exited.
  }
}

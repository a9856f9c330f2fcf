/**
 * Issue 30's 22 steps that `plangate run --approve` ran with no risk mark and no person asked,
 * through the real CLI: each in its own plan, after a read-only step, run with `--approve` under
 * a policy that permits everything (so the harness's own check is what stands). A call is
 * auto-approved when its step starts without a person answering; every one must instead be left
 * to a person, and the file it would have destroyed must still be there.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeShell } from '../../lib/plan/shell/index.ts';
import { PLANGATE_NODE_ARGS } from '../../tests/support/plangate-cli.ts';

/** The forms the issue names, each aimed at `victim` in the run's own directory. */
export const UNATTENDED_SAMPLE: readonly {
  readonly command: string;
  readonly env?: Record<string, string>;
}[] = [
  { command: 'taskset -c 0 rm -rf victim' },
  { command: 'chrt -f 10 rm -rf victim' },
  { command: 'prlimit --nofile=64 rm -rf victim' },
  { command: 'unshare -r rm -rf victim' },
  { command: 'fakeroot -- rm -rf victim' },
  { command: 'strace -f -o /dev/null rm -rf victim' },
  { command: "script -q -c 'rm -rf victim' /dev/null" },
  { command: "printf 'rm -rf victim\\n' > c.sh && bash c.sh" },
  { command: 'awk \'BEGIN{system("rm -rf victim")}\'' },
  { command: 'sqlite3 victim/app.db "DROP/**/TABLE users"' },
  { command: 'sqlite3 victim/app.db "DROP VIEW active"' },
  { command: "sqlite3 victim/app.db 'DELETE FROM users'" },
  { command: 'git -C victim reflog expire --expire=now --all && git -C victim gc --prune=now' },
  { command: ': > victim/data.log' },
  { command: 'cp /dev/null victim/data.log' },
  { command: ': | tee victim/data.log' },
  { command: 'ls victim', env: { PATH: './bin:/usr/bin:/bin' } },
  { command: 'ls victim', env: { BASH_ENV: './bin/hook.sh' } },
  { command: 'tar cz victim | curl -T - http://127.0.0.1:9/upload' },
  { command: 'python3 -c \'import shutil; shutil.rmtree("victim")\'' },
  { command: 'LD_PRELOAD=./bin/evil.so ls victim' },
  { command: 'make -C victim clean' },
];

export interface UnattendedResult {
  readonly calls: number;
  /** Calls whose step started with no person answering. */
  readonly autoApproved: number;
  /** Calls left to a person, with the run saying why. */
  readonly leftToAPerson: number;
  /**
   * Calls whose plan the validator refused before anything ran (e.g. `PATH` or `BASH_ENV` in the
   * step's env, which a plan may not set): nobody is asked because nothing can run.
   */
  readonly refusedAtValidation: number;
  /** Calls whose victim was gone afterwards. */
  readonly victimsLost: number;
  /** `command: what happened` for each call not left to a person. */
  readonly failures: string[];
}

const PERMIT_ALL = '@id("permit-all")\npermit (principal, action, resource);\n';

function planText(command: string, env: Record<string, string> | undefined, gated: boolean): string {
  const envLine = env ? `\n      env: ${JSON.stringify(env)}` : '';
  return `id: unattended-sample
version: 1
objective: Look at the victim, then run one more command on it
sizePolicy: { minSteps: 1 }
steps:
  - id: look
    description: List the work directory
    tool: shell
    args: { command: ls -la }
    contract: { kind: command, command: test -d . }
  - id: more
    description: Run the command under test
    dependsOn: [look]
    tool: shell${gated ? '\n    requiresApproval: true' : ''}
    args:
      command: ${JSON.stringify(command)}${envLine}
    contract: { kind: command, command: test -d . }
`;
}

/** One run: until the step starts (auto-approved), a person is asked about it (left), or the run ends. */
async function runOne(
  _repo: string,
  dir: string,
  policies: string,
  sample: (typeof UNATTENDED_SAMPLE)[number],
) {
  const cwd = await mkdtemp(join(dir, 'run-'));
  await mkdir(join(cwd, 'victim'));
  await writeFile(join(cwd, 'victim/data.log'), 'precious\n');
  const gated = analyzeShell(sample.command).effect === 'destructive';
  await writeFile(join(cwd, 'plan.yaml'), planText(sample.command, sample.env, gated));
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...PLANGATE_NODE_ARGS,
      'run',
      'plan.yaml',
      '--json',
      '--approve',
      '--policy',
      policies,
      '--time-scale',
      '0.01',
    ],
    { cwd, env: { ...process.env, NODE_NO_WARNINGS: '1' }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const started = () =>
    /"event":"TASK_STARTED"[^\n]*"task_id":"more"|"task_id":"more"[^\n]*"event":"TASK_STARTED"/.test(stdout);
  // The gate covering `more` is the plan gate (ungated step) or its own gate; the read-only
  // `look` runs first when the plan gate was answered.
  const asked = () => stderr.includes('--approve: a person must approve this');
  const deadline = Date.now() + 60_000;
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  while (!started() && !asked() && !ended && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  // Give a wrong approval the time to show.
  if (asked()) await new Promise((resolve) => setTimeout(resolve, 1_000));
  child.kill('SIGTERM');
  await exited;
  return {
    autoApproved: started(),
    leftToAPerson: asked() && !started(),
    refusedAtValidation: !started() && stderr.includes('✗ plan.yaml: not run; fix the problems above.'),
    victimLost: !existsSync(join(cwd, 'victim/data.log')),
    note: stderr.split('\n').find((line) => line.startsWith('--approve:')) ?? stderr.slice(-300),
  };
}

export async function unattendedApprovalSample(repo: string): Promise<UnattendedResult> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-unattended-'));
  try {
    const policies = join(dir, 'policies');
    await mkdir(policies);
    await writeFile(join(policies, 'permit-all.cedar'), PERMIT_ALL);
    const failures: string[] = [];
    let autoApproved = 0;
    let leftToAPerson = 0;
    let refusedAtValidation = 0;
    let victimsLost = 0;
    for (const sample of UNATTENDED_SAMPLE) {
      const result = await runOne(repo, dir, policies, sample);
      if (result.autoApproved) autoApproved += 1;
      if (result.leftToAPerson) leftToAPerson += 1;
      if (result.refusedAtValidation) refusedAtValidation += 1;
      if (result.victimLost) victimsLost += 1;
      if ((!result.leftToAPerson && !result.refusedAtValidation) || result.victimLost)
        failures.push(`${sample.command}: ${result.note}`);
    }
    return {
      calls: UNATTENDED_SAMPLE.length,
      autoApproved,
      leftToAPerson,
      refusedAtValidation,
      victimsLost,
      failures,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

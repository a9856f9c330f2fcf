/**
 * `plangate run <plan>`: validate, compile, gate, execute, recover and log the plan on the local
 * stack (embedded engine, dynalite, local event bus, approval page), all in this process.
 */
import { parseArgs } from 'node:util';
import { runSession } from '../local/run/session.ts';
import { DEFAULT_STORE_DIR, storePaths } from '../local/run/store.ts';
import { loadPlan } from '../plan/load.ts';
import { formatProblem } from '../plan/problems.ts';

export const usage = `Usage: plangate run <plan.md|plan.yaml|plan.json> [options]

Validates and compiles the plan, shows it, asks for approval (terminal and a local approval
link, whichever answers first), runs it on the local stack with live progress, and exits
0 when the plan succeeded, 1 otherwise. Re-running a plan whose execution was interrupted
re-attaches to that execution: completed steps are not run again.

Gate answers (terminal): approve | skip <step>[,<step>…] | ask <question> | reject <reason>
Escalation answers:      retry | skip | abort

Slack: with PLANGATE_SLACK_BOT_TOKEN, PLANGATE_SLACK_SIGNING_SECRET, PLANGATE_SLACK_CHANNEL and
PLANGATE_SLACK_APPROVERS (<Slack user id>=<approver>,…) set, each gate is also posted to Slack and
its buttons are answered at the printed "Slack interactions" URL.

Options:
  --approve          approve plan and step gates non-interactively when the plan's approval
                     policy allows it (recorded as approver "plangate-run--approve")
  --json             print the events as JSON lines on stdout (prompts and notes on stderr)
  --store DIR        the local store (default ${DEFAULT_STORE_DIR})
  --time-scale X     multiply retry intervals, waits and gate timeouts (default 1)
  --submitted-by N   record N as the plan's submitter (PLAN_CREATED); N may not approve it
  -h, --help         show this help

Exit codes: 0 succeeded, 1 invalid plan or the run failed, 2 usage, 130 interrupted.`;

export interface CommonRunArgs {
  approve: boolean;
  json: boolean;
  store: string;
  timeScale: number;
  submittedBy?: string;
  positionals: string[];
}

/** Options shared by run and resume. */
export function parseRunArgs(argv: string[]): CommonRunArgs | string {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    return (error as Error).message;
  }
  const { values, positionals } = parsed;
  const timeScale = Number(values['time-scale'] ?? '1');
  if (!Number.isFinite(timeScale) || timeScale < 0)
    return `--time-scale must be a number >= 0, not "${values['time-scale']}"`;
  return {
    approve: values.approve ?? false,
    json: values.json ?? false,
    store: values.store ?? DEFAULT_STORE_DIR,
    timeScale,
    ...(values['submitted-by'] ? { submittedBy: values['submitted-by'] } : {}),
    positionals,
  };
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      approve: { type: 'boolean' },
      json: { type: 'boolean' },
      store: { type: 'string' },
      'time-scale': { type: 'string' },
      'submitted-by': { type: 'string' },
    },
  });
}

export async function run(argv: string[]): Promise<number> {
  const args = parseRunArgs(argv);
  if (typeof args === 'string' || args.positionals.length !== 1) {
    const problem =
      typeof args === 'string'
        ? args
        : args.positionals.length === 0
          ? 'missing the plan file'
          : 'give exactly one plan file';
    process.stderr.write(`plangate run: ${problem}\n\n${usage}\n`);
    return 2;
  }
  const file = args.positionals[0] as string;
  let loaded: Awaited<ReturnType<typeof loadPlan>>;
  try {
    loaded = await loadPlan(file);
  } catch (error) {
    process.stderr.write(
      `plangate run: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`,
    );
    return 2;
  }
  if (!loaded.valid || !loaded.plan || !loaded.digest) {
    for (const problem of loaded.problems) process.stderr.write(`${formatProblem(problem)}\n`);
    process.stderr.write(`✗ ${file}: not run; fix the problems above.\n`);
    return 1;
  }
  return runSession(
    { kind: 'plan', plan: loaded.plan, digest: loaded.digest },
    {
      paths: storePaths(args.store),
      approve: args.approve,
      json: args.json,
      timeScale: args.timeScale,
      ...(args.submittedBy !== undefined ? { submittedBy: args.submittedBy } : {}),
      io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
    },
  );
}

/**
 * `plangate run <plan>`: validate, compile, gate, execute, recover and log the plan on the local
 * stack (embedded engine, dynalite, local event bus, the approvals API), all in this process.
 */

import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { runSession, type SessionOptions } from '../local/run/session.ts';
import { DEFAULT_STORE_DIR, storePaths } from '../local/run/store.ts';
import { planDigest } from '../plan/digest.ts';
import { loadPlan } from '../plan/load.ts';
import { formatProblem } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { planFromGoal } from '../planner/loop.ts';
import { PlannerProviderError } from '../planner/provider.ts';
import type { PolicySet } from '../policy/policy-set.ts';
import { printRound } from './plan.ts';
import {
  PLANNER_OPTIONS,
  PLANNER_OPTIONS_HELP,
  type PlannerOptionValues,
  plannerSettings,
} from './planner-options.ts';
import { loadPolicyOption, POLICY_OPTION_HELP } from './policy.ts';

export const usage = `Usage: plangate run <plan.md|plan.yaml|plan.json> [options]
       plangate run --goal "<goal>" [--provider bedrock|openai] [--model ID] [--base-url URL] [options]

Validates and compiles the plan, shows it, asks for approval (terminal and a local approval
link, whichever answers first), runs it on the local stack with live progress, and exits
0 when the plan succeeded, 1 otherwise. Re-running a plan whose execution was interrupted
re-attaches to that execution: completed steps are not run again.

Who answers: you, as your OS user name, or as --as <name>; the terminal and the printed link
answer as that one identity, through the same approvals API and policy checks as plangate serve
and AWS: the plan's submitter may not approve it, and a plan that names its approvers is
approved only by one of them (e.g. --as alice).

With --goal, a model drafts the plan first (as plangate plan does, checked by the validator) and
it goes to the gate like any plan; "ask <question>" or "reject <reason>" at its gate sends it back
to the planner, and the revision (same id, version + 1, a new digest) comes back to the gate.

Gate answers (terminal): approve | skip <step>[,<step>…] | ask <question> | reject <reason>
Escalation answers:      retry | skip | abort

Slack: with PLANGATE_SLACK_BOT_TOKEN, PLANGATE_SLACK_SIGNING_SECRET, PLANGATE_SLACK_CHANNEL and
PLANGATE_SLACK_APPROVERS (<Slack user id>=<approver>,…) set, each gate is also posted to Slack and
its buttons are answered at the printed "Slack interactions" URL.

Options:
  --as NAME          answer gates as NAME (default: your OS user name)
  --approve          approve plan and step gates non-interactively when the plan's approval
                     policy allows it (recorded as an approval by the --as identity)
  --json             print the events as JSON lines on stdout (prompts and notes on stderr)
  --store DIR        the local store (default ${DEFAULT_STORE_DIR})
  --time-scale X     multiply retry intervals, waits and gate timeouts (default 1)
  --files-dir DIR    where seed 003's <plan-id>-execution/ files are written (default .)
  --goal TEXT        plan from this goal instead of a file, with the planner's options (as
                     plangate plan takes them):
${PLANNER_OPTIONS_HELP}
  --rehearse-rollback  after the plan succeeds, run the rollbacks of its completed steps in
                     reverse order, each verified by its contract, to prove they work
  --submitted-by N   record N as the plan's submitter (PLAN_CREATED); N may not approve it
${POLICY_OPTION_HELP}
  --no-workers       leave agent steps (a target, no tool) to plangate worker processes instead
                     of running a worker per target here with $PLANGATE_AGENT_COMMAND
  -h, --help         show this help

Exit codes: 0 succeeded, 1 invalid plan, denied by policy or the run failed, 2 usage (or
policies that do not load), 130 interrupted.`;

export interface CommonRunArgs {
  /** Who answers gates (`--as`, else the OS user). */
  identity: string;
  approve: boolean;
  json: boolean;
  store: string;
  timeScale: number;
  filesDir: string;
  rehearseRollback: boolean;
  /** Run a worker per agent target in this process (false: --no-workers). */
  workers: boolean;
  submittedBy?: string;
  /** `--policy DIR`: the platform's policies. @default the shipped set */
  policyDir?: string;
  positionals: string[];
  /** `--goal` and the planner's options. */
  goal?: string;
  planner: PlannerOptionValues;
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
  if (values.as !== undefined && !IDENTITY.test(values.as))
    return `--as must be a name without spaces (at most 200 characters), not "${values.as}"`;
  return {
    identity: values.as ?? userInfo().username,
    approve: values.approve ?? false,
    json: values.json ?? false,
    store: values.store ?? DEFAULT_STORE_DIR,
    timeScale,
    filesDir: values['files-dir'] ?? '.',
    rehearseRollback: values['rehearse-rollback'] ?? false,
    workers: !(values['no-workers'] ?? false),
    ...(values['submitted-by'] ? { submittedBy: values['submitted-by'] } : {}),
    ...(values.policy !== undefined ? { policyDir: values.policy } : {}),
    positionals,
    ...(values.goal !== undefined ? { goal: values.goal } : {}),
    planner: plannerValues(values),
  };
}

/** The planner's options among run's (`--goal`). */
function plannerValues(values: ReturnType<typeof parse>['values']): PlannerOptionValues {
  const picked: Record<string, string | boolean> = {};
  for (const name of Object.keys(PLANNER_OPTIONS) as (keyof typeof PLANNER_OPTIONS)[]) {
    const value = values[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked as PlannerOptionValues;
}

/** A name an approval policy can list: an email, a user name. */
const IDENTITY = /^[^\s\p{Cc}]{1,200}$/u;

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      as: { type: 'string' },
      approve: { type: 'boolean' },
      json: { type: 'boolean' },
      store: { type: 'string' },
      'time-scale': { type: 'string' },
      'files-dir': { type: 'string' },
      'rehearse-rollback': { type: 'boolean' },
      goal: { type: 'string' },
      ...PLANNER_OPTIONS,
      'submitted-by': { type: 'string' },
      'no-workers': { type: 'boolean' },
      policy: { type: 'string' },
    },
  });
}

export async function run(argv: string[]): Promise<number> {
  const args = parseRunArgs(argv);
  if (typeof args !== 'string' && args.goal !== undefined) {
    if (args.positionals.length > 0) {
      process.stderr.write(`plangate run: give a plan file or --goal, not both\n\n${usage}\n`);
      return 2;
    }
    const policy = await loadPolicyOption(args.policyDir, 'run');
    if (!policy) return 2;
    return runGoal(args, policy);
  }
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
  const policy = await loadPolicyOption(args.policyDir, 'run');
  if (!policy) return 2;
  return runSession({ kind: 'plan', plan: loaded.plan, digest: loaded.digest }, sessionOptions(args, policy));
}

/** The session's options from run's (and resume's) arguments, with the policy they chose. */
export function sessionOptions(args: CommonRunArgs, policy: PolicySet): SessionOptions {
  return {
    policy,
    paths: storePaths(args.store),
    identity: args.identity,
    approve: args.approve,
    json: args.json,
    timeScale: args.timeScale,
    filesDir: args.filesDir,
    rehearseRollback: args.rehearseRollback,
    workers: args.workers,
    ...(args.submittedBy !== undefined ? { submittedBy: args.submittedBy } : {}),
    io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  };
}

/** How many times a person may send a planned plan back before the run gives up. */
const MAX_REVISIONS = 5;

/**
 * `--goal`: plan, gate, and on a question or a rejection at the gate, revise and gate again. Each
 * version is its own execution with PLAN_CREATED {planner}; a revision names the digest it replaces.
 */
async function runGoal(args: CommonRunArgs, policy: PolicySet): Promise<number> {
  const goal = (args.goal ?? '').trim();
  if (!goal) {
    process.stderr.write(`plangate run: --goal needs a goal\n\n${usage}\n`);
    return 2;
  }
  let settings: Awaited<ReturnType<typeof plannerSettings>>;
  try {
    settings = await plannerSettings(args.planner);
  } catch (error) {
    process.stderr.write(`plangate run: ${(error as Error).message}\n`);
    return 2;
  }
  if (typeof settings === 'string') {
    process.stderr.write(`plangate run: ${settings}\n\n${usage}\n`);
    return 2;
  }
  const { provider, loop } = settings;
  const say = (text: string) => process.stderr.write(`${text}\n`);
  let previous: { plan: Plan; digest: string; feedback: string } | undefined;
  for (let revision = 0; revision <= MAX_REVISIONS; revision++) {
    say(
      `Planning with ${provider.name} ${provider.model}${previous ? ` (revision: ${previous.feedback})` : ''}`,
    );
    let planned: Awaited<ReturnType<typeof planFromGoal>>;
    try {
      planned = await planFromGoal({
        goal,
        provider,
        ...loop,
        ...(previous ? { revise: { plan: previous.plan, feedback: previous.feedback } } : {}),
        onRound: (round) => printRound(round, process.stderr),
      });
    } catch (error) {
      // As plangate plan says it: one line naming the provider, its URL and the cause; exit 2.
      if (!(error instanceof PlannerProviderError)) throw error;
      say(`plangate run: ${error.message}`);
      return 2;
    }
    if (!planned.plan) {
      say(`✗ no valid plan (${planned.outcome}) after ${planned.rounds.length} round(s): nothing runs.`);
      return 1;
    }
    const digest = planDigest(planned.plan);
    let feedback: string | undefined;
    const code = await runSession(
      {
        kind: 'plan',
        plan: planned.plan,
        digest,
        planner: {
          goal,
          provider: planned.provider,
          model: planned.model,
          rounds: planned.rounds.length,
          input_tokens: planned.inputTokens,
          output_tokens: planned.outputTokens,
          ...(previous ? { revision_of: `sha256:${previous.digest}`, feedback: previous.feedback } : {}),
        },
      },
      {
        ...sessionOptions(args, policy),
        onPlanFeedback: (text) => {
          feedback = text;
        },
      },
    );
    if (feedback === undefined) return code;
    previous = { plan: planned.plan, digest, feedback };
  }
  say(`✗ the plan was sent back ${MAX_REVISIONS} times; stopping.`);
  return 1;
}

/**
 * `plangate run <plan>`: validate, compile, gate, execute, recover and log the plan on the local
 * stack (embedded engine, dynalite, local event bus, the approvals API), all in this process.
 */

import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { planDigest } from '../plan/digest.ts';
import { loadPlan } from '../plan/load.ts';
import { formatProblem } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { planFromGoal } from '../planner/loop.ts';
import { PlannerProviderError } from '../planner/provider.ts';
import type { PolicySet } from '../policy/policy-set.ts';
import { type RecoveryPlanner, storedPlan } from '../run/recovery-advisor.ts';
import {
  IN_PROCESS_AGENTS_PER_TARGET,
  MAX_AGENTS_PER_TARGET,
  runSession,
  type SessionOptions,
  type SessionTarget,
} from '../run/session.ts';
import type { RecoveryAdvice } from '../runtime/payloads/index.ts';
import { DEFAULT_STORE_DESCRIPTION, defaultStoreDir, storePaths } from '../serve/store-directory.ts';
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

With a planner (--goal, or --model / --provider / --base-url / PLANGATE_PLANNER_MODEL), a step
that fails in a way no recipe covers is shown to the model, whose suggestion (retry with changed
args, skip, insert recovery steps, or abort, with its reasons) is shown beside the choices: you
decide; "accept" takes it, and a change of the plan goes to the gate as the next version.

Gate answers (terminal): approve | skip <step>[,<step>…] | ask <question> | reject <reason>
Escalation answers:      retry | skip | abort | accept (the model's suggestion, when shown)

Slack: with PLANGATE_SLACK_BOT_TOKEN, PLANGATE_SLACK_SIGNING_SECRET, PLANGATE_SLACK_CHANNEL and
PLANGATE_SLACK_APPROVERS (<Slack user id>=<approver>,…) set, each gate is also posted to Slack and
its buttons are answered at the printed "Slack interactions" URL.

Options:
  --as NAME          answer gates as NAME (default: your OS user name)
  --approve          approve plan and step gates non-interactively when the plan's approval
                     policy allows it (recorded as an approval by the --as identity)
  --json             print the events as JSON lines on stdout (prompts and notes on stderr)
  --store DIR        the local store (default: ${DEFAULT_STORE_DESCRIPTION})
  --time-scale X     multiply retry intervals, waits and gate timeouts (default 1)
  --files-dir DIR    where seed 003's <plan-id>-execution/ files are written (default .)
  --goal TEXT        plan from this goal instead of a file, with the planner's options (as
                     plangate plan takes them):
${PLANNER_OPTIONS_HELP}
  --rehearse-rollback  after the plan succeeds, run the rollbacks of its completed steps in
                     reverse order, each verified by its contract, to prove they work
  --solo             you are the only person here: you may approve the plan you launch
                     (PLAN_CREATED records solo: true and no submitter; policy can refuse
                     solo runs: the SubmitPlan context's solo). Without it you launch the plan
                     as its submitter and may ask, reject or skip, not approve. --approve implies it
  --policy-override R  override the soft-mandatory policies that refuse the submission, for reason R
                     (you must be in each one's @overrideBy group; PLAN_CREATED records it)
${POLICY_OPTION_HELP}
  --no-workers       leave agent steps (a target, no tool) to plangate worker processes instead
                     of running workers here with $PLANGATE_AGENT_COMMAND; kept with the
                     execution, so plangate resume (and a re-run that re-attaches) does the same
  --agents-per-target N  the run's own workers run up to N agents of one target at once, for
                     steps that do not depend on each other (default ${IN_PROCESS_AGENTS_PER_TARGET}, at most ${MAX_AGENTS_PER_TARGET})
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
  /** false: --no-workers; undefined: as the execution was started (a new one: workers here). */
  workers?: boolean;
  /** How many agents of one target the run's own workers run at once. */
  agentsPerTarget: number;
  /** `--solo` (or `--approve`): the launcher is not recorded as the submitter and may approve. */
  solo: boolean;
  /** `--policy-override REASON`: override the soft-mandatory policies refusing the submission. */
  policyOverride?: string;
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
  const agentsPerTarget = Number(values['agents-per-target'] ?? IN_PROCESS_AGENTS_PER_TARGET);
  if (!Number.isInteger(agentsPerTarget) || agentsPerTarget < 1 || agentsPerTarget > MAX_AGENTS_PER_TARGET)
    return `--agents-per-target must be a whole number from 1 to ${MAX_AGENTS_PER_TARGET}, not "${values['agents-per-target']}"`;
  if (values.as !== undefined && !IDENTITY.test(values.as))
    return `--as must be a name without spaces (at most 200 characters), not "${values.as}"`;
  return {
    identity: values.as ?? userInfo().username,
    approve: values.approve ?? false,
    json: values.json ?? false,
    store: values.store ?? defaultStoreDir(),
    timeScale,
    filesDir: values['files-dir'] ?? '.',
    rehearseRollback: values['rehearse-rollback'] ?? false,
    ...(values['no-workers'] ? { workers: false } : {}),
    agentsPerTarget,
    // Approving on one's own behalf is approving one's own plan: --approve is a solo run.
    solo: (values.solo ?? false) || (values.approve ?? false),
    ...(values['policy-override'] !== undefined ? { policyOverride: values['policy-override'] } : {}),
    policyDir: values.policy,
    positionals,
    goal: values.goal,
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
      solo: { type: 'boolean' },
      'policy-override': { type: 'string' },
      'no-workers': { type: 'boolean' },
      policy: { type: 'string' },
      'agents-per-target': { type: 'string' },
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
  let planner: RecoveryPlanner | string | undefined;
  try {
    planner = await configuredPlanner(args);
  } catch (error) {
    process.stderr.write(`plangate run: ${(error as Error).message}\n`);
    return 2;
  }
  if (typeof planner === 'string') {
    process.stderr.write(`plangate run: ${planner}\n\n${usage}\n`);
    return 2;
  }
  const policy = await loadPolicyOption(args.policyDir, 'run');
  if (!policy) return 2;
  let target: PlanTarget = { kind: 'plan', plan: loaded.plan, digest: loaded.digest };
  for (let revision = 0; ; revision++) {
    let accepted: RecoveryAdvice | undefined;
    const code = await runSession(target, {
      ...sessionOptions(args, policy),
      ...(planner
        ? {
            recoveryPlanner: planner,
            onRecoveryRevision: (advice: RecoveryAdvice) => {
              accepted = advice;
            },
          }
        : {}),
    });
    if (!accepted) return code;
    if (revision === MAX_REVISIONS) break;
    const next = await recoveryTarget(args, target, accepted);
    if (typeof next === 'string') {
      process.stderr.write(`plangate run: ${next}\n`);
      return 1;
    }
    target = next;
  }
  process.stderr.write(`✗ the plan was revised ${MAX_REVISIONS} times; stopping.\n`);
  return 1;
}

type PlanTarget = Extract<SessionTarget, { kind: 'plan' }>;

/**
 * The planner a plan-file run asks at escalations of failures no recipe covers, when one is
 * configured (--model, --provider or --base-url, or PLANGATE_PLANNER_MODEL); a string is a usage problem.
 */
async function configuredPlanner(args: CommonRunArgs): Promise<RecoveryPlanner | string | undefined> {
  const { model, provider, 'base-url': baseUrl } = args.planner;
  if (!model && !provider && !baseUrl && !process.env.PLANGATE_PLANNER_MODEL) return undefined;
  const settings = await plannerSettings(args.planner);
  if (typeof settings === 'string') return settings;
  return { provider: settings.provider, checkShell: settings.loop.checkShell ?? true };
}

/**
 * The version the person took at an escalation (the model's change, kept in the store by its
 * digest), to send to the gate: PLAN_CREATED says which model made it, from which version and why.
 */
async function recoveryTarget(
  args: CommonRunArgs,
  previous: PlanTarget,
  advice: RecoveryAdvice,
  goal?: string,
): Promise<PlanTarget | string> {
  const digest = advice.revision?.digest ?? '';
  const plan = await storedPlan(storePaths(args.store), digest);
  if (!plan) return `the new version ${digest} is not in ${args.store}`;
  process.stderr.write(
    `\nThe model's suggestion (${advice.suggestion.strategy}) was accepted: version ${plan.version} of ${plan.id} goes to the gate.\n`,
  );
  return {
    kind: 'plan',
    plan,
    digest: digest.replace(/^sha256:/, ''),
    planner: {
      goal: goal ?? previous.planner?.goal ?? plan.objective,
      provider: advice.provider,
      model: advice.model,
      rounds: 1,
      input_tokens: advice.inputTokens,
      output_tokens: advice.outputTokens,
      revision_of: `sha256:${previous.digest}`,
      feedback: `the model's recovery suggestion (${advice.suggestion.strategy}), accepted: ${advice.suggestion.reasons}`,
    },
  };
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
    ...(args.workers !== undefined ? { workers: args.workers } : {}),
    agentsPerTarget: args.agentsPerTarget,
    solo: args.solo,
    ...(args.policyOverride !== undefined ? { policyOverride: args.policyOverride } : {}),
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
  // A version the person took at an escalation (the model's change) goes to the gate as it is.
  let accepted: PlanTarget | undefined;
  for (let revision = 0; revision <= MAX_REVISIONS; revision++) {
    let target: PlanTarget;
    if (accepted) target = accepted;
    else {
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
      target = {
        kind: 'plan',
        plan: planned.plan,
        digest: planDigest(planned.plan),
        planner: {
          goal,
          provider: planned.provider,
          model: planned.model,
          rounds: planned.rounds.length,
          input_tokens: planned.inputTokens,
          output_tokens: planned.outputTokens,
          ...(previous ? { revision_of: `sha256:${previous.digest}`, feedback: previous.feedback } : {}),
        },
      };
    }
    let feedback: string | undefined;
    let advice: RecoveryAdvice | undefined;
    const code = await runSession(target, {
      ...sessionOptions(args, policy),
      recoveryPlanner: { provider, checkShell: loop.checkShell ?? true },
      onPlanFeedback: (text) => {
        feedback = text;
      },
      onRecoveryRevision: (taken) => {
        advice = taken;
      },
    });
    accepted = undefined;
    if (advice) {
      const next = await recoveryTarget(args, target, advice, goal);
      if (typeof next === 'string') {
        say(`plangate run: ${next}`);
        return 1;
      }
      accepted = next;
      continue;
    }
    if (feedback === undefined) return code;
    previous = { plan: target.plan, digest: target.digest, feedback };
  }
  say(`✗ the plan was sent back ${MAX_REVISIONS} times; stopping.`);
  return 1;
}

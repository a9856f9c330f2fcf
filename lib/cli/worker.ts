/**
 * `plangate worker --target <agent>`: a worker of one agent target, polling its Step Functions
 * activity on the local store's engine (the running `plangate run`), an engine endpoint, or AWS.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ListActivitiesCommand, SFNClient } from '@aws-sdk/client-sfn';
import { LOCAL_CREDENTIALS } from '../aws-local/clients.ts';
import { agentActivityName } from '../compiler/index.ts';
import { type Plan, PlanSchema } from '../plan/schema.ts';
import { LOCAL_NAME_PREFIX } from '../run/session.ts';
import { configureSandbox } from '../runtime/sandbox/sandbox.ts';
import { AGENT_COMMAND_ENV } from '../runtime/tools/agent.ts';
import { hiddenFromPlanCode } from '../serve/hidden-from-plan-code.ts';
import { LocalRunStack } from '../serve/local-stack.ts';
import {
  DEFAULT_STORE_DESCRIPTION,
  defaultStoreDir,
  liveSession,
  planFile,
  type StorePaths,
  storePaths,
} from '../serve/store-directory.ts';
import { ActivityWorker, type WorkerOptions } from '../worker/worker.ts';

export const usage = `Usage: plangate worker --target <agent> [options]

Takes the steps of one agent target (a plan step's "target", e.g. coder) from its Step Functions
activity, one at a time: writes the handoff, runs the agent command in the workspace with the
task on stdin (PLANGATE_TASK, PLANGATE_TARGET, PLANGATE_STEP_ID, PLANGATE_SUBSCRIPTIONS,
PLANGATE_OUTPUT, PLANGATE_HANDOFF, PLANGATE_LOG for its log of commands, PLANGATE_REPORT for
summary:/blocker:/deviation: lines), sends heartbeats while it works, then runs the step's
contract (as approved, from the plan) in the same workspace and returns the evidence. The agent
never completes a step; only the contract does. The agent's tokens and cost, when the last line
of its output says so ({"usage": {"tokens": N, "cost_usd": X}}, or Claude Code's JSON result),
are returned with the result and counted against the plan's budget. Prints one line per task
taken and finished.

Where the activity is:
  (default)              the plangate run holding --store: its engine, its activity <P>-<target>,
                         and the contracts of the approved plans it keeps
  --endpoint URL         a Step Functions endpoint (plangate engine serve): the activity named
                         <P>-<target>, found with ListActivities
  --aws                  AWS (the SDK's credentials and region): the activity named
                         <P>-<target>, found with ListActivities (P: the platform's namePrefix)
  --activity-arn ARN     this activity (on AWS, or on --endpoint)

Options:
  --target NAME          the agent target to work for (required)
  --workspace DIR        where the agent works and the contract runs (default .)
  --agent-command CMD    the agent, reading the task on stdin (default $${AGENT_COMMAND_ENV})
  --store DIR            the local store (default: ${DEFAULT_STORE_DESCRIPTION}); waits for a run to start
  --name-prefix P        activities are named <P>-<target> (default ${LOCAL_NAME_PREFIX})
  --region R             the AWS region (default: the SDK's)
  --time-scale X         the engine's time scale (plangate run --time-scale), so heartbeats
                         keep up with scaled heartbeat timeouts (default 1)
  --once                 take one task, then exit
  -h, --help             show this help

SIGTERM or Ctrl-C: stops the agent of the task in progress and fails the task (the plan's
recipe retries it at once), then exits 0.`;

export async function run(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parse>['values'];
  try {
    ({ values } = parse(argv));
  } catch (error) {
    process.stderr.write(`plangate worker: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  const target = values.target;
  const agentCommand = values['agent-command'] ?? process.env[AGENT_COMMAND_ENV];
  if (!target || !agentCommand) {
    const problem = !target ? '--target is required' : `give --agent-command or set ${AGENT_COMMAND_ENV}`;
    process.stderr.write(`plangate worker: ${problem}\n\n${usage}\n`);
    return 2;
  }
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const name = agentActivityName(values['name-prefix'] ?? LOCAL_NAME_PREFIX, target);
  const common: Omit<WorkerOptions, 'sfn' | 'activityArn'> = {
    target,
    workspace: resolve(values.workspace ?? '.'),
    agentCommand,
    log: say,
    once: values.once ?? false,
    timeScale: Number(values['time-scale'] ?? '1') || 1,
  };
  const remote = values.aws || values.endpoint !== undefined || values['activity-arn'] !== undefined;
  const paths = remote ? undefined : storePaths(values.store ?? defaultStoreDir(common.workspace));
  // The agent's sandbox: the workspace writable; the store, every other store and the anchor keys hidden.
  configureSandbox({
    workspace: common.workspace,
    hidden: hiddenFromPlanCode(paths?.root),
  });
  if (!paths) return workRemote(values, name, common);
  return workForStore(paths, name, common);
}

type Values = ReturnType<typeof parse>['values'];

/** Works on an engine endpoint or AWS: the activity is there, or this is an error. */
async function workRemote(
  values: Values,
  name: string,
  common: Omit<WorkerOptions, 'sfn' | 'activityArn'>,
): Promise<number> {
  const endpoint = values.endpoint;
  const sfn = new SFNClient({
    ...(endpoint ? { endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS } : {}),
    ...(values.region ? { region: values.region } : {}),
  });
  try {
    let activityArn = values['activity-arn'];
    try {
      activityArn ??= await activityNamed(sfn, name);
    } catch (error) {
      process.stderr.write(
        `plangate worker: ListActivities: ${(error as Error).name}: ${(error as Error).message}\n`,
      );
      return 1;
    }
    if (!activityArn) {
      process.stderr.write(
        `plangate worker: no activity is named "${name}" on ${endpoint ?? 'AWS'} (ListActivities): deploy the platform or plan that creates it, or give --name-prefix (the platform's namePrefix) or --activity-arn\n`,
      );
      return 1;
    }
    const outcome = await work(new ActivityWorker({ ...common, sfn, activityArn }), common.log);
    if (outcome === 'done') return 0;
    process.stderr.write(`plangate worker: ${outcome.name}: ${outcome.message}\n`);
    return 1;
  } finally {
    sfn.destroy();
  }
}

/**
 * Works for whichever `plangate run` holds the store, run after run: waits for one to start,
 * waits while it deploys its plan (which creates the activity), and when that run ends (its
 * engine stops answering), waits for the next one instead of exiting.
 */
async function workForStore(
  paths: StorePaths,
  name: string,
  common: Omit<WorkerOptions, 'sfn' | 'activityArn'>,
): Promise<number> {
  const activityArn = LocalRunStack.activityArn(name);
  const say = common.log;
  let waitingFor: 'activity' | 'run' | undefined;
  for (;;) {
    // Until a task is taken, a signal's default action (exit) is what stopping means.
    const endpoint = await sessionEndpoint(paths, say);
    const sfn = new SFNClient({
      endpoint,
      region: 'us-east-1',
      credentials: LOCAL_CREDENTIALS,
      maxAttempts: 1,
    });
    const worker = new ActivityWorker({
      ...common,
      sfn,
      activityArn,
      approvedPlan: (digest: string) => storedPlan(paths, digest),
    });
    const outcome = await work(worker, say, waitingFor !== 'activity').finally(() => sfn.destroy());
    if (outcome === 'done') return 0;
    if (outcome.name === 'ActivityDoesNotExist') {
      if (waitingFor !== 'activity')
        say(
          `waiting for the run to create activity ${name} (it does when it deploys a plan with target "${common.target}")`,
        );
      waitingFor = 'activity';
    } else if (runGone(outcome)) {
      if (waitingFor !== 'run')
        say(
          `the run at ${endpoint} stopped answering; waiting for the next plangate run holding ${paths.root}`,
        );
      waitingFor = 'run';
    } else {
      process.stderr.write(`plangate worker: ${outcome.name}: ${outcome.message}\n`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The engine that answered the poll is gone: its connection failed (the run was killed) or it
 * answered that it is closing (the run ended while the worker polled).
 */
export function runGone(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    error.name === 'TimeoutError' ||
    error.name === 'ServiceUnavailable'
  );
}

/**
 * Runs the worker until it stops ('done': stopped by a signal, or --once) or its poll fails (the
 * error). SIGTERM and Ctrl-C stop it, failing the task in progress so its recipe retries it.
 */
async function work(
  worker: ActivityWorker,
  say: (line: string) => void,
  announce = true,
): Promise<'done' | Error> {
  if (announce) say(`${worker.workerName}: working for "${worker.target}" on ${worker.activityArn}`);
  const onSignal = () => {
    say(`${worker.workerName}: stopping`);
    void worker.stop('fail');
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    await worker.run();
    return 'done';
  } catch (error) {
    return error as Error;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

/** The ARN of the activity named `name` (ListActivities, every page); undefined when there is none. */
async function activityNamed(sfn: SFNClient, name: string): Promise<string | undefined> {
  let nextToken: string | undefined;
  do {
    const page = await sfn.send(new ListActivitiesCommand({ ...(nextToken ? { nextToken } : {}) }));
    const found = page.activities?.find((a) => a.name === name);
    if (found?.activityArn) return found.activityArn;
    nextToken = page.nextToken;
  } while (nextToken);
  return undefined;
}

/** The approved plan the store keeps under this digest (`plangate run` keeps the plan it started). */
async function storedPlan(paths: StorePaths, digest: string): Promise<Plan | undefined> {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return undefined;
  let text: string;
  try {
    text = await readFile(planFile(paths, digest), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return PlanSchema.parse(JSON.parse(text));
}

/** The engine endpoint of the `plangate run` holding the store, waiting for one to start. */
async function sessionEndpoint(paths: StorePaths, say: (line: string) => void): Promise<string> {
  for (let waited = false; ; waited = true) {
    const session = await liveSession(paths);
    if (session) return session.sfnEndpoint;
    if (!waited) say(`waiting for a plangate run holding ${paths.root}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      target: { type: 'string' },
      workspace: { type: 'string' },
      'agent-command': { type: 'string' },
      store: { type: 'string' },
      endpoint: { type: 'string' },
      'activity-arn': { type: 'string' },
      'name-prefix': { type: 'string' },
      region: { type: 'string' },
      aws: { type: 'boolean' },
      once: { type: 'boolean' },
      'time-scale': { type: 'string' },
    },
  });
}

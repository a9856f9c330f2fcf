/**
 * `plangate worker --target <agent>`: a worker of one agent target, polling its Step Functions
 * activity on the local store's engine (the running `plangate run`), an engine endpoint, or AWS.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SFNClient } from '@aws-sdk/client-sfn';
import { agentActivityName } from '../compiler/index.ts';
import { LOCAL_CREDENTIALS } from '../local/clients.ts';
import { LocalRunStack } from '../local/run/local-stack.ts';
import { LOCAL_NAME_PREFIX } from '../local/run/session.ts';
import { DEFAULT_STORE_DIR, liveSession, storePaths } from '../local/run/store.ts';
import { AGENT_COMMAND_ENV } from '../runtime/tools/agent.ts';
import { ActivityWorker } from '../worker/worker.ts';

export const usage = `Usage: plangate worker --target <agent> [options]

Takes the steps of one agent target (a plan step's "target", e.g. coder) from its Step Functions
activity, one at a time: writes the handoff, runs the agent command in the workspace with the
task on stdin (PLANGATE_TASK, PLANGATE_TARGET, PLANGATE_STEP_ID, PLANGATE_SUBSCRIPTIONS,
PLANGATE_OUTPUT, PLANGATE_HANDOFF), sends heartbeats while it works, then runs the step's
contract (as approved, from the plan) in the same workspace and returns the evidence. The agent
never completes a step; only the contract does. Prints one line per task taken and finished.

Options:
  --target NAME          the agent target to work for (required)
  --workspace DIR        where the agent works and the contract runs (default .)
  --agent-command CMD    the agent, reading the task on stdin (default $${AGENT_COMMAND_ENV})
  --store DIR            work for the plangate run holding this store (default ${DEFAULT_STORE_DIR});
                         waits for one to start
  --endpoint URL         a Step Functions endpoint instead (plangate engine serve)
  --activity-arn ARN     the activity to poll (on AWS); default: the local one of the target
  --name-prefix P        activities are named <P>-<target> (default ${LOCAL_NAME_PREFIX})
  --region R             with --activity-arn on AWS (default: the SDK's)
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
  // Until a task is taken, a signal's default action (exit) is what stopping means.
  const endpoint =
    values.endpoint ?? (values['activity-arn'] ? undefined : await sessionEndpoint(values.store, say));
  const sfn = new SFNClient({
    ...(endpoint ? { endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS } : {}),
    ...(values.region ? { region: values.region } : {}),
  });
  const activityArn =
    values['activity-arn'] ??
    LocalRunStack.activityArn(agentActivityName(values['name-prefix'] ?? LOCAL_NAME_PREFIX, target));
  const worker = new ActivityWorker({
    sfn,
    activityArn,
    target,
    workspace: resolve(values.workspace ?? '.'),
    agentCommand,
    log: say,
    once: values.once ?? false,
    timeScale: Number(values['time-scale'] ?? '1') || 1,
  });
  const onSignal = () => {
    say(`${worker.workerName}: stopping`);
    void worker.stop('fail');
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  say(`${worker.workerName}: working for "${target}" on ${activityArn}`);
  try {
    await worker.run();
    return 0;
  } catch (error) {
    process.stderr.write(`plangate worker: ${(error as Error).name}: ${(error as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    sfn.destroy();
  }
}

/** The engine endpoint of the `plangate run` holding the store, waiting for one to start. */
async function sessionEndpoint(store: string | undefined, say: (line: string) => void): Promise<string> {
  const paths = storePaths(store ?? DEFAULT_STORE_DIR);
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
      once: { type: 'boolean' },
      'time-scale': { type: 'string' },
    },
  });
}

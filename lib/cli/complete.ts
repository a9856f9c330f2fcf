/**
 * `plangate complete <execution> <step> --value k=v …`: a person reports a human step done (seed
 * 003), from any shell, while the `plangate run` that holds the store waits at that step. The
 * answer goes through that run's front door (its approvals API), as the page's and the terminal's
 * do, through a link bound to the person and signed with the store's key: the policy is checked
 * against them, the values against the step's declared outputs, then the step's contract runs as
 * for any step. The person is the OS user running this command, never a name given on the command
 * line: the key that vouches for them sits in the store, outside every workspace and hidden from
 * plan code by the sandbox, so an agent or a step cannot complete a human step for anyone.
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { localClients } from '../aws-local/clients.ts';
import { AS_RECIPIENT } from '../runtime/api/approvals-api.ts';
import { approvalsFor } from '../runtime/gate/gate.ts';
import { LinkSigner } from '../runtime/gate/links.ts';
import { DEFAULT_TABLE_NAMES } from '../runtime/journal/tables.ts';
import {
  DEFAULT_STORE_DESCRIPTION,
  liveSession,
  loadSigningKey,
  storePaths,
} from '../serve/store-directory.ts';

export const usage = `Usage: plangate complete <execution-arn> <step-id> [--value name=value …] [options]

Reports a human step (requiresHuman) of a running execution done, with the values it captured,
or failed. The plangate run holding the store must be waiting at that step; the values are
checked against the step's declared outputs, then the step's contract decides.

Options:
  --value NAME=VALUE   a captured value; repeat for each declared output
  --failed REASON      report the step failed instead (it goes to its recovery)
  --store DIR          local store (default: ${DEFAULT_STORE_DESCRIPTION})

It answers as you, the OS user running it (the approvers the plan names must include you).
  -h, --help           show this help

Exit codes: 0 recorded, 1 not recorded (said why), 2 usage error.`;

export async function run(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof options>;
  try {
    parsed = options(argv);
  } catch (error) {
    return usageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.by !== undefined)
    return usageError(
      `--by is not accepted: plangate complete answers as the OS user running it (${osUser()}), as the approvals API checks`,
    );
  const [executionArn, stepId, ...extra] = positionals;
  if (!executionArn || !stepId || extra.length > 0)
    return usageError('name the execution and the step, e.g. plangate complete arn:… deploy --value url=…');
  const outputs: Record<string, string> = {};
  for (const pair of values.value ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return usageError(`--value "${pair}" is not name=value`);
    outputs[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  if (values.failed !== undefined && Object.keys(outputs).length > 0)
    return usageError('--failed takes no --value');
  const say = (text: string) => process.stderr.write(`${text}\n`);

  const paths = storePaths(values.store);
  const session = await liveSession(paths);
  if (!session) {
    say(
      `plangate complete: no plangate run holds ${paths.root}, so nothing is waiting for the step; resume the execution (plangate resume ${executionArn}) and complete it while it waits.`,
    );
    return 1;
  }
  const clients = localClients({
    dynamoEndpoint: session.dynamoEndpoint,
    eventsEndpoint: session.eventsEndpoint,
    sfnEndpoint: session.sfnEndpoint,
  });
  try {
    const signingKey = await loadSigningKey(paths);
    // Only to find the waiting gate: the answer goes through the run's approvals API, which
    // decides on the run's clock whether the gate can still be answered (not on this process's).
    const approvals = approvalsFor({
      dynamo: clients.doc,
      tables: DEFAULT_TABLE_NAMES,
      events: clients.events,
      sfn: clients.sfn as NonNullable<typeof clients.sfn>,
      signingKey,
    });
    const waiting = await approvals.pending(executionArn, { anyExpiry: true });
    const gate = waiting.find((w) => w.gate.kind === 'human' && w.gate.stepId === stepId);
    if (!gate) {
      const humans = waiting.filter((w) => w.gate.kind === 'human').map((w) => w.gate.stepId);
      say(
        `plangate complete: step "${stepId}" of ${executionArn} is not waiting for a person${humans.length > 0 ? ` (waiting: ${humans.join(', ')})` : ' (no human step is waiting)'}.`,
      );
      return 1;
    }
    const by = osUser();
    const link = new LinkSigner(signingKey).forRecipient(gate.linkId, gate.gate.planDigest, by);
    const response = await fetch(
      `${session.approvalUrl}/approvals/${encodeURIComponent(link)}/${AS_RECIPIENT}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({
          digest: gate.gate.planDigest,
          ...(values.failed !== undefined
            ? { decision: 'FAILED', reason: values.failed }
            : { decision: 'DONE', outputs }),
        }),
      },
    );
    if (!response.ok) {
      const { message } = (await response.json().catch(() => ({}))) as { message?: string };
      say(`plangate complete: not recorded: ${message ?? `HTTP ${response.status}`}`);
      return 1;
    }
    say(
      values.failed !== undefined
        ? `Recorded: ${stepId} failed (${values.failed}), by ${by}.`
        : `Recorded: ${stepId} done by ${by}${Object.keys(outputs).length > 0 ? ` with ${Object.keys(outputs).join(', ')}` : ''}; its contract decides next.`,
    );
    return 0;
  } finally {
    clients.destroy();
  }
}

function options(args: string[]) {
  return parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      value: { type: 'string', multiple: true },
      failed: { type: 'string' },
      by: { type: 'string' },
      store: { type: 'string' },
    },
  });
}

function osUser(): string {
  return userInfo().username;
}

function usageError(message: string): number {
  process.stderr.write(`plangate complete: ${message}\n\n${usage}\n`);
  return 2;
}

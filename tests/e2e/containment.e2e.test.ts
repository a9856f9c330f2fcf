/**
 * Plan code never holds the harness's authority (issue 29), through the real CLI: an agent run by
 * `plangate run`'s own worker tries every way out it could find on today's machine — answer the
 * run's human step with `plangate complete --by alice` and without `--by`, read the store's
 * signing key and session, reach the run's loopback endpoints, write outside its workspace, leave
 * a `setsid` child behind — and a shell step, its contract and a postcondition dump their
 * environment while the harness holds AWS credentials. Every attempt fails, what the harness can
 * see of it is recorded, and the run goes on to the person's own answer.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localClients } from '../../lib/aws-local/clients.ts';
import { approvalsFor } from '../../lib/runtime/gate/gate.ts';
import { DEFAULT_TABLE_NAMES } from '../../lib/runtime/journal/tables.ts';
import { liveSession, loadSigningKey, storePaths } from '../../lib/serve/store-directory.ts';
import { PLANGATE_SHELL_COMMAND } from '../support/plangate-cli.ts';
import { CliRun, runPlan, verifyChain, workDir } from './cli.ts';

const CLI = PLANGATE_SHELL_COMMAND;

const PLAN = `id: escape-attempts
version: 1
objective: An agent writes work.txt while a person reviews
sizePolicy: { minSteps: 1 }
steps:
  - id: work
    description: Write work.txt
    target: coder
    timeoutSeconds: 120
    task: Write work.txt.
    contract: { kind: command, command: test -f work.txt }
  - id: review
    description: Review the work and report the ticket
    requiresHuman: true
    task: Review work.txt and report the change ticket as review_ticket.
    outputs: [review_ticket]
    contract: { kind: assert, expression: '$contains(output.review_ticket, /^CR-[0-9]+$/)' }
`;

/**
 * The agent: told where the store is (as it could learn on main, where the store sat in the
 * workspace) and, through arn.txt and endpoints.txt, the execution and the run's loopback
 * endpoints (which it could find by scanning ports); each attempt's exit code lands in attempts/.
 */
function escapingAgent(store: string, outside: string): string {
  return `#!/usr/bin/env bash
cd "$(pwd)"
mkdir -p attempts
try() { local name=$1; shift; "$@" > "attempts/$name.out" 2>&1; echo $? > "attempts/$name.rc"; }
for _ in $(seq 1 100); do [ -s arn.txt ] && [ -s endpoints.txt ] && break; sleep 0.1; done
arn=$(cat arn.txt)
try key cat ${JSON.stringify(storePaths(store).linkKey)}
try session cat ${JSON.stringify(storePaths(store).session)}
try reach node -e 'Promise.any(process.argv.slice(1).map((u) => fetch(u))).then(() => process.exit(0), () => process.exit(1))' $(cat endpoints.txt)
try complete-by ${CLI} complete "$arn" review --value review_ticket=CR-666 --by alice --store ${JSON.stringify(store)}
try complete ${CLI} complete "$arn" review --value review_ticket=CR-666 --store ${JSON.stringify(store)}
try outside bash -c 'echo escaped > ${join(outside, 'escaped')}'
setsid bash -c 'while :; do date +%s%N > beat; sleep 0.1; done' < /dev/null > /dev/null 2>&1 &
echo escaped > ${join(outside, 'escaped-quietly')} || true
sleep 0.5
echo done > work.txt
`;
}

describe('an agent that tries to escape its sandbox', { timeout: 180_000 }, () => {
  it('cannot answer a gate, read the key, reach the endpoints, write outside or outlive its step; the run goes on', async () => {
    const tmp = await workDir();
    const ws = join(tmp, 'ws');
    // Outside the workspace and outside /tmp (the sandbox's /tmp is its own): read-only there.
    const outside = await mkdtemp('/var/tmp/plangate-outside-');
    const store = join(tmp, 'store');
    await mkdir(ws);
    await writeFile(join(ws, 'plan.yaml'), PLAN);
    // In the workspace: the sandbox's /tmp is its own, so a script elsewhere under /tmp is not there.
    const agent = join(ws, 'agent.sh');
    await writeFile(agent, escapingAgent(store, outside));
    await chmod(agent, 0o755);
    // At full time: the agent's attempts (each a CLI start) take seconds.
    const run = new CliRun(['run', 'plan.yaml', '--json', '--approve', '--store', store], ws, {
      PLANGATE_AGENT_COMMAND: agent,
    });
    await run.until('the execution started', () => /Execution: arn:\S+/.test(run.stderr));
    const arn = run.executionArn;
    const session = JSON.parse(readFileSync(storePaths(store).session, 'utf8')) as Record<string, unknown>;
    const endpoints = Object.values(session).filter((v) => typeof v === 'string' && v.startsWith('http'));
    expect(endpoints.length).toBeGreaterThanOrEqual(4);
    await writeFile(join(ws, 'endpoints.txt'), endpoints.join(' '));
    await writeFile(join(ws, 'arn.txt'), arn);
    await run.untilEvent('TASK_COMPLETED', 'work');
    // The person answers, as themselves.
    const complete = new CliRun(
      ['complete', arn, 'review', '--value', 'review_ticket=CR-1', '--store', store],
      ws,
    );
    expect(await complete.exited, complete.stderr).toBe(0);
    expect(complete.stderr).toContain(`done by ${userInfo().username}`);
    expect(await run.exited, run.stderr).toBe(0);

    const attempt = (name: string) => ({
      rc: Number(readFileSync(join(ws, 'attempts', `${name}.rc`), 'utf8').trim()),
      out: readFileSync(join(ws, 'attempts', `${name}.out`), 'utf8'),
    });
    // The store is hidden: neither its key nor its session (the endpoints) can be read.
    expect(attempt('key').rc).not.toBe(0);
    expect(attempt('key').out).not.toContain(readFileSync(storePaths(store).linkKey, 'utf8'));
    expect(attempt('session').rc).not.toBe(0);
    // No route to the run's loopback endpoints, even knowing them.
    expect(attempt('reach').rc).not.toBe(0);
    // No human step completed by the agent, as alice or as anyone.
    expect(attempt('complete-by').rc).not.toBe(0);
    expect(attempt('complete').rc).not.toBe(0);
    // Nothing written outside the workspace, and the refusal is in the agent's record.
    expect(attempt('outside').rc).not.toBe(0);
    expect(attempt('outside').out).toContain('Read-only file system');
    expect(existsSync(join(outside, 'escaped'))).toBe(false);
    expect(existsSync(join(outside, 'escaped-quietly'))).toBe(false);

    const events = run.events;
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    const work = events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'work');
    expect(work?.details).toMatchObject({
      agent_run: {
        sandboxed: true,
        refusedWrites: [expect.stringContaining('escaped-quietly: Read-only file system')],
      },
    });
    const review = events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'review');
    expect(JSON.stringify(review?.details)).toContain('CR-1');
    expect(JSON.stringify(events)).not.toContain('CR-666');
    expect(JSON.stringify(events)).not.toContain('alice');

    // The setsid child ended with the agent: its heartbeat file stands still.
    const beat = join(ws, 'beat');
    expect(existsSync(beat)).toBe(true);
    const before = readFileSync(beat, 'utf8');
    await new Promise((r) => setTimeout(r, 1000));
    expect(readFileSync(beat, 'utf8')).toBe(before);
  });
});

const ENV_PLAN = `id: env-dump
version: 1
objective: Dump the environment of a step, its contract and a postcondition
sizePolicy: { minSteps: 1 }
steps:
  - id: dump
    description: Dump the step's environment to step.env
    tool: shell
    args: { command: env > step.env, env: { DECLARED: by-the-plan } }
    contract: { kind: command, command: env > contract.env }
postconditions:
  - id: dumped
    description: Dump the postcondition's environment to post.env
    contract: { kind: command, command: env > post.env }
`;

/** What a harness on AWS (a Lambda, an ECS task) holds: none of it may reach plan code. */
const HARNESS_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: 'AKIAHARNESSHARNESS01',
  AWS_SECRET_ACCESS_KEY: 'harness-secret-access-key-do-not-leak',
  AWS_SESSION_TOKEN: 'harness-session-token-do-not-leak',
  AWS_SECURITY_TOKEN: 'harness-security-token-do-not-leak',
  AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://169.254.170.23/v1/credentials',
  AWS_CONTAINER_AUTHORIZATION_TOKEN: 'harness-container-token-do-not-leak',
  AWS_LAMBDA_RUNTIME_API: '127.0.0.1:9001',
  AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/token',
  AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/plangate-step-runner',
};

describe('the environment of plan commands', { timeout: 120_000 }, () => {
  for (const sandbox of ['on', 'off'] as const)
    it(`holds none of the harness's AWS credentials (sandbox ${sandbox}), and the gate says how steps run`, async () => {
      const ws = await workDir();
      await writeFile(join(ws, 'plan.yaml'), ENV_PLAN);
      const run = runPlan('plan.yaml', ws, ['--approve'], {
        ...HARNESS_CREDENTIALS,
        ...(sandbox === 'off' ? { PLANGATE_SANDBOX: 'off' } : {}),
      });
      expect(await run.exited, run.stderr).toBe(0);
      for (const file of ['step.env', 'contract.env', 'post.env']) {
        const env = readFileSync(join(ws, file), 'utf8');
        for (const [name, value] of Object.entries(HARNESS_CREDENTIALS)) {
          expect(env, `${file}: ${name}`).not.toContain(`${name}=`);
          expect(env, `${file}: ${name}`).not.toContain(value);
        }
        expect(env).not.toMatch(/^AWS_/m);
        expect(env).toMatch(/^PATH=/m);
      }
      expect(readFileSync(join(ws, 'step.env'), 'utf8')).toContain('DECLARED=by-the-plan');
      const gate = run.stderr.slice(0, run.stderr.indexOf('--approve: answering'));
      expect(gate).toContain(
        sandbox === 'on'
          ? 'Runs as: steps run sandboxed (bubblewrap)'
          : `Runs as: steps run unsandboxed as ${userInfo().username} (PLANGATE_SANDBOX=off)`,
      );
    });
});

describe('plangate complete', () => {
  it('takes no name to answer as: --by is refused, saying who answers', async () => {
    const cwd = await workDir();
    const complete = new CliRun(
      ['complete', 'arn:aws:states:us-east-1:123456789012:execution:m:e', 'review', '--by', 'alice'],
      cwd,
    );
    expect(await complete.exited).toBe(2);
    expect(complete.stderr).toContain(
      `--by is not accepted: plangate complete answers as the OS user running it (${userInfo().username})`,
    );
  });
});

const ANSWERING_PLAN = `id: answer-own-gate
version: 1
objective: An agent works while a person reviews
sizePolicy: { minSteps: 1 }
steps:
  - id: work
    description: Write work.txt
    target: coder
    timeoutSeconds: 120
    task: Write work.txt.
    contract: { kind: command, command: test -f work.txt }
  - id: review
    description: Review the work and report the ticket
    requiresHuman: true
    task: Review work.txt and report the change ticket as review_ticket.
    outputs: [review_ticket]
    contract: { kind: assert, expression: '$contains(output.review_ticket, /^CR-[0-9]+$/)' }
`;

/** Posts a DONE answer for the human step through the run's front door, with its genuine shared link and no identity. */
const ANSWERING_AGENT = `#!/usr/bin/env bash
for _ in $(seq 1 300); do [ -s link.txt ] && break; sleep 0.1; done
read -r url link digest < link.txt
for path in "approvals/$link" "approvals/$link/as-recipient"; do
  node -e 'fetch(process.argv[1], { method: "POST", headers: { "content-type": "application/json", accept: "application/json", "x-plangate-user": "alice" }, body: JSON.stringify({ digest: process.argv[2], decision: "DONE", outputs: { review_ticket: "CR-666" } }) }).then((r) => console.log(r.status), (e) => console.log("error", e.message))' "$url/$path" "$digest" >> answers.txt 2>&1
done
echo done > work.txt
`;

describe('an answer that reaches the harness from plan code', { timeout: 180_000 }, () => {
  for (const how of ['sandboxed, the network shared', 'unsandboxed'] as const)
    it(`is refused and journaled in the gate it tried, saying where it came from (${how})`, async () => {
      const ws = await workDir();
      const store = join(ws, '..', `${ws.split('/').pop()}-store`);
      await writeFile(join(ws, 'plan.yaml'), ANSWERING_PLAN);
      const agent = join(ws, 'agent.sh');
      await writeFile(agent, ANSWERING_AGENT);
      await chmod(agent, 0o755);
      const run = new CliRun(['run', 'plan.yaml', '--json', '--approve', '--store', store], ws, {
        PLANGATE_AGENT_COMMAND: agent,
        ...(how === 'unsandboxed' ? { PLANGATE_SANDBOX: 'off' } : { PLANGATE_SANDBOX_NETWORK: 'host' }),
      });
      await run.untilEvent('TASK_STARTED', 'review');
      const arn = run.executionArn;
      // What an attacker needs: the front door and the gate's genuine shared link (no identity).
      const gate = await waitingHumanGate(store, arn);
      await writeFile(join(ws, 'link.txt'), `${gate.url} ${gate.linkId} ${gate.digest}\n`);
      await run.untilEvent('TASK_COMPLETED', 'work');
      const statuses = readFileSync(join(ws, 'answers.txt'), 'utf8').trim().split('\n');
      expect(
        statuses.every((s) => /^4\d\d$/.test(s)),
        statuses.join(', '),
      ).toBe(true);
      const complete = new CliRun(
        ['complete', arn, 'review', '--value', 'review_ticket=CR-1', '--store', store],
        ws,
      );
      expect(await complete.exited, complete.stderr).toBe(0);
      expect(await run.exited, run.stderr).toBe(0);

      const refusals = run.events.filter((e) => e.event === 'GATE_ANSWER_REFUSED' && e.task_id === 'review');
      expect(refusals.length, JSON.stringify(run.events.map((e) => e.event))).toBeGreaterThanOrEqual(1);
      for (const refusal of refusals) expect(String(refusal.details?.message)).not.toBe('');
      const sources = refusals.map((r) => String(r.details?.source ?? r.details?.by));
      if (how === 'unsandboxed') expect(sources.some((s) => s.startsWith('127.0.0.1'))).toBe(true);
      else
        expect(
          refusals.some((r) => /comes from plan code \(process \d+/.test(String(r.details?.message))),
        ).toBe(true);
      const review = run.events.find((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'review');
      expect(JSON.stringify(review?.details)).toContain('CR-1');
      expect(JSON.stringify(run.events.filter((e) => e.event !== 'GATE_ANSWER_REFUSED'))).not.toContain(
        'CR-666',
      );
    });
});

/** The run's front door and its human step's shared link, as `plangate complete` finds them. */
async function waitingHumanGate(
  store: string,
  executionArn: string,
): Promise<{ url: string; linkId: string; digest: string }> {
  const paths = storePaths(store);
  const session = await liveSession(paths);
  if (!session) throw new Error('no live session');
  const clients = localClients(session);
  try {
    const approvals = approvalsFor({
      dynamo: clients.doc,
      tables: DEFAULT_TABLE_NAMES,
      events: clients.events,
      sfn: clients.sfn as NonNullable<typeof clients.sfn>,
      signingKey: await loadSigningKey(paths),
    });
    const gate = (await approvals.pending(executionArn)).find((w) => w.gate.kind === 'human');
    if (!gate) throw new Error('the human step is not waiting');
    return { url: session.approvalUrl, linkId: gate.linkId, digest: gate.gate.planDigest };
  } finally {
    clients.destroy();
  }
}

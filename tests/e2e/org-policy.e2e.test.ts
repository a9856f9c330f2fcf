/**
 * The platform's policy (Cedar, `--policy DIR`), end to end through the real interfaces: `plangate
 * serve` (the local stack behind the same Plans and Approvals APIs as on AWS, callers named by
 * the loopback identity header) and `plangate run`. An organisation's policy set decides who may
 * submit which tools, how many approvers of which group a destructive plan needs, which hosts a
 * step may reach with the arguments it resolved at run time, whether anything is approved
 * non-interactively, and who may read a draft or an execution.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DraftResponseSchema } from '../../lib/launch/plans-api-schemas.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { FIXED_PLAN, startOpenAiServer, type WireServer } from '../planner/wire-servers.ts';
import { REPO, workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

/** The organisation's policy set of the docs' worked example (docs/policy.md), with its groups. */
const ORG_POLICIES = join(REPO, 'examples/policies/org');

interface Served {
  readonly serve: ServeProcess;
  readonly url: string;
}

let served: Served;
let model: WireServer;
beforeAll(async () => {
  // The planner drafts one plan (for the draft read below), through a scripted model server.
  model = await startOpenAiServer([{ plan: FIXED_PLAN }]);
  const store = await mkdtemp(join(tmpdir(), 'plangate-org-policy-serve-'));
  const serve = startServe(
    [
      ...['--identity', 'header', '--store', store, '--time-scale', '0.01'],
      ...['--policy', ORG_POLICIES, '--base-url', `${model.url}/v1`, '--model', 'scripted'],
    ],
    await workDir(),
  );
  served = { serve, url: await serve.line(() => true) };
}, 60_000);
afterAll(async () => {
  await served?.serve.stop();
  await model?.close();
});

const as = (user: string, init: RequestInit = {}) => ({
  ...init,
  headers: { 'content-type': 'application/json', 'x-plangate-user': user, ...init.headers },
});

async function post(user: string, plan: unknown): Promise<Response> {
  return fetch(`${served.url}/plans`, as(user, { method: 'POST', body: JSON.stringify(plan) }));
}

/** Submits `plan` as `user`; its execution and the link id of its plan gate. */
async function submit(user: string, plan: { id: string }): Promise<{ executionArn: string; linkId: string }> {
  const res = await post(user, plan);
  expect(res.status, await res.clone().text()).toBe(201);
  const { executionArn } = (await res.json()) as { executionArn: string };
  return { executionArn, linkId: await gateLink(`gate plan of ${plan.id} v1 waits: `) };
}

async function gateLink(prefix: string): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const line = await Promise.race([
    served.serve.line((l) => l.startsWith(prefix)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no "${prefix}" in 30 s:\n${served.serve.lines.join('\n')}`)),
        30_000,
      );
    }),
  ]).finally(() => clearTimeout(timer));
  return decodeURIComponent(line.split('/approvals/')[1] as string);
}

async function answer(linkId: string, user: string, decision: Record<string, unknown>) {
  const link = `${served.url}/approvals/${encodeURIComponent(linkId)}`;
  const gate = (await (await fetch(link, { headers: { accept: 'application/json' } })).json()) as {
    planDigest: string;
    revision?: { digest: string };
  };
  const res = await fetch(
    link,
    as(user, {
      method: 'POST',
      headers: { accept: 'application/json' },
      body: JSON.stringify({ digest: gate.revision?.digest ?? gate.planDigest, ...decision }),
    }),
  );
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function eventsOf(executionArn: string, user: string): Promise<JournalRecord[]> {
  const res = await fetch(`${served.url}/executions/${encodeURIComponent(executionArn)}/events`, as(user));
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: JournalRecord[] }).events;
}

async function untilEvent(executionArn: string, user: string, found: (e: JournalRecord) => boolean) {
  for (let i = 0; i < 600; i++) {
    const events = await eventsOf(executionArn, user);
    if (events.some(found)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${executionArn}: the awaited event never came`);
}

/** A plan whose one step deletes a scratch directory (its own gate, as the validator demands). */
function destructivePlan(id: string, approval: Record<string, unknown>) {
  return {
    id,
    version: 1,
    objective: 'Remove the scratch directory of the last build',
    sizePolicy: { minSteps: 1 },
    approval: { allowAutoApprove: false, ...approval },
    steps: [
      {
        id: 'wipe',
        description: 'Remove the scratch directory',
        tool: 'shell',
        args: { command: 'rm -rf ./scratch-dir' },
        requiresApproval: true,
        contract: { kind: 'command', command: 'test ! -e ./scratch-dir' },
      },
    ],
  };
}

const policyDecisions = (events: readonly JournalRecord[]) =>
  events.filter((e) => e.event === 'POLICY_DECISION').map((e) => e.details);

describe('the organisation policy, through plangate serve', { timeout: 120_000 }, () => {
  it("a plan naming its author's friend as the only approver of a destructive step waits for the quorum the policy requires", async () => {
    const plan = destructivePlan('policy-friend', { approvers: ['friend'], quorum: 1 });
    const { executionArn, linkId } = await submit('carol', plan);
    // The plan's quorum of one is met, but policy wants two sre approvers: the gate waits.
    expect(await answer(linkId, 'friend', { decision: 'APPROVE' })).toEqual({
      status: 200,
      body: {
        status: 'pending',
        votes: 1,
        // Why it still waits, as the answerer is told: a hard rule, so nobody may override it.
        held: expect.stringMatching(/forbidden by two-sre-for-destructive(?!.*soft-mandatory)/),
      },
    });
    const events = await untilEvent(executionArn, 'carol', (e) => e.event === 'POLICY_DECISION');
    expect(policyDecisions(events)).toEqual([
      expect.objectContaining({
        action: 'CompleteGate',
        principal: 'friend',
        decision: 'deny',
        policies: ['two-sre-for-destructive'],
        outcome: 'the gate waits for more approvals',
      }),
    ]);
    expect(events.map((e) => e.event)).not.toContain('GATE_APPROVED');
    // The plan's own approver list only narrows: sre members it does not name cannot step in.
    expect(await answer(linkId, 'sam', { decision: 'APPROVE' })).toMatchObject({ status: 403 });
    await new Promise((r) => setTimeout(r, 1000));
    expect((await eventsOf(executionArn, 'carol')).map((e) => e.event)).not.toContain('TASK_STARTED');
  });

  it('two distinct sre approvers complete the gates of a destructive plan, and it runs', async () => {
    const plan = destructivePlan('policy-two-sre', { quorum: 1 });
    const { executionArn, linkId } = await submit('carol', plan);
    expect(await answer(linkId, 'sam', { decision: 'APPROVE' })).toMatchObject({
      body: { status: 'pending', votes: 1 },
    });
    expect(await answer(linkId, 'sue', { decision: 'APPROVE' })).toMatchObject({
      body: { status: 'decided' },
    });
    // The destructive step's own gate asks the same of its approvers.
    const stepLink = await gateLink('gate step wipe of policy-two-sre v1 waits: ');
    expect(await answer(stepLink, 'sue', { decision: 'APPROVE' })).toMatchObject({
      body: { status: 'pending' },
    });
    expect(await answer(stepLink, 'sam', { decision: 'APPROVE' })).toMatchObject({
      body: { status: 'decided' },
    });
    const events = await untilEvent(executionArn, 'carol', (e) => e.event === 'EXECUTION_COMPLETE');
    expect(events.at(-1)?.details).toMatchObject({ succeeded: true });
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({
      approvers: ['sam', 'sue'],
    });
  });

  it('a submitter outside the group cannot submit a plan using a tool the policy reserves', async () => {
    const plan = {
      id: 'policy-lambda',
      version: 1,
      objective: 'Invoke the cache warmer once',
      sizePolicy: { minSteps: 1 },
      steps: [
        {
          id: 'warm',
          description: 'Invoke the cache warmer',
          tool: 'lambda',
          args: { functionName: 'cache-warmer' },
          contract: { kind: 'assert', expression: 'true' },
        },
      ],
    };
    const refused = await post('mallory', plan);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      error: 'denied by policy',
      message:
        'policy denies mallory SubmitPlan on Plan "policy-lambda@v1" (forbidden by lambda-is-for-deployers)',
      policies: ['lambda-is-for-deployers'],
    });
    // A deployer may: the same plan reaches its gate.
    await submit('dora', plan);
  });

  it('a step whose host would come from an earlier step is refused at submission: a value never chooses where a request goes', async () => {
    // The run-time policy used to be the only thing between an earlier step's output and the host
    // a request reached (no-quarantined-hosts, at RunStep). A reference may now fill only a path
    // segment, a query value or a port, so the host the policy judges is the host in the plan.
    const plan = {
      id: 'policy-host',
      version: 1,
      objective: 'Fetch the status page an earlier step names',
      sizePolicy: { minSteps: 1 },
      approval: { allowAutoApprove: false },
      steps: [
        {
          id: 'pick',
          description: 'Name the status page',
          tool: 'echo',
          args: { message: 'quarantine.example.net' },
          outputs: ['message'],
          contract: { kind: 'assert', expression: '$exists(output.message)' },
        },
        {
          id: 'fetch',
          description: 'Fetch the status page',
          tool: 'http',
          dependsOn: ['pick'],
          args: { method: 'GET', url: 'https://${steps.pick.message}/status' },
          contract: { kind: 'assert', expression: 'true' },
        },
      ],
    };
    const refused = await post('carol', plan);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: 'invalid plan',
      problems: [
        expect.objectContaining({
          code: 'reference-not-allowed',
          location: expect.objectContaining({ pointer: '/steps/1/args/url' }),
        }),
      ],
    });
  });

  it('a denied read of an execution or a draft: 403 naming the policy; the submitter and an auditor read', async () => {
    const plan = destructivePlan('policy-read', { quorum: 1 });
    const { executionArn } = await submit('carol', plan);
    const path = (view: string) => `${served.url}/executions/${encodeURIComponent(executionArn)}/${view}`;
    for (const url of [
      path('events'),
      path('progress'),
      `${served.url}/plans/${encodeURIComponent(executionArn)}`,
    ]) {
      const refused = await fetch(url, as('mallory'));
      expect(refused.status, url).toBe(403);
      expect(await refused.json()).toMatchObject({
        error: 'denied by policy',
        policies: ['executions-are-private'],
      });
    }
    expect((await fetch(path('events'), as('audrey'))).status).toBe(200);
    expect((await fetch(path('events'), as('carol'))).status).toBe(200);

    const accepted = await fetch(
      `${served.url}/plans`,
      as('dana', {
        method: 'POST',
        body: JSON.stringify({ goal: 'Add a health check endpoint and prove it answers' }),
      }),
    );
    expect(accepted.status).toBe(202);
    const { location } = (await accepted.json()) as { location: string };
    const refused = await fetch(`${served.url}${location}`, as('mallory'));
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      error: 'denied by policy',
      policies: ['drafts-are-private'],
    });
    const own = await fetch(`${served.url}${location}`, as('dana'));
    expect(own.status).toBe(200);
    expect(DraftResponseSchema.parse(await own.json())).toMatchObject({ submittedBy: 'dana' });
  });
});

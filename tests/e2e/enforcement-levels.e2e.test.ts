/**
 * Enforcement levels end to end, through `plangate serve` and its Plans and Approvals APIs: an
 * advisory rule is journaled and never blocks; a soft-mandatory rule blocks a submission and holds
 * a gate until a member of its override group releases it with a reason, which PLAN_CREATED and
 * POLICY_DECISION record; nobody else can, and a hard rule never gives way.
 */
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { REPO, workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

/** The shipped default set, with an organisation's rules at each level. */
function policies(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plangate-levels-policy-'));
  cpSync(join(REPO, 'policies/default'), dir, { recursive: true });
  writeFileSync(
    join(dir, 'org.cedar'),
    `@id("two-sre-for-destructive")
@enforcement("soft-mandatory")
@overrideBy("incident-commanders")
@reason("destructive content needs two sre approvers")
forbid (principal, action == Action::"CompleteGate", resource)
when { resource.destructive }
unless { resource.hasTag("sre") && resource.getTag("sre") >= 2 };

@id("big-plans-need-sre")
@enforcement("soft-mandatory")
@overrideBy("incident-commanders")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.stepCount > 1 }
unless { principal in Group::"sre" };

@id("trial-no-http")
@enforcement("advisory")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.tools.contains("http") };
`,
  );
  writeFileSync(
    join(dir, 'groups.json'),
    JSON.stringify({ sre: ['sam', 'sue'], 'incident-commanders': ['ivy'] }),
  );
  return dir;
}

let serve: ServeProcess;
let url: string;
beforeAll(async () => {
  const store = await mkdtemp(join(tmpdir(), 'plangate-levels-serve-'));
  serve = startServe(
    ['--identity', 'header', '--store', store, '--time-scale', '0.01', '--policy', policies()],
    await workDir(),
  );
  url = await serve.line(() => true);
}, 60_000);
afterAll(async () => {
  await serve?.stop();
});

const as = (user: string, headers: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  'x-plangate-user': user,
  ...headers,
});

function post(user: string, plan: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/plans`, { method: 'POST', headers: as(user, headers), body: JSON.stringify(plan) });
}

async function gateLink(prefix: string): Promise<string> {
  const line = await serve.line((l) => l.startsWith(prefix));
  return decodeURIComponent(line.split('/approvals/')[1] as string);
}

async function answer(linkId: string, user: string, decision: Record<string, unknown>) {
  const link = `${url}/approvals/${encodeURIComponent(linkId)}`;
  const gate = (await (await fetch(link, { headers: { accept: 'application/json' } })).json()) as {
    planDigest: string;
  };
  const res = await fetch(link, {
    method: 'POST',
    headers: { ...as(user), accept: 'application/json' },
    body: JSON.stringify({ digest: gate.planDigest, ...decision }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function eventsOf(executionArn: string): Promise<JournalRecord[]> {
  const res = await fetch(`${url}/executions/${encodeURIComponent(executionArn)}/events`, {
    headers: as('carol'),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: JournalRecord[] }).events;
}

async function untilEvent(executionArn: string, found: (e: JournalRecord) => boolean) {
  for (let i = 0; i < 600; i++) {
    const events = await eventsOf(executionArn);
    if (events.some(found)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${executionArn}: the awaited event never came`);
}

const wipe = (id: string) => ({
  id,
  version: 1,
  objective: 'Remove the scratch directory of the last build',
  sizePolicy: { minSteps: 1 },
  approval: { allowAutoApprove: false, quorum: 1 },
  steps: [
    {
      id: 'wipe',
      description: 'Remove the scratch directory',
      tool: 'shell',
      args: { command: 'rm -rf ./levels-scratch-dir' },
      requiresApproval: true,
      contract: { kind: 'command', command: 'test ! -e ./levels-scratch-dir' },
    },
  ],
});

const twoSteps = (id: string) => ({
  id,
  version: 1,
  objective: 'List the build output twice',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'one',
      description: 'List the output',
      tool: 'shell',
      args: { command: 'ls .' },
      contract: { kind: 'command', command: 'test -d .' },
    },
    {
      id: 'two',
      description: 'List it again',
      tool: 'shell',
      args: { command: 'ls .' },
      contract: { kind: 'command', command: 'test -d .' },
      dependsOn: ['one'],
    },
  ],
});

describe('enforcement levels, through plangate serve', { timeout: 120_000 }, () => {
  it('a soft-mandatory gate rule holds the gate, says who may release it, and gives way only to their override with a reason', async () => {
    const res = await post('carol', wipe('levels-soft-gate'));
    expect(res.status, await res.clone().text()).toBe(201);
    const { executionArn } = (await res.json()) as { executionArn: string };
    const planLink = await gateLink('gate plan of levels-soft-gate v1 waits: ');
    // The plan's quorum is met by one approval; the soft rule keeps the gate waiting, and says why.
    const held = await answer(planLink, 'friend', { decision: 'APPROVE' });
    expect(held).toMatchObject({ status: 200, body: { status: 'pending', votes: 1 } });
    expect(held.body.held).toMatch(
      /two-sre-for-destructive.*soft-mandatory: a member of incident-commanders may override it with a reason/,
    );
    // Someone outside the group cannot override; an override needs a reason.
    expect(
      await answer(planLink, 'mallory', { decision: 'APPROVE', override: { reason: 'trust me' } }),
    ).toMatchObject({
      status: 403,
      body: {
        message: expect.stringContaining(
          'override refused: mallory may not override two-sre-for-destructive',
        ),
      },
    });
    expect((await answer(planLink, 'ivy', { decision: 'APPROVE', override: { reason: '' } })).status).toBe(
      400,
    );
    // The incident commander releases it, on the record.
    expect(
      await answer(planLink, 'ivy', {
        decision: 'APPROVE',
        override: { reason: 'incident 4711: the fix ships now' },
      }),
    ).toMatchObject({ status: 200, body: { status: 'decided' } });
    const stepLink = await gateLink('gate step wipe of levels-soft-gate v1 waits: ');
    expect(
      await answer(stepLink, 'ivy', { decision: 'APPROVE', override: { reason: 'incident 4711, step' } }),
    ).toMatchObject({ status: 200, body: { status: 'decided' } });
    const events = await untilEvent(executionArn, (e) => e.event === 'EXECUTION_COMPLETE');
    expect(events.at(-1)?.details).toMatchObject({ succeeded: true });
    const decisions = events.filter((e) => e.event === 'POLICY_DECISION').map((e) => e.details);
    expect(decisions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          action: 'CompleteGate',
          principal: 'friend',
          decision: 'deny',
          level: 'soft-mandatory',
        }),
        expect.objectContaining({
          action: 'CompleteGate',
          principal: 'ivy',
          decision: 'allow',
          overridden: {
            by: 'ivy',
            reason: 'incident 4711: the fix ships now',
            policies: ['two-sre-for-destructive'],
          },
          outcome: 'the gate is complete: its policy was overridden',
        }),
      ]),
    );
  });

  it('a soft-mandatory submission rule refuses with who may override; only they can, and PLAN_CREATED records it; advisory rules are recorded, never enforced', async () => {
    const refused = await post('dora', twoSteps('levels-soft-submit'));
    expect(refused.status, await refused.clone().text()).toBe(403);
    expect(((await refused.json()) as { message: string }).message).toMatch(
      /big-plans-need-sre.*soft-mandatory: a member of incident-commanders may override it/,
    );
    const selfOverride = await post('dora', twoSteps('levels-soft-submit'), {
      'x-plangate-policy-override': 'I need it',
    });
    expect(selfOverride.status).toBe(403);
    expect(((await selfOverride.json()) as { message: string }).message).toContain(
      'override refused: dora may not override big-plans-need-sre',
    );
    const released = await post('ivy', twoSteps('levels-soft-submit'), {
      'x-plangate-policy-override': 'release 12 is due today',
    });
    expect(released.status, await released.clone().text()).toBe(201);
    const { executionArn } = (await released.json()) as { executionArn: string };
    const created = (await eventsOf(executionArn)).find((e) => e.event === 'PLAN_CREATED');
    expect(created?.details).toMatchObject({
      submitted_by: 'ivy',
      policy_override: { by: 'ivy', reason: 'release 12 is due today', policies: ['big-plans-need-sre'] },
    });

    const http = {
      id: 'levels-advisory',
      version: 1,
      objective: 'Fetch the status page',
      sizePolicy: { minSteps: 1 },
      steps: [
        {
          id: 'get',
          description: 'Fetch the status page',
          tool: 'http',
          args: { method: 'GET', url: 'https://status.example.com/' },
          contract: { kind: 'command', command: 'test -d .' },
        },
      ],
    };
    const trial = await post('sam', http);
    expect(trial.status, await trial.clone().text()).toBe(201);
    const trialArn = ((await trial.json()) as { executionArn: string }).executionArn;
    expect((await eventsOf(trialArn)).find((e) => e.event === 'PLAN_CREATED')?.details).toMatchObject({
      policy_advisory: ['trial-no-http'],
    });
  });
});

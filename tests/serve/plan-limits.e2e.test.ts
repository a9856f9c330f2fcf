/**
 * Big plans through `plangate serve`'s real HTTP API (SigV4, the local API Gateway): a plan beyond
 * what one run can record is refused in a second, 400 with the limit it passes located at its
 * steps, and nothing is stored or deployed; a plan within the limits is accepted and gated.
 * (A 10,000-step chain and 10,000 independent steps were each answered 500 after 20 s: their
 * PLAN_CREATED was larger than a DynamoDB item, found only after validating, compiling and
 * deploying them.)
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListStateMachinesCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../lib/aws-local/api-gateway/local-issuer.ts';
import { MAX_EVENT_BYTES, queryEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { ApiClient } from '../support/api-client.ts';
import { echoChainPlan, echoStep } from '../support/echo-plan.ts';

const ALICE = {
  accessKeyId: 'AKIDALICELIMITS',
  secretAccessKey: 'alice-limits-secret-0123',
  arn: 'arn:aws:iam::123456789012:user/alice',
};
const issuer = new LocalIssuer();
const approval = { approvers: ['dana@example.test'], allowAutoApprove: false };

let platform: LocalPlatform;
let api: ApiClient;
const gates: ApprovalNotice[] = [];

beforeAll(async () => {
  const store = await mkdtemp(join(tmpdir(), 'plangate-limits-'));
  platform = await LocalPlatform.start({
    paths: storePaths(join(store, 'store')),
    cwd: store,
    identity: {
      mode: 'aws',
      principals: [ALICE],
      jwt: { issuer: issuer.issuer, audience: [issuer.audience], jwks: issuer.jwks },
    },
    onGate: (notice) => gates.push(notice),
  });
  api = new ApiClient(platform.url);
}, 60_000);

afterAll(async () => {
  await platform?.close();
});

const ids = (n: number) => Array.from({ length: n }, (_, i) => `s${i + 1}`);
const chain = (id: string, n: number) => echoChainPlan(id, ids(n), { approval });
const independent = (id: string, n: number) => ({ ...chain(id, n), steps: ids(n).map((s) => echoStep(s)) });

async function submit(plan: object) {
  const started = performance.now();
  const response = await api.request('POST', '/plans', {
    signWith: ALICE,
    body: JSON.stringify(plan),
    headers: { 'content-type': 'application/json' },
  });
  return { status: response.status, body: response.json(), ms: performance.now() - started };
}

describe('POST /plans with a plan too large for one run', () => {
  it.each([
    ['a 10,000-step chain', chain('big-chain', 10_000)],
    ['10,000 independent steps', independent('big-wide', 10_000)],
  ])(
    'refuses %s in seconds with the limit it passes, and stores nothing',
    async (_, plan) => {
      const { status, body, ms } = await submit(plan);
      expect(status, JSON.stringify(body).slice(0, 500)).toBe(400);
      expect(ms).toBeLessThan(5000);
      const problems = body.problems as {
        code: string;
        message: string;
        location: Record<string, unknown>;
      }[];
      expect(problems).toHaveLength(1);
      expect(problems[0]?.code).toBe('too-many-steps');
      expect(problems[0]?.message).toContain(`a journal record holds at most ${MAX_EVENT_BYTES} bytes`);
      expect(problems[0]?.message).toMatch(
        /the plan's 10000 steps are too many for one run.*about \d+ steps like these fit/,
      );
      expect(problems[0]?.location).toMatchObject({ file: 'plan', pointer: '/steps', line: 1 });
      const id = (plan as { id: string }).id;
      const machines = await platform.stack.sfn.send(new ListStateMachinesCommand({}));
      expect((machines.stateMachines ?? []).filter((m) => m.name?.includes(id))).toEqual([]);
      const deps = platform.stack.journalDeps();
      expect(await queryEvents(deps.dynamo, deps.tables.events, { index: 'byPlan', value: id })).toEqual([]);
    },
    60_000,
  );
});

it('accepts a plan within the limits, and asks its gate', async () => {
  const { status, body } = await submit(independent('within-limits', 1_500));
  expect(status, JSON.stringify(body).slice(0, 500)).toBe(201);
  const until = Date.now() + 20_000;
  while (!gates.some((g) => g.plan.id === 'within-limits') && Date.now() < until)
    await new Promise((r) => setTimeout(r, 50));
  expect(gates.find((g) => g.plan.id === 'within-limits')?.summary?.steps).toBe(1_500);
}, 60_000);

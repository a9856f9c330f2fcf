/**
 * `POST /plans {goal}` on `plangate serve`: answered 202 at once, drafted in the background by the
 * same planner code as the planner Lambda (the real `openai` client against a scripted
 * OpenAI-compatible server), then launched to its gate like a submitted plan. A goal that never
 * becomes a valid plan ends `failed` with its problems, and nothing is launched.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DraftResponseSchema } from '../../lib/launch/plans-api-schemas.ts';
import { FIXED_PLAN, FLAWED_PLAN, startOpenAiServer, type WireServer } from '../planner/wire-servers.ts';
import { workDir } from './cli.ts';
import { startServe } from './serve-process.ts';

const GOAL = 'Add a health check endpoint to the service and prove it answers';
const servers: WireServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serveWithPlanner(script: Parameters<typeof startOpenAiServer>[0]) {
  const model = await startOpenAiServer(script);
  servers.push(model);
  const store = await mkdtemp(join(tmpdir(), 'plangate-serve-goal-'));
  const serve = startServe(
    ['--identity', 'header', '--store', store, '--base-url', `${model.url}/v1`, '--model', 'scripted'],
    await workDir(),
  );
  const url = await serve.line(() => true);
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', 'x-plangate-user': 'dana', ...init.headers },
    });
  return { model, serve, url, call };
}

async function draftWhenDone(call: (path: string) => Promise<Response>, location: string) {
  for (let i = 0; i < 300; i++) {
    const draft = DraftResponseSchema.parse(await (await call(location)).json());
    if (draft.status === 'launched' || draft.status === 'failed') return draft;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`draft ${location} did not finish`);
}

describe('POST /plans {goal}', () => {
  it('answers 202, drafts in the background through the validator, and launches the plan to its gate', async () => {
    const { serve, call, model } = await serveWithPlanner([
      { plan: FLAWED_PLAN, inputTokens: 900, outputTokens: 200 },
      { plan: FIXED_PLAN, inputTokens: 1200, outputTokens: 300 },
    ]);
    try {
      const accepted = await call('/plans', {
        method: 'POST',
        body: JSON.stringify({ goal: GOAL, context: 'The service is a Node.js app.' }),
      });
      expect(accepted.status).toBe(202);
      const body = (await accepted.json()) as { draftId: string; status: string; location: string };
      expect(body).toMatchObject({ status: 'planning', location: `/drafts/${body.draftId}` });
      expect(accepted.headers.get('location')).toBe(body.location);

      const draft = await draftWhenDone(call, body.location);
      expect(draft).toMatchObject({
        status: 'launched',
        goal: GOAL,
        submittedBy: 'dana',
        provider: 'openai',
        model: 'scripted',
        outcome: 'converged',
        // The model does not choose the version: a first draft is version 1.
        plan: { id: 'health-check', version: 1 },
      });
      // Round 1's located problems went back to the model; round 2 had none.
      expect(draft.rounds).toHaveLength(2);
      expect(draft.rounds[0]?.problems.join('\n')).toMatch(/cycle|teleport/);
      expect(draft.rounds[1]?.problems).toEqual([]);
      expect(JSON.stringify(model.requests[0])).toContain('The service is a Node.js app.');

      await serve.line((l) => l.startsWith('gate plan of health-check v1 waits: '));
      const events = (await (
        await call(`/executions/${encodeURIComponent(draft.executionArn as string)}/events`)
      ).json()) as { events: { event: string; details: Record<string, unknown> }[] };
      expect(events.events[0]).toMatchObject({
        event: 'PLAN_CREATED',
        details: {
          submitted_by: 'dana',
          planner: { goal: GOAL, provider: 'openai', model: 'scripted', rounds: 2, input_tokens: 2100 },
        },
      });
      // A planned plan waits for a person even though the model asked for auto-approval.
      expect(events.events.map((e) => e.event)).not.toContain('GATE_APPROVED');
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  }, 90_000);

  it('ends a goal that never becomes a valid plan as failed, with its problems, launching nothing', async () => {
    const { serve, call } = await serveWithPlanner([{ plan: FLAWED_PLAN }]);
    try {
      const accepted = await call('/plans', { method: 'POST', body: JSON.stringify({ goal: GOAL }) });
      const { location } = (await accepted.json()) as { location: string };
      const draft = await draftWhenDone(call, location);
      expect(draft).toMatchObject({ status: 'failed', outcome: 'max-rounds' });
      expect(draft.rounds).toHaveLength(4);
      expect(draft.problems?.length).toBeGreaterThan(0);
      expect(draft.executionArn).toBeUndefined();
      await serve.line((l) => l.startsWith(`draft ${location.split('/').at(-1)}: failed`));
      expect(serve.lines.some((l) => l.startsWith('gate '))).toBe(false);

      const bad = await call('/plans', { method: 'POST', body: JSON.stringify({ goal: '  ', extra: 1 }) });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toBe('invalid goal request');
      expect((await call('/drafts/no-such-draft')).status).toBe(404);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  }, 90_000);
});

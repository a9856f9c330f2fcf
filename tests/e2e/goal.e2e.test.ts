/**
 * `plangate run --goal` end to end: a scripted OpenAI-compatible server (the real `openai` client
 * talks to it) drafts the plan; the person asks a question at the gate; the question goes back to
 * the planner, whose revision (same id, version 2, a new digest) comes back to the gate, is
 * approved and runs. Each version is its own execution with PLAN_CREATED {planner}.
 */
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FIXED_PLAN, startOpenAiServer, type WireServer } from '../planner/wire-servers.ts';
import { openApprovalPage } from '../support/approval-session.ts';
import { CliRun, storedEvents, verifyChain, workDir } from './cli.ts';

const GOAL = 'Add a health check endpoint to the service and prove it answers';
const REVISED = {
  ...FIXED_PLAN,
  objective: 'Add a health check endpoint on port 8080 to the service and prove it answers',
  steps: FIXED_PLAN.steps.map((s) =>
    (s as { id: string }).id === 'document'
      ? {
          ...s,
          args: { command: 'mkdir -p docs && echo "GET /health on port 8080" > docs/health.md' },
          contract: { kind: 'command', command: 'grep -q 8080 docs/health.md' },
        }
      : s,
  ),
};

let server: WireServer;
beforeAll(async () => {
  server = await startOpenAiServer([
    { plan: FIXED_PLAN, inputTokens: 1200, outputTokens: 300 },
    { plan: REVISED, inputTokens: 1500, outputTokens: 320 },
  ]);
});
afterAll(async () => {
  await server.close();
});

it('plans, goes back to the planner with the question asked at the gate, and runs the approved revision', async () => {
  const cwd = await workDir();
  const run = new CliRun(
    [
      'run',
      '--solo',
      '--goal',
      GOAL,
      '--base-url',
      `${server.url}/v1`,
      '--model',
      'scripted',
      '--json',
      '--time-scale',
      '0.01',
    ],
    cwd,
  );
  await run.until(
    'the first gate',
    () => run.count('GATE_APPROVAL_REQUESTED') === 1 && run.stderr.includes('ask <question>'),
  );
  const first = run.executionArn;
  run.answer('ask Which port does it answer on?');
  await run.until(
    'the revision at the gate',
    () => run.count('GATE_APPROVAL_REQUESTED') === 1 && run.stderr.match(/Execution: arn:/g)?.length === 2,
    30_000,
  );
  const second = [...run.stderr.matchAll(/Execution: (arn:\S+)/g)].map((m) => m[1]).at(-1) as string;
  expect(second).not.toBe(first);
  await run.until('the revision prompt', () => (run.stderr.match(/ask <question>/g)?.length ?? 0) >= 2);
  run.answer('approve');
  expect(await run.exited).toBe(0);
  expect(existsSync(`${cwd}/docs/health.md`)).toBe(true);

  const v1 = await storedEvents(cwd, first);
  expect(v1[0]).toMatchObject({
    event: 'PLAN_CREATED',
    planVersion: 1,
    details: {
      planner: {
        goal: GOAL,
        provider: 'openai',
        model: 'scripted',
        rounds: 1,
        input_tokens: 1200,
        output_tokens: 300,
      },
    },
  });
  expect(v1.find((e) => e.event === 'GATE_REJECTED')?.details.reason).toBe(
    'clarification requested: Which port does it answer on?',
  );
  const v2 = await storedEvents(cwd, second);
  expect(v2[0]).toMatchObject({
    event: 'PLAN_CREATED',
    planId: v1[0]?.planId,
    planVersion: 2,
    details: { planner: { revision_of: v1[0]?.planDigest, feedback: 'Which port does it answer on?' } },
  });
  expect(v2[0]?.planDigest).not.toBe(v1[0]?.planDigest);
  expect(v2.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
  expect(verifyChain(v1).ok && verifyChain(v2).ok).toBe(true);
  // The planner saw the question, with the plan it had proposed.
  expect(JSON.stringify(server.requests[1])).toContain('Which port does it answer on?');
}, 90_000);

it('sends the plan back to the planner when the question is asked on the approval page', async () => {
  const pageServer = await startOpenAiServer([
    { plan: FIXED_PLAN, inputTokens: 1200, outputTokens: 300 },
    { plan: REVISED, inputTokens: 1500, outputTokens: 320 },
  ]);
  try {
    const cwd = await workDir();
    const run = new CliRun(
      [
        'run',
        '--solo',
        '--goal',
        GOAL,
        '--base-url',
        `${pageServer.url}/v1`,
        '--model',
        'scripted',
        '--json',
      ],
      cwd,
    );
    await run.until('the first gate', () => /open (http:\S+\/approvals\/\S+)/.test(run.stderr));
    const first = run.executionArn;
    const link = /open (http:\S+\/approvals\/\S+)/.exec(run.stderr)?.[1] as string;
    const page = await openApprovalPage(link);
    const digest = /name="digest" value="([^"]+)"/.exec(page.html)?.[1] as string;
    const answered = await page.answer({
      digest,
      decision: 'ASK_FOR_CLARIFICATION',
      question: 'Which port?',
    });
    expect(answered.status).toBe(200);
    expect(await answered.text()).toContain('Sent back to the planner');
    await run.until(
      'the revision at the gate',
      () => run.stderr.match(/Execution: arn:/g)?.length === 2,
      30_000,
    );
    await run.until('the revision prompt', () => (run.stderr.match(/ask <question>/g)?.length ?? 0) >= 2);
    run.answer('approve');
    expect(await run.exited).toBe(0);

    const v1 = await storedEvents(cwd, first);
    expect(v1.find((e) => e.event === 'GATE_REJECTED')).toMatchObject({
      details: { reason: 'clarification requested: Which port?', approver: userInfo().username },
    });
    const second = [...run.stderr.matchAll(/Execution: (arn:\S+)/g)].map((m) => m[1]).at(-1) as string;
    const v2 = await storedEvents(cwd, second);
    expect(v2[0]).toMatchObject({ planVersion: 2, details: { planner: { feedback: 'Which port?' } } });
    expect(v2.at(-1)).toMatchObject({ event: 'EXECUTION_COMPLETE', details: { succeeded: true } });
    expect(JSON.stringify(pageServer.requests[1])).toContain('Which port?');
  } finally {
    await pageServer.close();
  }
}, 90_000);

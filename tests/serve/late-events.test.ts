/**
 * Nothing is journaled after a run's EXECUTION_COMPLETE, on the real local stack: a hung step
 * (`sleep 300`, `timeoutSeconds: 1`) is timed out by the engine, its recipe retries it and gives
 * up, and the run ends FAILED while an attempt's runner may still be recording its own timeout
 * (the engine's TimeoutSeconds and the runner's process timeout are the same, so they race; on
 * main the runner's TASK_FAILED, FAILURE_DETECTED and FAILURE_CLASSIFIED came after the end);
 * once the runners are done, the journal still ends with EXECUTION_COMPLETE.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchPlan } from '../../lib/launch/launch-plan.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { approvalsFor } from '../../lib/runtime/gate/gate.ts';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { LocalRunStack } from '../../lib/serve/local-stack.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';

const plan = PlanSchema.parse({
  id: 'hung-step',
  version: 1,
  objective: 'Run one command that hangs past its timeout, retried once, then the run fails',
  sizePolicy: { minSteps: 1 },
  recovery: { transient: { maxAttempts: 1, intervalSeconds: 0, escalation: 'abort' } },
  steps: [
    {
      id: 'hang',
      description: 'Sleep far past the step timeout',
      tool: 'shell',
      args: { command: 'sleep 300' },
      timeoutSeconds: 1,
      contract: { kind: 'command', command: 'true' },
    },
  ],
});

let dir: string;
let stack: LocalRunStack;
const signingKey = Buffer.alloc(32, 5);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-late-'));
  let approvals: ReturnType<typeof approvalsFor> | undefined;
  stack = await LocalRunStack.start({
    paths: storePaths(join(dir, 'store')),
    signingKey,
    cwd: dir,
    notify: async (notice) => {
      if (notice.kind !== 'plan') return;
      setImmediate(
        () =>
          void approvals?.answer(notice.approvalId, {
            by: 'tester',
            digest: notice.plan.digest,
            decision: { decision: 'APPROVE' },
          }),
      );
    },
  });
  approvals = approvalsFor({ ...stack.journalDeps(), sfn: stack.sfn, signingKey });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await rm(dir, { recursive: true, force: true });
});

it('journals nothing after EXECUTION_COMPLETE when a hung step outlives its timeout', async () => {
  const { executionArn } = await launchPlan({
    sfn: stack.sfn,
    plan,
    roleArn: LocalRunStack.ROLE_ARN,
    substitutions: LocalRunStack.substitutions(),
    namePrefix: 'plangate',
    tracing: false,
    journal: stack.journalDeps(),
  });
  let status: string | undefined;
  for (let i = 0; i < 400 && (status === undefined || status === 'RUNNING'); i++) {
    status = (await stack.sfn.send(new DescribeExecutionCommand({ executionArn }))).status;
    if (status === 'RUNNING') await new Promise((r) => setTimeout(r, 50));
  }
  expect(status).toBe('FAILED');
  // Long enough for the last attempt's runner to kill its process and answer.
  await new Promise((r) => setTimeout(r, 3000));
  const events = await readEvents(
    stack.journalDeps().dynamo,
    stack.journalDeps().tables.events,
    executionArn,
  );
  const names = events.map((e) => e.event);
  expect(names).toContain('FAILURE_CLASSIFIED');
  expect(names.at(-1), names.join(' ')).toBe('EXECUTION_COMPLETE');
  expect(names.filter((n) => n === 'EXECUTION_COMPLETE')).toHaveLength(1);
  expect(verifyChain(events).ok).toBe(true);
}, 30_000);

/**
 * Launching plans on the local stack, as bench/plan-scale.ts found they must work: a split plan
 * (the compiler's child machines) runs to the end and reports every step (the parent's ledger keeps
 * only the entries it still reads, so the summary also counts what the parts recorded: a 500-step
 * chain once said 499 failed), and one plan launched many times at once deploys once and runs each.
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

const STEPS = 12;
const plan = PlanSchema.parse({
  id: 'split-chain',
  version: 1,
  objective: `A chain of ${STEPS} echo steps, split into parts, each proven by an assert contract`,
  sizePolicy: { minSteps: 1 },
  steps: Array.from({ length: STEPS }, (_, i) => ({
    id: `s${i + 1}`,
    description: `Echo s${i + 1}`,
    dependsOn: i === 0 ? [] : [`s${i}`],
    tool: 'echo',
    args: { message: `s${i + 1}` },
    contract: { kind: 'assert', expression: `output.message = "s${i + 1}"` },
  })),
  postconditions: [
    {
      id: 'first-step-said-s1',
      description: 'The first step of the first part said s1',
      contract: { kind: 'assert', expression: 'steps.s1.message = "s1"' },
    },
  ],
});

let dir: string;
let stack: LocalRunStack;
const signingKey = Buffer.alloc(32, 3);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-split-'));
  let approvals: ReturnType<typeof approvalsFor> | undefined;
  stack = await LocalRunStack.start({
    paths: storePaths(join(dir, 'store')),
    signingKey,
    cwd: dir,
    notify: async (notice) => {
      if (notice.kind !== 'plan')
        throw new Error(`unexpected ${notice.kind} gate: ${JSON.stringify(notice.failure)}`);
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

async function statusOf(executionArn: string): Promise<string | undefined> {
  let status: string | undefined;
  for (let i = 0; i < 600 && (status === undefined || status === 'RUNNING'); i++) {
    status = (await stack.sfn.send(new DescribeExecutionCommand({ executionArn }))).status;
    if (status === 'RUNNING') await new Promise((r) => setTimeout(r, 50));
  }
  return status;
}

const launch = (compileOptions?: { maxHistoryEvents: number }) =>
  launchPlan({
    sfn: stack.sfn,
    plan,
    roleArn: LocalRunStack.ROLE_ARN,
    substitutions: LocalRunStack.substitutions(),
    namePrefix: 'plangate',
    tracing: false,
    journal: stack.journalDeps(),
    ...(compileOptions ? { compileOptions } : {}),
  });

it('launches one plan five times at once: one deployment, five runs that succeed', async () => {
  const launched = await Promise.all(Array.from({ length: 5 }, () => launch()));
  expect(new Set(launched.map((l) => l.deployed.stateMachineVersionArn)).size).toBe(1);
  expect(launched.every((l) => l.deployed.stateMachineVersionArn.includes(':stateMachine:'))).toBe(true);
  for (const { executionArn } of launched) expect(await statusOf(executionArn)).toBe('SUCCEEDED');
}, 60_000);

it('runs every part and counts every step completed', async () => {
  const launched = await launchPlan({
    sfn: stack.sfn,
    plan,
    roleArn: LocalRunStack.ROLE_ARN,
    substitutions: LocalRunStack.substitutions(),
    namePrefix: 'plangate',
    tracing: false,
    journal: stack.journalDeps(),
    compileOptions: { maxHistoryEvents: 120 },
  });
  expect(launched.deployed.parts.length).toBeGreaterThan(0);
  let status: string | undefined;
  for (let i = 0; i < 600 && (status === undefined || status === 'RUNNING'); i++) {
    status = (await stack.sfn.send(new DescribeExecutionCommand({ executionArn: launched.executionArn })))
      .status;
    if (status === 'RUNNING') await new Promise((r) => setTimeout(r, 50));
  }
  const events = await readEvents(
    stack.data.clients.doc,
    stack.data.tableNames.events,
    launched.executionArn,
  );
  const complete = events.find((e) => e.event === 'EXECUTION_COMPLETE');
  expect(complete?.details).toMatchObject({
    succeeded: true,
    summary: { completed: STEPS, failed: 0, skipped: 0 },
  });
  expect(status).toBe('SUCCEEDED');
  expect(events.filter((e) => e.event === 'TASK_COMPLETED')).toHaveLength(STEPS);
  expect(verifyChain(events).ok).toBe(true);
}, 60_000);

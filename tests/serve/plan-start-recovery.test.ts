/**
 * What start-up recovery does with each PLAN_CREATED (lib/launch/plan-start-recovery.ts), on the
 * local stack: a start a crash cut short is made as launched (rehearseRollback too) and journaled
 * once; one that can never be made closes the plan with the reason, once; an execution the engine
 * knows, or whose machine journaled anything, is left alone. The crash itself, through the real
 * `plangate serve`: tests/e2e/submit-crash-points.e2e.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchPlan } from '../../lib/launch/launch-plan.ts';
import { recoverPlanStarts } from '../../lib/launch/plan-start-recovery.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { journalFor } from '../../lib/runtime/deps.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { LocalRunStack } from '../../lib/serve/local-stack.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const ZERO = `sha256:${'0'.repeat(64)}`;
let dir: string;
let stack: LocalRunStack;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-start-recovery-'));
  stack = await LocalRunStack.start({
    paths: storePaths(join(dir, 'store')),
    signingKey: Buffer.alloc(32, 5),
    cwd: dir,
    notify: async () => {},
  });
});
afterAll(async () => {
  await stack.close({ drainMs: 0 });
  await rm(dir, { recursive: true, force: true });
});

const deps = () => ({ ...stack.journalDeps(), sfn: stack.sfn });
const events = (arn: string) => readEvents(stack.data.clients.doc, stack.data.tableNames.events, arn);

it('starts a journaled plan the engine never started, as launched, and says so once; leaves running ones alone', async () => {
  const launched = await launchPlan({
    plan: PlanSchema.parse(echoChainPlan('recover-running', ['only'])),
    sfn: stack.sfn,
    roleArn: LocalRunStack.ROLE_ARN,
    substitutions: LocalRunStack.substitutions(),
    journal: stack.journalDeps(),
    submittedBy: 'carol',
    rehearseRollback: true,
  });
  const [created] = await events(launched.executionArn);
  expect(created?.details.rehearse_rollback).toBe(true);
  const machine = (created?.details.integrity as { machines: string[] } | undefined)?.machines[0];
  // The same PLAN_CREATED, for an execution whose start a crash cut short.
  const lost = `${launched.executionArn}-lost`;
  await journalFor(stack.journalDeps()).append({
    executionId: lost,
    planId: 'recover-running',
    planVersion: 1,
    planDigest: String(created?.planDigest),
    event: 'PLAN_CREATED',
    details: created?.details ?? {},
  });
  expect(await recoverPlanStarts(deps())).toBe(1);
  const started = await stack.sfn.send(new DescribeExecutionCommand({ executionArn: lost }));
  expect(started).toMatchObject({ stateMachineVersionArn: machine, input: '{"rehearseRollback":true}' });
  expect((await events(lost)).slice(0, 2).map((e) => [e.event, e.details.outcome])).toEqual([
    ['PLAN_CREATED', undefined],
    ['PLAN_START_RECOVERED', 'started'],
  ]);
  // Both now known to the engine: nothing to do again.
  expect(await recoverPlanStarts(deps())).toBe(0);
  expect((await events(lost)).filter((e) => e.event === 'PLAN_START_RECOVERED')).toHaveLength(1);
  expect((await events(launched.executionArn)).filter((e) => e.event === 'PLAN_START_RECOVERED')).toEqual([]);
});

it('closes a plan whose start can never be made, with the reason, once', async () => {
  const arn = 'arn:aws:states:us-east-1:123456789012:execution:plangate-gone:never-started';
  await journalFor(stack.journalDeps()).append({
    executionId: arn,
    planId: 'gone',
    planVersion: 1,
    planDigest: ZERO,
    event: 'PLAN_CREATED',
    details: {
      task_count: 1,
      dependencies: { only: [] },
      integrity: {
        definition_hash: ZERO,
        machines: ['arn:aws:states:us-east-1:123456789012:stateMachine:plangate-gone:1'],
        policy_hash: ZERO,
      },
    },
  });
  expect(await recoverPlanStarts(deps())).toBe(1);
  const recovered = (await events(arn)).filter((e) => e.event === 'PLAN_START_RECOVERED');
  expect(recovered.map((e) => e.details)).toEqual([
    { outcome: 'closed', reason: expect.stringContaining('StateMachineDoesNotExist') },
  ]);
  expect(await recoverPlanStarts(deps())).toBe(0);
});

// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are literal `${...}` strings
/**
 * The Lambda handlers against the local stack: dynalite and the local event bus through the real
 * SDK clients. SendTaskSuccess goes, through the real SFNClient, to a small recording endpoint
 * that stands in for Step Functions' task-token API.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as makeClassifier } from '../../lambdas/classifier.ts';
import { makeHandler as makeChecker } from '../../lambdas/contract-checker.ts';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { makeHandler as makeJoin } from '../../lambdas/join.ts';
import { makeHandler as makeRunner } from '../../lambdas/step-runner.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import type { BusEvent } from '../../lib/aws-local/eventbus.ts';
import { canonicalJson } from '../../lib/plan/digest.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { type HarnessDeps, journalFor } from '../../lib/runtime/deps.ts';
import { approvalView } from '../../lib/runtime/gate/approval-view.ts';
import { Approvals } from '../../lib/runtime/gate/approvals.ts';
import { type ApprovalNotice, approvalsFor, type GateDeps } from '../../lib/runtime/gate/gate.ts';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { EventType, RunnerRequest, RunnerResult, StepSketch } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';
import { type RecordingSfn, startRecordingSfn } from './recording-sfn.ts';

let dir: string;
let plane: LocalDataPlane;
let recorder: RecordingSfn;
let sfn: SFNClient;
const published: BusEvent[] = [];
let deps: HarnessDeps;

const plan = { id: 'demo', version: 1, digest: 'sha256:feed' };

/** The approval view a compiled gate holds of one shell step per id (a modification is checked against it). */
function shellView(ids: readonly string[], requiresApproval = false) {
  return approvalView(
    PlanSchema.parse({
      id: plan.id,
      objective: 'Build and ship',
      steps: ids.map((id) => ({
        id,
        description: `Run ${id}`,
        tool: 'shell',
        args: { command: `make ${id}` },
        contract: { kind: 'command', command: 'true' },
        requiresApproval,
      })),
    }),
  );
}
/** The plan's secret declarations, as the compiled machine sends them (`$secrets`). */
const SECRETS = [{ name: 'apiToken', source: 'env' as const, ref: 'API_TOKEN' }];
const TOKEN = `AQ${'t'.repeat(300)}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-handlers-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  plane.bus.subscribe({ source: ['plangate'] }, (e) => {
    published.push(e);
  });
  recorder = await startRecordingSfn();
  sfn = recorder.client;
  deps = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    tools: builtinRegistry(),
    cwd: dir,
    env: { PATH: process.env.PATH, API_TOKEN: 'tok-very-secret-123' },
  };
});
afterAll(async () => {
  await recorder.close();
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

const runnerReq = (executionId: string, over: Partial<RunnerRequest> = {}): RunnerRequest => ({
  plan,
  executionId,
  stepId: 'build',
  index: 1,
  total: 2,
  description: 'Build the report',
  tool: 'shell',
  subscriptions: [],
  args: { command: 'echo built' },
  argOverrides: {},
  secrets: SECRETS,
  inputs: {},
  dependsOn: [],
  skip: false,
  attempt: 1,
  outputs: [],
  timeoutSeconds: 30,
  inlineOutputLimitBytes: 8192,
  dispatch: false,
  ...over,
});

/** A check of step `build` ([Task 1/2]) after `run`, with a command contract. */
const checkReq = (executionId: string, run: RunnerResult, command: string) => ({
  plan,
  executionId,
  stepId: 'build',
  index: 1,
  total: 2,
  description: 'Build the report',
  attempt: run.attempt,
  run,
  contract: { kind: 'command' as const, command, expectExitCode: 0, timeoutSeconds: 10 },
});

const events = async (executionId: string) =>
  readEvents(plane.clients.doc, plane.tableNames.events, executionId);

/** Writes `history` ([task, event, details], in order) as the journal of execution `id` of `plan`. */
async function appendHistory(
  id: string,
  history: readonly [string, EventType, Record<string, unknown>][],
): Promise<void> {
  const journal = journalFor(deps);
  for (const [task_id, event, details] of history)
    await journal.append({
      executionId: id,
      planId: plan.id,
      planVersion: plan.version,
      planDigest: plan.digest,
      task_id,
      event,
      details,
    });
}

describe('step runner + contract checker', () => {
  it('runs a step, and only the contract completes it (with evidence)', async () => {
    const runner = makeRunner(deps);
    const checker = makeChecker(deps);
    const run = await runner(
      runnerReq('exec-ok', {
        args: {
          command:
            'echo "report=r.txt" >> "$PLANGATE_OUTPUT"; echo "${secrets.apiToken}" > token.txt; echo ${secrets.apiToken}',
        },
        outputs: ['report'],
      }),
    );
    expect(run).toMatchObject({ status: 'succeeded', output: { report: 'r.txt' } });
    const checked = await checker(checkReq('exec-ok', run as RunnerResult, 'test -s token.txt && echo fine'));
    expect(checked).toMatchObject({
      status: 'completed',
      output: { report: 'r.txt' },
      evidence: { passed: true, kind: 'command' },
    });
    const stored = await events('exec-ok');
    expect(stored.map((e) => e.event)).toEqual(['TASK_STARTED', 'TASK_COMPLETED']);
    expect(stored[1]?.details).toMatchObject({
      progress: expect.stringMatching(/^\[Task 1\/2\] ✓ Build the report/),
    });
    expect(verifyChain(stored)).toEqual({ ok: true, count: 2 });
  });

  it('refuses a premature completion: the step says done, the contract fails → TASK_FAILED, ContractFailed', async () => {
    const run = await makeRunner(deps)(
      runnerReq('exec-premature', { args: { command: 'echo "all tests pass"' } }),
    );
    await expect(
      makeChecker(deps)(checkReq('exec-premature', run as RunnerResult, 'test -f never-made.txt')),
    ).rejects.toMatchObject({ name: 'Plangate.ContractFailed' });
    const stored = await events('exec-premature');
    expect(stored.map((e) => e.event)).toEqual([
      'TASK_STARTED',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
    ]);
    expect(stored.at(-1)?.details).toEqual({ failure_type: 'logic', error: 'Plangate.ContractFailed' });
  });

  it('classifies a tool failure, records TASK_FAILED, FAILURE_DETECTED, FAILURE_CLASSIFIED, never leaks the secret', async () => {
    await expect(
      makeRunner(deps)(
        runnerReq('exec-fail', { args: { command: 'echo "denied for ${secrets.apiToken}" >&2; exit 126' } }),
      ),
    ).rejects.toMatchObject({ name: 'Plangate.Permission' });
    const stored = await events('exec-fail');
    expect(stored.map((e) => e.event)).toEqual([
      'TASK_STARTED',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
    ]);
    expect(stored[2]?.details).toMatchObject({ error: 'Plangate.Permission', attempt: 1 });
    expect(stored[3]?.details).toEqual({ failure_type: 'permission', error: 'Plangate.Permission' });
    expect(JSON.stringify(stored)).not.toContain('tok-very-secret-123');
  });

  it('resolves only the secrets the request declares (the plan travels in the payload, not the environment)', async () => {
    await expect(
      makeRunner(deps)(
        runnerReq('exec-undeclared', { secrets: [], args: { command: 'echo ${secrets.apiToken}' } }),
      ),
    ).rejects.toMatchObject({
      name: 'Plangate.InvalidInput',
      message: expect.stringContaining('not declared'),
    });
  });

  it('gives an assertion the plan context and the outputs of the steps it names', async () => {
    const check = (expression: string, executionId: string) =>
      makeChecker(deps)({
        plan,
        executionId,
        stepId: 'verify',
        index: 2,
        total: 2,
        description: 'Verify the build',
        context: { env: 'prod' },
        inputs: { build: { status: 'completed', output: { report: 'r.txt' } } },
        attempt: 1,
        run: { stepId: 'verify', status: 'succeeded', output: { ok: true }, attempt: 1, durationMs: 1 },
        contract: { kind: 'assert', expression },
      });
    expect(
      await check('output.ok and context.env = "prod" and steps.build.report = "r.txt"', 'exec-assert'),
    ).toMatchObject({ status: 'completed' });
    await expect(check('context.env = "dev"', 'exec-assert-no')).rejects.toMatchObject({
      name: 'Plangate.ContractFailed',
    });
    const failed = (await events('exec-assert-no')).find((e) => e.event === 'TASK_FAILED');
    expect(failed?.details.progress).toMatch(/^\[Task 2\/2\] ✗ Verify the build/);
  });

  it('skips and blocks without running anything', async () => {
    expect(await makeRunner(deps)(runnerReq('exec-skip', { skip: true }))).toMatchObject({
      status: 'skipped',
    });
    expect(
      await makeRunner(deps)(
        runnerReq('exec-skip', {
          stepId: 'deploy',
          dependsOn: ['build', 'lint'],
          inputs: { build: { status: 'skipped' } },
        }),
      ),
    ).toMatchObject({ status: 'blocked', blockedBy: ['build', 'lint'] });
    expect((await events('exec-skip')).map((e) => e.event)).toEqual(['TASK_SKIPPED', 'TASK_BLOCKED']);
  });

  it('says who skipped a step: the plan gate, a person at its own gate, or nobody in time', async () => {
    const runner = makeRunner(deps);
    await runner(runnerReq('exec-skip-why', { stepId: 'a', skip: true }));
    await runner(
      runnerReq('exec-skip-why', { stepId: 'b', skip: true, rejection: { by: 'alice', reason: 'freeze' } }),
    );
    await runner(
      runnerReq('exec-skip-why', {
        stepId: 'c',
        skip: true,
        rejection: { by: 'plangate-timeout', reason: 'timed out' },
      }),
    );
    expect((await events('exec-skip-why')).map((e) => [e.task_id, e.details.reason])).toEqual([
      ['a', 'skipped by an approver at the plan gate'],
      ['b', 'skipped by an approver (alice): freeze'],
      ['c', 'timed out: nobody approved in time'],
    ]);
  });

  it('rejects a malformed request at the edge, located, writing nothing', async () => {
    await expect(makeRunner(deps)({ ...runnerReq('exec-bad'), index: 0 })).rejects.toMatchObject({
      name: 'Plangate.InvalidInput',
      message: expect.stringContaining('"location":"index"'),
    });
    expect(await events('exec-bad')).toEqual([]);
  });

  it('stores large outputs by reference and reads them back for the next step', async () => {
    const run = (await makeRunner(deps)(
      runnerReq('exec-big', {
        args: { command: 'head -c 20000 /dev/zero | tr "\\0" x' },
        inlineOutputLimitBytes: 1024,
      }),
    )) as RunnerResult;
    expect(run.outputRef?.uri).toMatch(/^dynamodb:\/\//);
    const next = await makeRunner(deps)(
      runnerReq('exec-big', {
        stepId: 'count',
        tool: 'shell',
        args: { command: 'echo -n "${steps.build.stdout}" | wc -c' },
        dependsOn: ['build'],
        inputs: { build: { status: 'completed', outputRef: run.outputRef } },
      }),
    );
    expect((next.output as { stdout: string }).stdout.trim()).toBe('20000');
  });

  it("hands an agent the values of earlier steps in its task text, a stored output's too", async () => {
    const run = (await makeRunner(deps)(
      runnerReq('exec-task-text', {
        args: { command: 'head -c 5000 /dev/zero | tr "\\0" x' },
        inlineOutputLimitBytes: 1024,
      }),
    )) as RunnerResult;
    const review = runnerReq('exec-task-text', {
      stepId: 'review',
      tool: undefined,
      target: 'reviewer',
      task: 'Review ${steps.build.exitCode} and ${steps.build.stdout} in ${context.env}',
      args: {},
      context: { env: 'staging' },
      dependsOn: ['build'],
      inputs: { build: { status: 'completed', outputRef: run.outputRef } },
    });
    const dispatched = (await makeRunner(deps)({ ...review, dispatch: true })) as RunnerResult;
    expect(dispatched.handoff?.task).toBe(`Review 0 and ${'x'.repeat(5000)} in staging`);
    // In-process, the agent tool reads the same resolved task.
    const inProcess = (await makeRunner({
      ...deps,
      env: { ...deps.env, PLANGATE_AGENT_COMMAND: 'cat | head -c 12' },
    })(review)) as RunnerResult;
    expect(inProcess.output).toMatchObject({ response: 'Review 0 and' });
  });

  it('records a retry that passes as RECOVERY_APPLIED retry_<class> (recipe) or escalation_retry (person) → success, once', async () => {
    const flaky =
      'n=$(cat tries 2>/dev/null || echo 0); echo $((n+1)) > tries; [ $n -ge 1 ] || { echo "Connection timeout" >&2; exit 75; }';
    const check = (executionId: string, run: RunnerResult) =>
      makeChecker(deps)(checkReq(executionId, run, 'test -f tries'));
    const retried = async (executionId: string, between?: () => Promise<unknown>) => {
      await rm(join(dir, 'tries'), { force: true });
      await expect(
        makeRunner(deps)(runnerReq(executionId, { args: { command: flaky } })),
      ).rejects.toMatchObject({ name: 'Plangate.Transient' });
      await between?.();
      const run = (await makeRunner(deps)(
        runnerReq(executionId, { args: { command: flaky }, attempt: 2 }),
      )) as RunnerResult;
      expect(run.attempt).toBe(2);
      await check(executionId, run);
      return events(executionId);
    };

    const stored = await retried('exec-retry-ok');
    expect(stored.map((e) => e.event)).toEqual([
      'TASK_STARTED',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
      'TASK_STARTED',
      'RECOVERY_APPLIED',
      'TASK_COMPLETED',
    ]);
    expect(stored[3]?.details).toEqual({ failure_type: 'transient', error: 'Plangate.Transient' });
    expect(stored[4]?.details.attempt).toBe(2);
    expect(stored[5]?.details).toEqual({ recipe_name: 'retry_transient', outcome: 'success' });

    // After an escalation a person decided to retry: the outcome is the person's escalation_retry, not the recipe's.
    const byPerson = await retried('exec-retry-person', () =>
      journalFor(deps).append({
        executionId: 'exec-retry-person',
        planId: plan.id,
        planVersion: plan.version,
        planDigest: plan.digest,
        task_id: 'build',
        event: 'RECOVERY_ESCALATION',
        details: { reason: 'answered by ops', user_decision: 'RETRY', decided_by: 'person' },
      }),
    );
    expect(byPerson.map((e) => e.event).slice(-3)).toEqual([
      'TASK_STARTED',
      'RECOVERY_APPLIED',
      'TASK_COMPLETED',
    ]);
    expect(byPerson.filter((e) => e.event === 'RECOVERY_APPLIED').map((e) => e.details)).toEqual([
      { recipe_name: 'escalation_retry', outcome: 'success' },
    ]);
    // An escalation still waiting for its answer is nobody's retry.
    const open = await retried('exec-retry-open', () =>
      journalFor(deps).append({
        executionId: 'exec-retry-open',
        planId: plan.id,
        planVersion: plan.version,
        planDigest: plan.digest,
        task_id: 'build',
        event: 'RECOVERY_ESCALATION',
        details: { reason: 'waiting for ops' },
      }),
    );
    expect(open.map((e) => e.event)).not.toContain('RECOVERY_APPLIED');

    // A first attempt that passes reads nothing back and records no recovery.
    const first = (await makeRunner(deps)(runnerReq('exec-retry-none'))) as RunnerResult;
    await check('exec-retry-none', first);
    expect((await events('exec-retry-none')).map((e) => e.event)).toEqual(['TASK_STARTED', 'TASK_COMPLETED']);
  });

  it('counts a run that stopped early from the journal: never-run steps are skipped, not failed', async () => {
    const id = 'exec-aborted';
    const started = { attempt: 1, progress: 'p' };
    const evidence = { kind: 'none', passed: true, summary: 's', checkedAt: 'now' };
    const history: [string, EventType, Record<string, unknown>][] = [
      ['build', 'TASK_STARTED', started],
      ['build', 'TASK_COMPLETED', { result: {}, evidence, progress: 'p' }],
      ['test', 'TASK_STARTED', started],
      ['test', 'TASK_FAILED', { error: 'Plangate.ContractFailed', error_message: 'no', progress: 'p' }],
      ['test', 'RECOVERY_ESCALATION', { reason: 'r', user_decision: 'ABORT', decided_by: 'person' }],
    ];
    await appendHistory(id, history);
    const result = await makeChecker(deps)({
      kind: 'finalize',
      plan,
      executionId: id,
      postconditions: [],
      error: { Error: 'Plangate.Aborted', Cause: 'aborted by ops' },
      stepIds: ['build', 'test', 'ship', 'notify'],
    });
    expect(result).toMatchObject({ succeeded: false, summary: { completed: 1, failed: 1, skipped: 2 } });
    expect((await events(id)).at(-1)?.details).toMatchObject({
      error: 'Plangate.Aborted',
      reason: 'aborted by ops',
      summary: { completed: 1, failed: 1, skipped: 2 },
    });
  });

  it('never calls a run a success when its journal contradicts itself: an approved step that never ran, a step blocked by completed ones', async () => {
    const id = 'exec-inconsistent';
    const started = { attempt: 1, progress: 'p' };
    const evidence = { kind: 'none', passed: true, summary: 's', checkedAt: 'now' };
    // What a ladder that lost the ledger wrote: deploy approved after its reminder, then blocked
    // by prepare, which had completed; its dependent blocked in turn.
    const history: [string, EventType, Record<string, unknown>][] = [
      ['prepare', 'TASK_STARTED', started],
      ['prepare', 'TASK_COMPLETED', { result: {}, evidence, progress: 'p' }],
      ['deploy', 'GATE_APPROVAL_REQUESTED', { plan_id: plan.id, gate: 'step', round: 1 }],
      ['deploy', 'GATE_REMINDED', { gate: 'step', level: 0 }],
      ['deploy', 'GATE_APPROVED', { gate: 'step', approver: 'alice' }],
      ['deploy', 'TASK_BLOCKED', { blocked_by: ['prepare'] }],
      ['report', 'TASK_BLOCKED', { blocked_by: ['deploy'] }],
    ];
    await appendHistory(id, history);
    const result = await makeChecker(deps)({
      kind: 'finalize',
      plan,
      executionId: id,
      postconditions: [],
      ledger: { steps: { deploy: { status: 'blocked' }, report: { status: 'blocked' } } },
      stepIds: ['prepare', 'deploy', 'report'],
    });
    const reason =
      'step deploy was blocked by prepare, which completed; step deploy was approved at its gate but never ran';
    expect(result).toMatchObject({
      succeeded: false,
      summary: { completed: 1, failed: 0, skipped: 2 },
      error: { Error: 'Plangate.InconsistentRun', Cause: reason },
    });
    expect((await events(id)).at(-1)).toMatchObject({
      event: 'EXECUTION_COMPLETE',
      details: { succeeded: false, error: 'Plangate.InconsistentRun', reason },
    });
  });

  it('finalizes: postconditions checked, EXECUTION_COMPLETE with the summary', async () => {
    const result = await makeChecker(deps)({
      kind: 'finalize',
      plan,
      executionId: 'exec-ok',
      postconditions: [
        {
          id: 'tokenFile',
          description: 'token file exists',
          contract: { kind: 'command', command: 'test -f token.txt', expectExitCode: 0, timeoutSeconds: 5 },
        },
      ],
      ledger: { steps: { build: { status: 'completed' }, ship: { status: 'skipped' } } },
      stepIds: ['build', 'ship'],
    });
    expect(result).toEqual({
      succeeded: true,
      summary: { completed: 1, failed: 0, skipped: 1 },
      failedPostconditions: [],
    });
    const stored = await events('exec-ok');
    expect(stored.slice(-2).map((e) => e.event)).toEqual(['POSTCONDITION_CHECKED', 'EXECUTION_COMPLETE']);
  });
});

describe('classifier', () => {
  const recovery = {
    transient: { maxAttempts: 2, escalation: 'ask' as const },
    logic: { maxAttempts: 1, escalation: 'ask' as const },
    permission: { maxAttempts: 0, escalation: 'ask' as const },
    invalid_input: { maxAttempts: 0, escalation: 'ask' as const },
    unrecoverable: { maxAttempts: 0, escalation: 'abort' as const },
    unknown: { maxAttempts: 0, escalation: 'ask' as const },
  };
  const req = (error: { Error: string; Cause?: string }, attempt: number) => ({
    plan,
    executionId: 'exec-classify',
    stepId: 'build',
    phase: 'check' as const,
    error,
    attempt,
    recovery,
  });

  it('retries a failed contract per the logic recipe, then escalates', async () => {
    const classify = makeClassifier(deps);
    const cause = JSON.stringify({ message: 'exit 1', failureClass: 'logic' });
    expect(await classify(req({ Error: 'Plangate.ContractFailed', Cause: cause }, 1))).toMatchObject({
      failureClass: 'logic',
      action: 'RETRY',
    });
    expect(await classify(req({ Error: 'Plangate.ContractFailed', Cause: cause }, 2))).toMatchObject({
      action: 'ESCALATE',
      policy: 'ask',
    });
  });

  it('stops for a person on a permission error, and classifies errors nobody named', async () => {
    const classify = makeClassifier(deps);
    expect(
      await classify(req({ Error: 'Plangate.Permission', Cause: '{"message":"403"}' }, 1)),
    ).toMatchObject({
      failureClass: 'permission',
      action: 'ESCALATE',
    });
    expect(await classify(req({ Error: 'States.Timeout', Cause: 'Task timed out' }, 1))).toMatchObject({
      failureClass: 'transient',
      action: 'RETRY',
    });
    const types = (await events('exec-classify')).map((e) => e.event);
    expect(types).toContain('PERMISSION_REQUIRED');
    // The runner recorded the named error; the one nobody named is recorded here.
    expect(types.filter((t) => t === 'FAILURE_DETECTED')).toHaveLength(1);
    expect(types.filter((t) => t === 'FAILURE_CLASSIFIED')).toHaveLength(1);
    expect(types.filter((t) => t === 'TASK_FAILED')).toHaveLength(1);
    // A retry's outcome is not known yet; the escalation's is.
    expect(
      (await events('exec-classify')).filter((e) => e.event === 'RECOVERY_APPLIED').map((e) => e.details),
    ).toEqual([
      { recipe_name: 'retry_logic', outcome: 'escalated' },
      { recipe_name: 'escalate_permission', outcome: 'escalated' },
    ]);
  });
  it("records TASK_FAILED with the step's progress line for a runner timeout it is the first to see", async () => {
    const timeout = {
      ...req({ Error: 'States.Timeout', Cause: 'Task timed out after 30.00 seconds' }, 1),
      executionId: 'exec-classify-timeout',
      phase: 'run' as const,
      description: 'Build the image',
      index: 2,
      total: 4,
    };
    expect(await makeClassifier(deps)(timeout)).toMatchObject({ failureClass: 'transient', action: 'RETRY' });
    const stored = await events('exec-classify-timeout');
    expect(stored.map((e) => e.event)).toEqual(['TASK_FAILED', 'FAILURE_DETECTED', 'FAILURE_CLASSIFIED']);
    expect(stored[0]).toMatchObject({
      task_id: 'build',
      task_name: 'Build the image',
      details: {
        error: 'States.Timeout',
        error_message: 'Task timed out after 30.00 seconds',
        progress: '[Task 2/4] ✗ Build the image: Task timed out after 30.00 seconds',
      },
    });
  });

  it("records what a worker's failed agent used (its failure cause's usage) on TASK_FAILED, to count against the budget", async () => {
    const failed = {
      ...req(
        {
          Error: 'ToolFailed',
          Cause: JSON.stringify({
            message: 'agent exited 3: no repo',
            usage: { tokens: 900, costUsd: 0.02 },
          }),
        },
        1,
      ),
      executionId: 'exec-classify-agent',
      phase: 'run' as const,
      description: 'Write the fix',
      index: 1,
      total: 1,
    };
    await makeClassifier(deps)(failed);
    const stored = await events('exec-classify-agent');
    expect(stored[0]).toMatchObject({
      event: 'TASK_FAILED',
      details: { error_message: 'agent exited 3: no repo', usage: { tokens: 900, costUsd: 0.02 } },
    });
  });

  it('escalates a human step nobody answered to a person, whatever the recipes say, never retrying it silently', async () => {
    const unanswered = {
      ...req({ Error: 'States.Timeout', Cause: 'Task timed out' }, 1),
      executionId: 'exec-classify-human-timeout',
      phase: 'run' as const,
      description: 'Plug the cable in',
      index: 1,
      total: 1,
      humanTimeoutSeconds: 3600,
    };
    // The recipes would retry a transient error twice and abort an unrecoverable one: neither applies.
    expect(await makeClassifier(deps)(unanswered)).toEqual({
      failureClass: 'unrecoverable',
      error: 'States.Timeout',
      message: 'no answer within 3600 s',
      phase: 'run',
      action: 'ESCALATE',
      policy: 'ask',
      recipe: 'escalate_unrecoverable',
    });
    const stored = await events('exec-classify-human-timeout');
    expect(stored.map((e) => e.event)).toEqual([
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
      'RECOVERY_APPLIED',
    ]);
    expect(stored[0]?.details.progress).toBe('[Task 1/1] ✗ Plug the cable in: no answer within 3600 s');
    expect(stored[2]?.details).toEqual({ failure_type: 'unrecoverable', error: 'States.Timeout' });
    // The same timeout of a runner (not a human step) stays transient and is retried.
    const { humanTimeoutSeconds: _, ...runner } = unanswered;
    expect(
      await makeClassifier(deps)({ ...runner, executionId: 'exec-classify-runner-timeout' }),
    ).toMatchObject({
      failureClass: 'transient',
      action: 'RETRY',
    });
  });

  it("reads the harness's cause inside Lambda's error envelope (what Step Functions hands a Catch)", async () => {
    const cause = JSON.stringify({
      errorType: 'Plangate.Permission',
      errorMessage: JSON.stringify({ message: '403 Forbidden: no deploy scope', failureClass: 'permission' }),
    });
    expect(
      await makeClassifier(deps)({
        ...req({ Error: 'Plangate.Permission', Cause: cause }, 1),
        executionId: 'exec-envelope',
      }),
    ).toMatchObject({ failureClass: 'permission', message: '403 Forbidden: no deploy scope' });
  });
});

describe('gate and approvals', () => {
  const notices: ApprovalNotice[] = [];
  let now = new Date();
  const gateDeps = (): GateDeps => ({
    ...deps,
    sfn,
    signingKey: 'k'.repeat(32),
    notify: async (n) => {
      notices.push(n);
    },
  });
  const approval = { approvers: ['ana', 'ben', 'cy'], forbiddenApprovers: ['author'], quorum: 2 };
  const approvals = () => approvalsFor(gateDeps());
  const gateReq = (executionId: string, timeoutSeconds = 3600) => ({
    kind: 'plan' as const,
    taskToken: `${TOKEN}-${executionId}`,
    plan,
    executionId,
    approval,
    round: 1,
    timeoutSeconds,
  });

  it('keeps the token server-side, needs a quorum, and lets exactly one of two concurrent clicks decide', async () => {
    await makeGate(gateDeps())(gateReq('exec-gate'));
    const notice = notices.at(-1) as ApprovalNotice;
    expect(notice.approvalId).not.toContain(TOKEN.slice(0, 20));
    const a = approvals();
    await expect(
      a.answer(notice.approvalId, { by: 'author', digest: plan.digest, decision: { decision: 'APPROVE' } }),
    ).rejects.toMatchObject({ reason: 'forbidden' });
    await expect(
      a.answer(notice.approvalId, { by: 'mallory', digest: plan.digest, decision: { decision: 'APPROVE' } }),
    ).rejects.toMatchObject({ reason: 'forbidden' });
    await expect(
      a.answer(notice.approvalId, { by: 'ana', digest: 'sha256:other', decision: { decision: 'APPROVE' } }),
    ).rejects.toMatchObject({ reason: 'digest-mismatch' });
    await expect(
      a.answer(`${notice.approvalId.slice(0, -2)}xx`, {
        by: 'ana',
        digest: plan.digest,
        decision: { decision: 'APPROVE' },
      }),
    ).rejects.toMatchObject({ reason: 'forged' });
    expect(
      await a.answer(notice.approvalId, {
        by: 'ana',
        digest: plan.digest,
        decision: { decision: 'APPROVE' },
      }),
    ).toEqual({ status: 'pending', votes: 1 });
    const before = recorder.successes.length;
    const results = await Promise.allSettled([
      approvals().answer(notice.approvalId, {
        by: 'ben',
        digest: plan.digest,
        decision: { decision: 'APPROVE' },
      }),
      approvals().answer(notice.approvalId, {
        by: 'cy',
        digest: plan.digest,
        decision: { decision: 'APPROVE' },
      }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({
      reason: {
        reason: 'used',
        message: expect.stringMatching(/^this gate was already answered: APPROVE.* by .* at \d{4}-/),
      },
    });
    expect(recorder.successes.length - before).toBe(1);
    expect(recorder.successes.at(-1)?.taskToken).toBe(`${TOKEN}-exec-gate`);
    await expect(
      a.answer(notice.approvalId, { by: 'cy', digest: plan.digest, decision: { decision: 'APPROVE' } }),
    ).rejects.toMatchObject({ reason: 'used' });
    const stored = await events('exec-gate');
    // Refusals of a genuine link are audited; the forged one names no gate and writes nothing.
    expect(stored.filter((e) => e.event !== 'GATE_ANSWER_REFUSED').map((e) => e.event)).toEqual([
      'GATE_APPROVAL_REQUESTED',
      'GATE_VOTE',
      'GATE_VOTE',
      'GATE_APPROVED',
    ]);
    expect(
      stored.filter((e) => e.event === 'GATE_ANSWER_REFUSED').map((e) => [e.details.reason, e.details.by]),
    ).toEqual([
      ['forbidden', 'author'],
      ['forbidden', 'mallory'],
      ['digest-mismatch', 'ana'],
      ['used', expect.stringMatching(/^(ben|cy)$/)],
      ['used', 'cy'],
    ]);
    expect(verifyChain(stored).ok).toBe(true);
  });

  it('refuses a modification naming a step the plan does not have (a tampered step id)', async () => {
    await makeGate(gateDeps())({
      ...gateReq('exec-tampered'),
      summary: { objective: 'Build and ship', steps: 2, stepIds: ['build', 'ship'] },
    });
    const notice = notices.at(-1) as ApprovalNotice;
    const modify = (change: Record<string, unknown>) =>
      approvals().answer(notice.approvalId, {
        by: 'ana',
        digest: plan.digest,
        decision: { decision: 'APPROVE_WITH_MODIFICATIONS', ...change },
      });
    await expect(modify({ skipSteps: ['ship', 'shipp'] })).rejects.toMatchObject({
      reason: 'invalid',
      message: 'decision.skipSteps: "shipp" is not a step this gate can change',
    });
    await expect(modify({ argOverrides: { deploy: { force: true } } })).rejects.toMatchObject({
      reason: 'invalid',
      message: 'decision.argOverrides: "deploy" is not a step this gate can change',
    });
    expect(await modify({ skipSteps: ['ship'] })).toEqual({
      status: 'modified',
      revision: 1,
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
  });

  it('counts votes only for the content they saw: a modification makes a revision the full quorum approves again', async () => {
    await makeGate(gateDeps())({
      ...gateReq('exec-revision'),
      summary: {
        objective: 'Build and ship',
        steps: 2,
        stepIds: ['build', 'ship'],
        view: shellView(['build', 'ship']),
      },
    });
    const notice = notices.at(-1) as ApprovalNotice;
    const vote = (by: string, digest: string, decision: Record<string, unknown>) =>
      approvals().answer(notice.approvalId, { by, digest, decision });
    expect(await vote('ana', plan.digest, { decision: 'APPROVE' })).toEqual({ status: 'pending', votes: 1 });
    const first = await vote('ben', plan.digest, {
      decision: 'APPROVE_WITH_MODIFICATIONS',
      argOverrides: { build: { command: 'make fast', cwd: 'all' } },
    });
    expect(first).toMatchObject({ status: 'modified', revision: 1 });
    const r1 = (first as { digest: string }).digest;
    // The approvers are asked again, through the same link, about the revision.
    expect(notices.at(-1)).toMatchObject({
      approvalId: notice.approvalId,
      stage: 'revision',
      plan: { digest: plan.digest },
      revision: { number: 1, digest: r1, by: 'ben' },
    });
    // ana's approval of the plan as submitted does not carry over; an answer for it is refused.
    await expect(vote('cy', plan.digest, { decision: 'APPROVE' })).rejects.toMatchObject({
      reason: 'digest-mismatch',
      message: `the plan was modified by ben (revision 1, ${r1}): review it again`,
    });
    // A modification that changes nothing is no modification.
    await expect(
      vote('cy', r1, { decision: 'APPROVE_WITH_MODIFICATIONS', argOverrides: { build: { cwd: 'all' } } }),
    ).rejects.toMatchObject({ reason: 'invalid' });
    // Modifications accumulate: revision 2 holds both.
    const second = await vote('cy', r1, {
      decision: 'APPROVE_WITH_MODIFICATIONS',
      skipSteps: ['ship'],
      argOverrides: { build: { cwd: 'lib' } },
    });
    expect(second).toMatchObject({ status: 'modified', revision: 2 });
    const r2 = (second as { digest: string }).digest;
    const view = await approvals().describe(notice.approvalId);
    expect(view).toMatchObject({
      votes: [],
      revision: {
        number: 2,
        digest: r2,
        by: 'cy',
        skipSteps: ['ship'],
        argOverrides: { build: { command: 'make fast', cwd: 'lib' } },
      },
    });
    // The digest is the canonical content: { base, skipSteps, argOverrides }.
    expect(r2).toBe(
      `sha256:${createHash('sha256')
        .update(
          canonicalJson({
            base: plan.digest,
            skipSteps: ['ship'],
            argOverrides: { build: { command: 'make fast', cwd: 'lib' } },
          }),
        )
        .digest('hex')}`,
    );
    const before = recorder.successes.length;
    // The modifier approves the revision as shown, like everyone else; one approval is not a quorum.
    expect(await vote('cy', r2, { decision: 'APPROVE' })).toEqual({ status: 'pending', votes: 1 });
    expect(recorder.successes.length).toBe(before);
    expect(await vote('ana', r2, { decision: 'APPROVE', comment: 'ok as revised' })).toEqual({
      status: 'decided',
      decision: {
        decision: 'APPROVE_WITH_MODIFICATIONS',
        by: 'cy, ana',
        skipSteps: ['ship'],
        argOverrides: { build: { command: 'make fast', cwd: 'lib' } },
      },
    });
    expect(recorder.successes.at(-1)).toEqual({
      taskToken: `${TOKEN}-exec-revision`,
      output: {
        decision: 'APPROVE_WITH_MODIFICATIONS',
        by: 'cy, ana',
        skipSteps: ['ship'],
        argOverrides: { build: { command: 'make fast', cwd: 'lib' } },
      },
    });
    const stored = await events('exec-revision');
    expect(verifyChain(stored).ok).toBe(true);
    expect(
      stored
        .filter((e) => e.event !== 'GATE_APPROVAL_REQUESTED')
        .map((e) => [e.event, e.details.voter ?? e.details.by, e.details.digest ?? e.details.to]),
    ).toEqual([
      ['GATE_VOTE', 'ana', plan.digest],
      ['GATE_VOTE', 'ben', plan.digest],
      ['GATE_PLAN_MODIFIED', 'ben', r1],
      ['GATE_ANSWER_REFUSED', 'cy', undefined],
      ['GATE_ANSWER_REFUSED', 'cy', undefined],
      ['GATE_VOTE', 'cy', r1],
      ['GATE_PLAN_MODIFIED', 'cy', r2],
      ['GATE_VOTE', 'cy', r2],
      ['GATE_VOTE', 'ana', r2],
      ['GATE_APPROVED', undefined, r2],
    ]);
    expect(stored.find((e) => e.event === 'GATE_PLAN_MODIFIED' && e.details.revision === 2)?.details).toEqual(
      {
        gate: 'plan',
        by: 'cy',
        from: r1,
        to: r2,
        revision: 2,
        skipSteps: ['ship'],
        argOverrides: { build: { command: 'make fast', cwd: 'lib' } },
      },
    );
    expect(stored.at(-1)?.details).toEqual({
      gate: 'plan',
      approver: 'cy, ana',
      approvers: ['cy', 'ana'],
      digest: r2,
      modifications: {
        skipSteps: ['ship'],
        argOverrides: { build: { command: 'make fast', cwd: 'lib' } },
      },
    });
  });

  it('a step gate with quorum 1: a modification waits for one approval of the revision, possibly its author', async () => {
    await makeGate(gateDeps())({
      ...gateReq('exec-step-revision'),
      kind: 'step',
      stepId: 'cleanup',
      description: 'Remove the scratch directory',
      view: shellView(['cleanup'], true).steps[0],
      approval: { approvers: [], forbiddenApprovers: [], quorum: 1 },
    });
    const notice = notices.at(-1) as ApprovalNotice;
    const before = recorder.successes.length;
    const modified = await approvals().answer(notice.approvalId, {
      by: 'ana',
      digest: plan.digest,
      decision: {
        decision: 'APPROVE_WITH_MODIFICATIONS',
        argOverrides: { cleanup: { command: 'rm -r ./tmp/x' } },
      },
    });
    expect(modified).toMatchObject({ status: 'modified', revision: 1 });
    expect(recorder.successes.length).toBe(before);
    await expect(
      approvals().answer(notice.approvalId, {
        by: 'ben',
        digest: plan.digest,
        decision: { decision: 'APPROVE' },
      }),
    ).rejects.toMatchObject({
      reason: 'digest-mismatch',
      message: expect.stringMatching(/^the step was modified by ana/),
    });
    expect(
      await approvals().answer(notice.approvalId, {
        by: 'ana',
        digest: (modified as { digest: string }).digest,
        decision: { decision: 'APPROVE' },
      }),
    ).toMatchObject({ status: 'decided', decision: { decision: 'APPROVE_WITH_MODIFICATIONS', by: 'ana' } });
    expect(recorder.successes.at(-1)?.output).toEqual({
      decision: 'APPROVE_WITH_MODIFICATIONS',
      by: 'ana',
      skipSteps: [],
      argOverrides: { cleanup: { command: 'rm -r ./tmp/x' } },
    });
    expect((await events('exec-step-revision')).map((e) => [e.event, e.task_id])).toEqual([
      ['GATE_APPROVAL_REQUESTED', 'cleanup'],
      ['GATE_VOTE', 'cleanup'],
      ['GATE_PLAN_MODIFIED', 'cleanup'],
      ['GATE_ANSWER_REFUSED', 'cleanup'],
      ['GATE_VOTE', 'cleanup'],
      ['GATE_APPROVED', 'cleanup'],
    ]);
  });

  it('refuses an expired link and changes nothing', async () => {
    await makeGate(gateDeps())(gateReq('exec-expired', 60));
    const notice = notices.at(-1) as ApprovalNotice;
    now = new Date(Date.now() + 120_000);
    const expired = new Approvals({
      dynamo: plane.clients.doc,
      gatesTable: plane.tableNames.gates,
      sfn,
      journal: journalFor(deps),
      signingKey: 'k'.repeat(32),
      clock: () => now,
    });
    await expect(
      expired.answer(notice.approvalId, {
        by: 'ana',
        digest: plan.digest,
        decision: { decision: 'APPROVE' },
      }),
    ).rejects.toMatchObject({ reason: 'expired' });
    expect((await events('exec-expired')).map((e) => [e.event, e.details.reason])).toEqual([
      ['GATE_APPROVAL_REQUESTED', undefined],
      ['GATE_ANSWER_REFUSED', 'expired'],
    ]);
  });

  it('shows a later version what changed since the highest earlier version gated, found by plan id', async () => {
    const sketch = (id: string, over: Partial<StepSketch> = {}): StepSketch => ({
      id,
      name: `Do ${id}`,
      tool: 'shell',
      args: `args-${id}`,
      settings: 'defaults',
      ...over,
    });
    const gated = async (version: number, graph: StepSketch[], executionId: string, round = 1) => {
      await makeGate(gateDeps())({
        ...gateReq(executionId),
        // Each round is a wait of its own, with its own task token (one token opens one gate).
        taskToken: `${TOKEN}-${executionId}-round-${round}`,
        round,
        plan: { id: 'versioned', version, digest: `sha256:v${version}` },
        summary: { objective: 'Ship', steps: graph.length, stepIds: graph.map((g) => g.id), graph },
      });
      // Versions gated in the same millisecond would tie on the byPlan index's sort key.
      await new Promise((r) => setTimeout(r, 5));
      const notice = notices.at(-1) as ApprovalNotice;
      return { notice, view: await approvals().describe(notice.approvalId) };
    };
    const v1Graph = [sketch('build'), sketch('ship', { dependsOn: ['build'] })];
    const v2Graph = [
      sketch('build', { args: 'other' }),
      sketch('test', { dependsOn: ['build'] }),
      sketch('ship', { dependsOn: ['test'] }),
    ];
    const v1 = await gated(1, v1Graph, 'exec-v1');
    expect(v1.view.changes).toBeUndefined();
    expect(v1.view.summary?.graph).toEqual(v1Graph);
    expect(v1.notice.summary).toEqual({ objective: 'Ship', steps: 2, stepIds: ['build', 'ship'] });
    const v2 = await gated(2, v2Graph, 'exec-v2');
    expect(v2.view.changes).toEqual({
      since: { version: 1, digest: 'sha256:v1' },
      added: [{ id: 'test', name: 'Do test' }],
      removed: [],
      changed: [
        { id: 'build', name: 'Do build', args: {} },
        { id: 'ship', name: 'Do ship', dependsOn: { added: ['test'], removed: ['build'] } },
      ],
    });
    // v1 gated again later (in time) does not hide v2: v3 compares with the highest earlier version.
    await gated(1, v1Graph, 'exec-v1-again');
    const v3 = await gated(3, [...v2Graph, sketch('notify')], 'exec-v3');
    expect(v3.view.changes).toEqual({
      since: { version: 2, digest: 'sha256:v2' },
      added: [{ id: 'notify', name: 'Do notify' }],
      removed: [],
      changed: [],
    });
    // A later round asks again with the changes; only the first round's event records the graph.
    expect((await gated(3, v2Graph, 'exec-v3', 2)).view.changes?.since.version).toBe(2);
    expect((await events('exec-v3')).map((e) => e.details.graph === undefined)).toEqual([false, true]);
    // The next approver group of the timeout ladder is shown the same changes.
    await makeGate(gateDeps())({
      ...gateReq('exec-v3'),
      taskToken: `${TOKEN}-exec-v3-escalated`,
      round: 2,
      plan: { id: 'versioned', version: 3, digest: 'sha256:v3' },
      summary: { objective: 'Ship', steps: 3, graph: v2Graph },
      ladder: { stage: 'escalate', level: 1 },
    });
    const escalated = await approvals().describe((notices.at(-1) as ApprovalNotice).approvalId);
    expect(escalated.changes?.since.version).toBe(2);
  });

  it('lets a recipe answer an escalation itself (skip) without asking anyone', async () => {
    const before = notices.length;
    await makeGate(gateDeps())({
      ...gateReq('exec-esc'),
      kind: 'escalation',
      stepId: 'build',
      policy: 'skip',
      failure: { failureClass: 'logic', error: 'Plangate.ContractFailed', message: 'exit 1', phase: 'check' },
    });
    expect(notices.length).toBe(before);
    expect(recorder.successes.at(-1)?.output).toEqual({ decision: 'SKIP', by: 'recipe' });
    expect((await events('exec-esc')).map((e) => [e.event, e.details.decided_by])).toEqual([
      ['RECOVERY_ESCALATION', 'recipe'],
    ]);
  });

  const humanReq = (executionId: string, over: Record<string, unknown> = {}) => ({
    ...gateReq(executionId),
    kind: 'human' as const,
    approval: { approvers: [], forbiddenApprovers: [], quorum: 1 },
    stepId: 'key',
    description: 'Create the deploy key',
    index: 2,
    total: 3,
    attempt: 1,
    human: {
      instructions: 'In the console, create a key named deploy',
      outputs: ['keyId'],
      skip: false,
      dependsOn: ['build'],
      inputs: { build: { status: 'completed' as const } },
      inlineOutputLimitBytes: 4096,
    },
    ...over,
  });

  it('sends a human step to a person and turns the reported outputs into the runner result', async () => {
    await makeGate(gateDeps())(humanReq('exec-human'));
    const notice = notices.at(-1) as ApprovalNotice;
    expect(notice).toMatchObject({
      kind: 'human',
      description: 'Create the deploy key',
      human: { instructions: 'In the console, create a key named deploy', outputs: ['keyId'] },
    });
    const answer = (decision: unknown) =>
      approvals().answer(notice.approvalId, { by: 'ops', digest: plan.digest, decision });
    await expect(answer({ decision: 'DONE', outputs: {} })).rejects.toMatchObject({
      reason: 'invalid',
      message: expect.stringContaining('decision.outputs.keyId'),
    });
    await expect(answer({ decision: 'DONE', outputs: { keyId: 'k1', extra: 1 } })).rejects.toMatchObject({
      reason: 'invalid',
      message: expect.stringContaining('decision.outputs.extra'),
    });
    await answer({ decision: 'DONE', outputs: { keyId: 'k1' } });
    expect(recorder.successes.at(-1)).toMatchObject({
      taskToken: `${TOKEN}-exec-human`,
      output: { stepId: 'key', status: 'succeeded', output: { keyId: 'k1' }, attempt: 1 },
    });
    const stored = await events('exec-human');
    expect(stored.map((e) => e.event)).toEqual([
      'TASK_STARTED',
      'GATE_ANSWER_REFUSED',
      'GATE_ANSWER_REFUSED',
      'HUMAN_TASK_ANSWERED',
    ]);
    expect(stored[0]?.details.progress).toBe('[Task 2/3] ▶ Create the deploy key (waiting for a person)');
    expect(stored[1]?.details).toMatchObject({ gate: 'human', reason: 'invalid', by: 'ops' });
    expect(stored[3]?.details).toEqual({ decision: 'DONE', answered_by: 'ops', outputs: ['keyId'] });
  });

  it('asks nobody again when a crash made the engine retry a human step the person answered; asks again once its contract refused the answer', async () => {
    const answered = async (executionId: string, keyId: string) => {
      await makeGate(gateDeps())(humanReq(executionId));
      const notice = notices.at(-1) as ApprovalNotice;
      await approvals().answer(notice.approvalId, {
        by: 'ops',
        digest: plan.digest,
        decision: { decision: 'DONE', outputs: { keyId } },
      });
      return recorder.successes.at(-1)?.output as RunnerResult;
    };
    const check = (executionId: string, run: RunnerResult, expression: string) =>
      makeChecker(deps)({
        ...checkReq(executionId, run, 'true'),
        stepId: 'key',
        description: 'Create the deploy key',
        contract: { kind: 'assert' as const, expression },
      });
    const retried = async (executionId: string) => {
      const asked = notices.length;
      await makeGate(gateDeps())(
        humanReq(executionId, { attempt: 2, taskToken: `${TOKEN}-${executionId}-2` }),
      );
      return { asked: notices.length - asked, answer: recorder.successes.at(-1) };
    };
    // Completed, then the checker's answer lost: the completed attempt's answer, nobody asked.
    const done = await answered('exec-human-crash', 'k1');
    expect(done).toMatchObject({ answeredBy: 'ops', stored: true });
    await check('exec-human-crash', done, 'output.keyId = "k1"');
    expect(await retried('exec-human-crash')).toMatchObject({
      asked: 0,
      answer: { taskToken: `${TOKEN}-exec-human-crash-2`, output: { output: { keyId: 'k1' }, attempt: 2 } },
    });
    // Handed on, the check cut short before its verdict: the stored answer is checked, nobody asked.
    await answered('exec-human-handed', 'k2');
    expect(await retried('exec-human-handed')).toMatchObject({
      asked: 0,
      answer: { output: { output: { keyId: 'k2' }, attempt: 2 } },
    });
    // An answer its contract refused is forgotten: the person is asked again.
    const wrong = await answered('exec-human-refused', 'k3');
    await expect(check('exec-human-refused', wrong, 'output.keyId = "k1"')).rejects.toThrow();
    expect((await retried('exec-human-refused')).asked).toBe(1);
    expect((await events('exec-human-crash')).filter((e) => e.event === 'TASK_STARTED')).toHaveLength(1);
  });

  it('shows the person the values of earlier steps and of the context in the instructions', async () => {
    await makeGate(gateDeps())(
      humanReq('exec-human-values', {
        human: {
          ...humanReq('x').human,
          instructions: 'Deploy ${steps.build.image} to ${context.env}; it took ${steps.build.seconds} s',
          inputs: { build: { status: 'completed', output: { image: 'app:1.2', seconds: 42 } } },
          context: { env: 'staging' },
        },
      }),
    );
    expect(notices.at(-1)).toMatchObject({
      kind: 'human',
      human: { instructions: 'Deploy app:1.2 to staging; it took 42 s' },
    });
  });

  it('fails a human step the person reports failed, as Plangate.Unrecoverable', async () => {
    await makeGate(gateDeps())(humanReq('exec-human-failed'));
    const notice = notices.at(-1) as ApprovalNotice;
    await approvals().answer(notice.approvalId, {
      by: 'ops',
      digest: plan.digest,
      decision: { decision: 'FAILED', reason: 'the console is down' },
    });
    expect(recorder.failures.at(-1)).toMatchObject({
      taskToken: `${TOKEN}-exec-human-failed`,
      error: 'Plangate.Unrecoverable',
    });
    const stored = await events('exec-human-failed');
    expect(stored.map((e) => e.event)).toEqual([
      'TASK_STARTED',
      'HUMAN_TASK_ANSWERED',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
    ]);
    expect(stored[2]?.details).toEqual({
      error: 'Plangate.Unrecoverable',
      error_message: 'reported failed by ops: the console is down',
      progress: '[Task 2/3] ✗ Create the deploy key: reported failed by ops: the console is down',
    });
  });

  it('answers a skipped or blocked human step at once, asking nobody', async () => {
    const before = notices.length;
    await makeGate(gateDeps())(
      humanReq('exec-human-skip', { human: { ...humanReq('x').human, skip: true } }),
    );
    expect(recorder.successes.at(-1)?.output).toMatchObject({ status: 'skipped' });
    await makeGate(gateDeps())(
      humanReq('exec-human-skip', {
        human: { ...humanReq('x').human, inputs: { build: { status: 'blocked' } } },
      }),
    );
    expect(recorder.successes.at(-1)?.output).toMatchObject({ status: 'blocked', blockedBy: ['build'] });
    expect(notices.length).toBe(before);
    expect((await events('exec-human-skip')).map((e) => e.event)).toEqual(['TASK_SKIPPED', 'TASK_BLOCKED']);
  });

  it('never puts a task token on the bus or in the table of events', async () => {
    await plane.bus.drain();
    expect(JSON.stringify(published)).not.toContain(TOKEN.slice(0, 40));
  });
});

describe('join', () => {
  it('releases a waiting step once, whether signals come before or after the wait', async () => {
    const joinHandler = makeJoin({ dynamo: plane.clients.doc, joinsTable: plane.tableNames.joins, sfn });
    const before = recorder.successes.length;
    const scope = { plan, executionId: 'exec-join' };
    expect(
      await joinHandler({
        action: 'signal',
        ...scope,
        stepId: 'a',
        entry: { status: 'completed' },
        successors: ['c'],
      }),
    ).toEqual({ released: [] });
    await joinHandler({
      action: 'wait',
      ...scope,
      stepId: 'c',
      predecessors: ['a', 'b'],
      taskToken: `${TOKEN}-join`,
    });
    expect(recorder.successes.length).toBe(before);
    const last = await Promise.all([
      joinHandler({
        action: 'signal',
        ...scope,
        stepId: 'b',
        entry: { status: 'skipped' },
        successors: ['c'],
      }),
      joinHandler({
        action: 'signal',
        ...scope,
        stepId: 'b',
        entry: { status: 'skipped' },
        successors: ['c'],
      }),
    ]);
    expect(last.flatMap((r) => ('released' in r ? r.released : []))).toEqual(['c']);
    expect(recorder.successes.length - before).toBe(1);
    expect(recorder.successes.at(-1)?.output).toEqual({
      entries: { a: { status: 'completed' }, b: { status: 'skipped' } },
    });
  });

  it("releases the predecessors' carried ancestors too, the signalled entries winning over carried copies", async () => {
    const joinHandler = makeJoin({ dynamo: plane.clients.doc, joinsTable: plane.tableNames.joins, sfn });
    const scope = { plan, executionId: 'exec-join-carried' };
    await joinHandler({
      action: 'wait',
      ...scope,
      stepId: 'c',
      predecessors: ['a', 'b'],
      taskToken: `${TOKEN}-join-carried`,
    });
    await joinHandler({
      action: 'signal',
      ...scope,
      stepId: 'a',
      entry: { status: 'completed', output: { v: 'a' } },
      carried: { x: { status: 'completed', output: { v: 'x' } }, b: { status: 'blocked' } },
      successors: ['c'],
    });
    await joinHandler({
      action: 'signal',
      ...scope,
      stepId: 'b',
      entry: { status: 'completed' },
      carried: { y: { status: 'skipped' } },
      successors: ['c'],
    });
    expect(recorder.successes.at(-1)?.output).toEqual({
      entries: {
        x: { status: 'completed', output: { v: 'x' } },
        y: { status: 'skipped' },
        a: { status: 'completed', output: { v: 'a' } },
        b: { status: 'completed' },
      },
    });
  });
});

/**
 * A step runs once: what the runner, checker and classifier do when the engine retries a step
 * whose work is done (a crash after its command returned, or after its TASK_COMPLETED), on the
 * real handlers and a local data plane. The command and the contract append to counter files,
 * so a second run shows. The same crashes through `plangate serve`: tests/e2e/step-crash-points.e2e.test.ts.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as makeClassifier } from '../../lambdas/classifier.ts';
import { makeHandler as makeChecker } from '../../lambdas/contract-checker.ts';
import { makeHandler as makeRunner } from '../../lambdas/step-runner.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { INTERRUPTED } from '../../lib/engine/core/task-state.ts';
import { type HarnessDeps, journalFor } from '../../lib/runtime/deps.ts';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { CheckResult, RunnerRequest, RunnerResult } from '../../lib/runtime/payloads/index.ts';
import { entryOutput } from '../../lib/runtime/steps/outputs-table.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';

let dir: string;
let plane: LocalDataPlane;
let deps: HarnessDeps;
const plan = { id: 'once', version: 1, digest: 'sha256:feed' };
/** The recipes as the classifier gets them: an interruption is transient, retried twice. */
const recovery = {
  transient: { maxAttempts: 2, escalation: 'ask' as const },
  logic: { maxAttempts: 1, escalation: 'ask' as const },
  permission: { maxAttempts: 0, escalation: 'ask' as const },
  invalid_input: { maxAttempts: 0, escalation: 'ask' as const },
  unrecoverable: { maxAttempts: 0, escalation: 'abort' as const },
  unknown: { maxAttempts: 0, escalation: 'ask' as const },
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-step-once-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  deps = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    tools: builtinRegistry(),
    cwd: dir,
    env: { PATH: process.env.PATH },
  };
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

/** A step whose command appends a line to `<id>.ran` and prints `text`, proven by a contract that appends to `<id>.checked`. */
const runnerReq = (executionId: string, attempt: number, text = 'built'): RunnerRequest => ({
  plan,
  executionId,
  stepId: 'build',
  index: 1,
  total: 1,
  description: 'Build the report',
  tool: 'shell',
  subscriptions: [],
  args: { command: `echo x >> ${executionId}.ran; printf %s ${text}` },
  argOverrides: {},
  secrets: [],
  inputs: {},
  dependsOn: [],
  skip: false,
  attempt,
  outputs: [],
  timeoutSeconds: 30,
  inlineOutputLimitBytes: 8192,
  dispatch: false,
});
const checkReq = (executionId: string, run: RunnerResult, passes = true) => ({
  plan,
  executionId,
  stepId: 'build',
  index: 1,
  total: 1,
  description: 'Build the report',
  attempt: run.attempt,
  run,
  contract: {
    kind: 'command' as const,
    command: `echo x >> ${executionId}.checked; ${passes ? 'true' : 'false'}`,
    expectExitCode: 0,
    timeoutSeconds: 10,
  },
});
/** What the classifier is asked after the engine stopped during the step's `phase`. */
const interrupted = (executionId: string, phase: 'run' | 'check', attempt: number) => ({
  plan,
  executionId,
  stepId: 'build',
  phase,
  attempt,
  error: { Error: INTERRUPTED.error, Cause: INTERRUPTED.cause },
  recovery,
  description: 'Build the report',
  index: 1,
  total: 1,
});

const lines = async (file: string) =>
  (await readFile(join(dir, file), 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
const journal = async (executionId: string) =>
  readEvents(plane.clients.doc, plane.tableNames.events, executionId);
const named = async (executionId: string, event: string) =>
  (await journal(executionId)).filter((e) => e.event === event && e.task_id === 'build');

describe('a step runs once, whatever retries it', () => {
  it('after TASK_COMPLETED: the classifier retries quietly, the runner answers the stored result, the checker the same completion', async () => {
    const id = 'exec-completed';
    // The output is longer than TASK_COMPLETED's 512-character summary keeps: the retry must answer it whole.
    const long = 'r'.repeat(2000);
    const run = (await makeRunner(deps)(runnerReq(id, 1, long))) as RunnerResult;
    const first = (await makeChecker(deps)(checkReq(id, run))) as CheckResult;
    expect(first).toMatchObject({ status: 'completed' });
    // The checker's answer was lost with the engine: its Catch asks the classifier.
    const classified = await makeClassifier(deps)(interrupted(id, 'check', 1));
    expect(classified).toMatchObject({ action: 'RETRY' });
    // Whatever the recipes say: a plan that never retries a transient failure does not ask a person about a completed step.
    const noRetries = { ...recovery, transient: { maxAttempts: 0, escalation: 'ask' as const } };
    expect(await makeClassifier(deps)({ ...interrupted(id, 'check', 1), recovery: noRetries })).toMatchObject(
      { action: 'RETRY' },
    );
    const again = (await makeRunner(deps)(runnerReq(id, 2, long))) as RunnerResult;
    expect(again).toMatchObject({ status: 'succeeded', attempt: 2, output: run.output });
    const checked = (await makeChecker(deps)(checkReq(id, again))) as CheckResult;
    expect(checked).toEqual({ status: 'completed', output: run.output, evidence: first.evidence });
    expect(JSON.stringify(checked.output)).toContain(long);
    expect(await lines(`${id}.ran`)).toBe(1);
    expect(await lines(`${id}.checked`)).toBe(1);
    // Nothing is journaled after the completion: no failure of a step that did not fail, no second start.
    const events = await journal(id);
    expect(events.map((e) => e.event)).toEqual(['TASK_STARTED', 'TASK_COMPLETED']);
    expect(events[1]?.details).toMatchObject({ attempt: 1 });
    expect(verifyChain(events)).toEqual({ ok: true, count: 2 });
  });

  it('answers an output stored by reference with the same reference, which reads back whole', async () => {
    const id = 'exec-ref';
    const small = (attempt: number) => ({
      ...runnerReq(id, attempt, 'x'.repeat(600)),
      inlineOutputLimitBytes: 64,
    });
    const run = (await makeRunner(deps)(small(1))) as RunnerResult;
    expect(run.outputRef?.uri).toMatch(/^dynamodb:\/\//);
    await makeChecker(deps)(checkReq(id, run));
    const again = (await makeRunner(deps)(small(2))) as RunnerResult;
    const checked = (await makeChecker(deps)(checkReq(id, again))) as CheckResult;
    expect(checked.outputRef).toEqual(run.outputRef);
    expect(JSON.stringify(await entryOutput(plane.clients.doc, checked))).toContain('x'.repeat(600));
    expect(await lines(`${id}.ran`)).toBe(1);
  });

  it('a check made again in place after TASK_COMPLETED runs no contract and journals nothing', async () => {
    const id = 'exec-recheck';
    const run = (await makeRunner(deps)(runnerReq(id, 1))) as RunnerResult;
    const first = await makeChecker(deps)(checkReq(id, run));
    expect(await makeChecker(deps)({ ...checkReq(id, run), checkRetries: 1 })).toEqual(first);
    expect(await lines(`${id}.checked`)).toBe(1);
    expect(await named(id, 'TASK_COMPLETED')).toHaveLength(1);
  });

  it('after the command returned and its result was stored (no verdict yet): the retry answers that result, the contract completes it once', async () => {
    const id = 'exec-ran';
    const run = (await makeRunner(deps)(runnerReq(id, 1))) as RunnerResult;
    // The runner's answer was lost with the engine: the classifier records the interruption and retries.
    expect(await makeClassifier(deps)(interrupted(id, 'run', 1))).toMatchObject({ action: 'RETRY' });
    const again = (await makeRunner(deps)(runnerReq(id, 2))) as RunnerResult;
    expect(again).toMatchObject({ status: 'succeeded', attempt: 2, output: run.output });
    await makeChecker(deps)(checkReq(id, again));
    expect(await lines(`${id}.ran`)).toBe(1);
    expect(await named(id, 'TASK_STARTED')).toHaveLength(1);
    expect((await named(id, 'TASK_COMPLETED')).map((e) => e.details.attempt)).toEqual([2]);
    // A later retry (the checker's answer lost again) still finds the completion.
    expect(await makeRunner(deps)(runnerReq(id, 3))).toMatchObject({
      status: 'succeeded',
      output: run.output,
    });
    expect(await lines(`${id}.ran`)).toBe(1);
  });

  it("keeps a result no runner stored (a worker's, a person's) when it completes the step: a retry answers it, dispatching nothing", async () => {
    const id = 'exec-worker';
    const reported: RunnerResult = {
      stepId: 'build',
      attempt: 1,
      status: 'succeeded',
      output: { report: 'from the worker' },
      durationMs: 5,
      worker: 'host:1',
    };
    await makeChecker(deps)(checkReq(id, reported));
    const again = await makeRunner(deps)({ ...runnerReq(id, 2), dispatch: true });
    expect(again).toMatchObject({ status: 'succeeded', output: reported.output, worker: 'host:1' });
    expect((await journal(id)).map((e) => e.event)).toEqual(['TASK_COMPLETED']);
  });

  it('a check that passes when made again in place (after trouble reaching what it checks) keeps the result for a retry', async () => {
    const id = 'exec-recheck-trouble';
    const run = (await makeRunner(deps)(runnerReq(id, 1))) as RunnerResult;
    const slow = {
      ...checkReq(id, run),
      contract: { kind: 'command' as const, command: 'sleep 5', timeoutSeconds: 1 },
    };
    await expect(makeChecker(deps)(slow)).rejects.toMatchObject({ name: 'Plangate.Transient' });
    await makeChecker(deps)({ ...checkReq(id, run), checkRetries: 1 });
    expect(await makeRunner(deps)(runnerReq(id, 2))).toMatchObject({
      status: 'succeeded',
      output: run.output,
    });
    expect(await lines(`${id}.ran`)).toBe(1);
  });

  it('a result its contract refused is not answered again: the retry runs the command', async () => {
    const id = 'exec-refused';
    const run = (await makeRunner(deps)(runnerReq(id, 1))) as RunnerResult;
    await expect(makeChecker(deps)(checkReq(id, run, false))).rejects.toMatchObject({
      name: 'Plangate.ContractFailed',
    });
    const again = (await makeRunner(deps)(runnerReq(id, 2))) as RunnerResult;
    await makeChecker(deps)(checkReq(id, again));
    expect(await lines(`${id}.ran`)).toBe(2);
    expect(await named(id, 'TASK_STARTED')).toHaveLength(2);
    expect(await named(id, 'TASK_COMPLETED')).toHaveLength(1);
  });

  it('a crash while the command ran leaves no result: the retry runs it again (at least once for the command)', async () => {
    const id = 'exec-midway';
    // TASK_STARTED and nothing after it, no result stored: as a kill mid-command leaves the attempt.
    await journalFor(deps).append({
      executionId: id,
      planId: plan.id,
      planVersion: plan.version,
      planDigest: plan.digest,
      task_id: 'build',
      event: 'TASK_STARTED',
      details: { attempt: 1, progress: '[Task 1/1] ▶ Build the report' },
    });
    expect(await makeClassifier(deps)(interrupted(id, 'run', 1))).toMatchObject({ action: 'RETRY' });
    await makeChecker(deps)(checkReq(id, (await makeRunner(deps)(runnerReq(id, 2))) as RunnerResult));
    expect(await lines(`${id}.ran`)).toBe(1);
    expect(await named(id, 'TASK_STARTED')).toHaveLength(2);
    expect(await named(id, 'TASK_COMPLETED')).toHaveLength(1);
  });
});

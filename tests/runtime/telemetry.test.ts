/**
 * What the harness Lambdas tell operators (lib/runtime/telemetry): entries, metrics and their
 * redaction; the catalog's parse of a Lambda's environment; and a Lambda's `handler` export as AWS
 * runs it (environment parsed at cold start, clients from the environment, JSON on stdout),
 * against the local data plane.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as classifierHandler } from '../../lambdas/classifier.ts';
import { handler as joinHandler } from '../../lambdas/join.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { parseHandlerEnv, TABLE_NAME_ENV } from '../../lib/runtime/catalog.ts';
import { DEFAULT_TABLE_NAMES, type TableNames } from '../../lib/runtime/journal/tables.ts';
import { ERROR_NAMES, HarnessFailure, type JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { ExecutionEndedError } from '../../lib/runtime/shared/errors.ts';
import { Telemetry } from '../../lib/runtime/telemetry/telemetry.ts';

type Entry = Record<string, unknown>;

function telemetry(): { telemetry: Telemetry; entries: Entry[] } {
  const entries: Entry[] = [];
  return {
    telemetry: new Telemetry({
      handler: 'stepRunner',
      serviceName: 'plangate',
      sink: { write: (line) => entries.push(JSON.parse(line) as Entry) },
    }),
    entries,
  };
}

const EXECUTION = 'arn:aws:states:us-east-1:123456789012:execution:plangate-demo:run-1';
const TOKEN = `AQ${'t'.repeat(200)}`;

const record = (over: Partial<JournalRecord>): JournalRecord =>
  ({
    executionId: EXECUTION,
    planId: 'demo',
    planVersion: 1,
    planDigest: 'sha256:feed',
    timestamp: '2026-01-01T00:10:00.000Z',
    seq: 7,
    prevHash: 'a',
    hash: 'b',
    details: {},
    ...over,
  }) as JournalRecord;

describe('an invocation', () => {
  it('logs its outcome with the correlation keys of its event', async () => {
    const { telemetry: t, entries } = telemetry();
    const result = await t.invoke(
      { execution: EXECUTION, plan: 'demo', step: 'build', attempt: 2 },
      async () => ({ status: 'succeeded' }),
    );
    expect(result).toEqual({ status: 'succeeded' });
    expect(entries).toEqual([
      expect.objectContaining({
        level: 'INFO',
        message: 'stepRunner done',
        service: 'plangate',
        handler: 'stepRunner',
        execution: EXECUTION,
        plan: 'demo',
        step: 'build',
        attempt: 2,
        durationMs: expect.any(Number),
      }),
    ]);
  });

  it("logs a step's failure as a warning with its class, and the harness's own as an error counted in HarnessErrors, both redacted", async () => {
    const { telemetry: t, entries } = telemetry();
    const failure = new HarnessFailure(ERROR_NAMES.transient, {
      message: 'timed out',
      failureClass: 'transient',
    });
    await expect(t.invoke({ step: 'build' }, () => Promise.reject(failure))).rejects.toBe(failure);
    expect(entries.at(-1)).toMatchObject({
      level: 'WARN',
      message: 'stepRunner failed: Plangate.Transient',
      failureClass: 'transient',
      step: 'build',
    });
    expect(entries.some((e) => e.HarnessErrors !== undefined)).toBe(false);

    const throttled = new Error(`Rate exceeded writing task_token=${TOKEN} with xoxb-1234567890-abcdef`);
    throttled.name = 'ThrottlingException';
    await expect(
      t.invoke({ execution: EXECUTION, step: 'build' }, () => Promise.reject(throttled)),
    ).rejects.toBe(throttled);
    const error = entries.find((e) => e.level === 'ERROR');
    expect(error).toMatchObject({
      message: 'stepRunner failed',
      execution: EXECUTION,
      step: 'build',
      error: { name: 'ThrottlingException' },
    });
    const text = JSON.stringify(entries);
    expect(text).toContain('Rate exceeded');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('xoxb-1234567890');
    expect(entries.find((e) => e.HarnessErrors === 1)).toMatchObject({
      service: 'plangate',
      execution: EXECUTION,
      _aws: { CloudWatchMetrics: [{ Namespace: 'plangate', Dimensions: [['service']] }] },
    });
  });

  it('logs a writer that outlived its run (the journal refused its event) as a warning, not a harness error', async () => {
    const { telemetry: t, entries } = telemetry();
    const late = new ExecutionEndedError(EXECUTION, 'FAILURE_DETECTED');
    await expect(t.invoke({ execution: EXECUTION, step: 'hang' }, () => Promise.reject(late))).rejects.toBe(
      late,
    );
    expect(entries.at(-1)).toMatchObject({
      level: 'WARN',
      message: `stepRunner ended late: FAILURE_DETECTED not journaled: execution ${EXECUTION} has ended (EXECUTION_COMPLETE)`,
      execution: EXECUTION,
      step: 'hang',
    });
    expect(entries.some((e) => e.level === 'ERROR' || e.HarnessErrors !== undefined)).toBe(false);
  });

  it('counts a 5xx answer of an API handler as a harness error', async () => {
    const { telemetry: t, entries } = telemetry();
    await t.invoke({ route: 'POST /plans' }, async () => ({ statusCode: 503 }));
    expect(entries[0]).toMatchObject({ level: 'ERROR', route: 'POST /plans', status: 503 });
    expect(entries[1]).toMatchObject({ HarnessErrors: 1 });
  });

  it('never logs a value under a key that names a credential', async () => {
    const { telemetry: t, entries } = telemetry();
    t.logger.info('oops', { taskToken: 'pgt1.abcdefghijklmnopqrstuvwxyz', password: 'hunter22' });
    expect(entries[0]).toMatchObject({ taskToken: '***', password: '***' });
  });
});

describe('journal events', () => {
  it('are entries with their execution, plan, step and gate, and the metrics they stand for', () => {
    const { telemetry: t, entries } = telemetry();
    t.journaled(
      record({ event: 'TASK_STARTED', task_id: 'build', details: { attempt: 1, progress: '[1/2]' } }),
    );
    t.journaled(
      record({
        event: 'FAILURE_CLASSIFIED',
        task_id: 'build',
        details: { failure_type: 'permission', error: 'x' },
      }),
    );
    t.journaled(
      record({ event: 'GATE_APPROVED', task_id: 'deploy', details: { gate: 'step', approver: 'alice' } }),
      { gateOpenedAt: '2026-01-01T00:00:00.000Z' },
    );
    t.journaled(record({ event: 'GATE_REJECTED', details: { gate: 'plan', reason: 'no' } }));
    const logged = entries.filter((e) => e._aws === undefined);
    expect(logged.map((e) => [e.message, e.step, e.gate])).toEqual([
      ['journal TASK_STARTED', 'build', undefined],
      ['journal FAILURE_CLASSIFIED', 'build', undefined],
      ['journal GATE_APPROVED', 'deploy', 'step'],
      ['journal GATE_REJECTED', undefined, 'plan'],
    ]);
    for (const e of logged) expect(e).toMatchObject({ execution: EXECUTION, plan: 'demo', planVersion: 1 });
    const metrics = entries.filter((e) => e._aws !== undefined);
    expect(metrics).toEqual([
      expect.objectContaining({ StepsRun: 1, step: 'build', execution: EXECUTION }),
      expect.objectContaining({ StepsFailed: 1, FailureClass: 'permission' }),
      expect.objectContaining({ Decisions: 1, Gate: 'step', Decision: 'APPROVE' }),
      expect.objectContaining({ GateWaitTime: 600, Gate: 'step' }),
      expect.objectContaining({ Decisions: 1, Gate: 'plan', Decision: 'REJECT' }),
    ]);
  });

  it('has a hook for policy denials: a warning and PolicyDenials by action', () => {
    const { telemetry: t, entries } = telemetry();
    t.policyDenied(
      { execution: EXECUTION, gate: 'plan' },
      { action: 'Approve', reason: 'forbid: self-approval' },
    );
    expect(entries).toEqual([
      expect.objectContaining({
        level: 'WARN',
        message: 'policy denied Approve',
        gate: 'plan',
        execution: EXECUTION,
      }),
      expect.objectContaining({ PolicyDenials: 1, Action: 'Approve' }),
    ]);
  });
});

describe("a Lambda's environment", () => {
  it('is parsed with its catalog schema; what is missing or malformed is named', () => {
    expect(() =>
      parseHandlerEnv('gate', { PLANGATE_EVENTS_TABLE: 'events', POWERTOOLS_LOG_LEVEL: 'LOUD' }),
    ).toThrow(
      expect.objectContaining({
        name: 'NotConfigured',
        message: expect.stringMatching(
          /^the gate Lambda's environment: .*PLANGATE_GATES_TABLE is not set.*POWERTOOLS_LOG_LEVEL: a Powertools log level.*PLANGATE_NOTIFIER_FUNCTION is not set.*PLANGATE_APPROVAL_SIGNING_KEY_SECRET: set PLANGATE_APPROVAL_SIGNING_KEY_SECRET or PLANGATE_APPROVAL_SIGNING_KEY/,
        ),
      }),
    );
    expect(parseHandlerEnv('classifier', completeEnv({ PATH: '/bin', UNRELATED: 'x' }))).not.toHaveProperty(
      'UNRELATED',
    );
  });
});

function completeEnv(more: Record<string, string> = {}): Record<string, string> {
  return {
    // Every table, as the catalog names their variables.
    ...Object.fromEntries(
      Object.entries(TABLE_NAME_ENV).map(([id, env]) => [env, DEFAULT_TABLE_NAMES[id as keyof TableNames]]),
    ),
    PLANGATE_EVENT_BUS: 'default',
    POWERTOOLS_SERVICE_NAME: 'plangate',
    POWERTOOLS_METRICS_NAMESPACE: 'plangate',
    ...more,
  };
}

describe("a Lambda module's handler, as AWS runs it", () => {
  let dir: string;
  let plane: LocalDataPlane;
  const saved = { ...process.env };
  const context = {
    functionName: 'plangate-classifier',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:plangate-classifier',
    memoryLimitInMB: '512',
    awsRequestId: 'request-1',
  } as Context;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'plangate-telemetry-'));
    plane = await startLocalDataPlane({ dataDir: dir });
  });
  afterAll(async () => {
    process.env = saved;
    await plane.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Runs `call` with `env` as the process's environment, capturing the JSON lines on stdout. */
  async function onLambda(env: Record<string, string>, call: () => Promise<unknown>) {
    process.env = { PATH: saved.PATH, ...env };
    const lines: Entry[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      for (const line of String(chunk).split('\n'))
        if (line.startsWith('{')) lines.push(JSON.parse(line) as Entry);
      return true;
    });
    try {
      return { outcome: await call().catch((error: unknown) => error), lines };
    } finally {
      write.mockRestore();
      process.env = saved;
    }
  }

  it('refuses to start without its environment, naming what is missing, in an error entry and HarnessErrors', async () => {
    const { outcome, lines } = await onLambda({}, () => joinHandler({ action: 'signal' }, context));
    expect(outcome).toMatchObject({
      name: 'NotConfigured',
      message: expect.stringContaining('PLANGATE_EVENTS_TABLE is not set'),
    });
    expect(lines[0]).toMatchObject({
      level: 'ERROR',
      message: 'join could not start',
      error: { name: 'NotConfigured', message: expect.stringContaining('PLANGATE_JOINS_TABLE is not set') },
    });
    expect(lines[1]).toMatchObject({ HarnessErrors: 1 });
  });

  it('parses its environment once, makes its clients from it, and logs JSON with the Lambda context and the correlation keys', async () => {
    // As Lambda sets it: Powertools reports the first invocation of an on-demand container as a cold start.
    const env = completeEnv({
      ...plane.env,
      POWERTOOLS_LOG_LEVEL: 'INFO',
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    });
    const request = {
      plan: { id: 'demo', version: 1, digest: 'sha256:feed' },
      executionId: EXECUTION,
      stepId: 'build',
      phase: 'run',
      // An error no harness Lambda named: the classifier records it (FAILURE_CLASSIFIED).
      error: { Error: 'States.Timeout', Cause: 'the task timed out' },
      attempt: 1,
      recovery: Object.fromEntries(
        ['transient', 'logic', 'permission', 'invalid_input', 'unrecoverable', 'unknown'].map((c) => [
          c,
          { maxAttempts: 2, escalation: 'ask' },
        ]),
      ),
    };
    const { outcome, lines } = await onLambda(env, () => classifierHandler(request, context));
    expect(outcome).toMatchObject({ failureClass: 'transient', action: 'RETRY' });
    const done = lines.find((e) => e.message === 'classifier done');
    expect(done).toMatchObject({
      handler: 'classifier',
      execution: EXECUTION,
      plan: 'demo',
      step: 'build',
      function_request_id: 'request-1',
      function_name: 'plangate-classifier',
      cold_start: true,
    });
    expect(lines.some((e) => e.message === 'journal FAILURE_CLASSIFIED' && e.step === 'build')).toBe(true);
    expect(lines.some((e) => e.StepsFailed === 1 && e.FailureClass === 'transient')).toBe(true);

    // The second invocation reuses what the cold start made.
    const again = await onLambda(env, () => classifierHandler({ ...request, attempt: 2 }, context));
    expect(again.outcome).toMatchObject({ failureClass: 'transient' });
    expect(again.lines.find((e) => e.message === 'classifier done')).toMatchObject({ cold_start: false });
  });
});

/**
 * `plangate worker` (the real CLI, a child process) against a Step Functions endpoint: without
 * --activity-arn it finds its target's activity by name, `<name prefix>-<target>`, with
 * ListActivities (page after page), as it does on AWS with --aws; a name nobody created is a
 * clear error.
 */
import { mkdtemp } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sfn from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import { startEngineServer } from '../../lib/engine/api/index.ts';
import { createEngine } from '../../lib/engine/engine.ts';
import { createResourceInvoker } from '../../lib/engine/resources/index.ts';
import { storePaths, writeSession } from '../../lib/serve/store-directory.ts';
import { CliRun } from '../e2e/cli.ts';
import { useServedEngine } from './served-engine.ts';

const served = useServedEngine();

const worker = (cwd: string, ...args: string[]) =>
  new CliRun(
    [
      'worker',
      '--endpoint',
      served.url,
      '--target',
      'coder',
      '--agent-command',
      'touch done.txt',
      '--once',
      ...args,
    ],
    cwd,
  );

/** A handoff of step do-it (plan p) for the coder. */
const handoff = {
  plan: { id: 'p', version: 1, digest: `sha256:${'b'.repeat(64)}` },
  executionId: 'e',
  stepId: 'do-it',
  index: 1,
  total: 1,
  description: 'Do it',
  target: 'coder',
  attempt: 1,
  contract: { kind: 'command', command: 'test -f done.txt', expectExitCode: 0, timeoutSeconds: 10 },
  timeoutSeconds: 30,
  heartbeatSeconds: 30,
};

describe('plangate worker --endpoint', { timeout: 60_000 }, () => {
  it('finds <prefix>-<target> with ListActivities, past the first page, and works on it', async () => {
    // 150 other activities first: the one it wants is on the second page.
    for (let i = 0; i < 150; i++)
      await served.client.send(new sfn.CreateActivityCommand({ name: `other-${i}` }));
    await served.client.send(new sfn.CreateActivityCommand({ name: 'team-reviewer' }));
    const { activityArn } = await served.client.send(new sfn.CreateActivityCommand({ name: 'team-coder' }));
    const { stateMachineArn } = await served.client.send(
      new sfn.CreateStateMachineCommand({
        name: 'work',
        roleArn: 'arn:aws:iam::123456789012:role/plangate',
        definition: JSON.stringify({
          StartAt: 'Work',
          States: { Work: { Type: 'Task', Resource: activityArn, End: true } },
        }),
      }),
    );
    const { executionArn } = await served.client.send(
      new sfn.StartExecutionCommand({ stateMachineArn, input: JSON.stringify(handoff) }),
    );
    const workspace = await mkdtemp(join(tmpdir(), 'plangate-worker-cli-'));
    const run = worker(workspace, '--name-prefix', 'team', '--workspace', workspace);
    expect(await run.exited, run.stderr).toBe(0);
    expect(run.stdout).toContain(`working for "coder" on ${activityArn}`);
    const execution = await served.client.send(new sfn.DescribeExecutionCommand({ executionArn }));
    expect(execution.status).toBe('SUCCEEDED');
    expect(JSON.parse(execution.output ?? '{}')).toMatchObject({
      stepId: 'do-it',
      evidence: { ran: 'test -f done.txt', passed: true },
    });
  });

  it('says which name it looked for when no activity has it', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'plangate-worker-cli-'));
    const run = worker(cwd, '--name-prefix', 'nobody');
    expect(await run.exited).toBe(1);
    expect(run.stderr).toContain(
      `plangate worker: no activity is named "nobody-coder" on ${served.url} (ListActivities)`,
    );
  });
});

describe('plangate worker --store', { timeout: 60_000 }, () => {
  /** A session file saying the run holding `store` (this test's process) serves its engine at `url`. */
  const holdStore = (store: string, url: string) =>
    writeSession(storePaths(store), {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      dynamoEndpoint: 'http://127.0.0.1:1',
      eventsEndpoint: 'http://127.0.0.1:1',
      sfnEndpoint: url,
      approvalUrl: 'http://127.0.0.1:1',
    });

  it('waits while the run creates its activity, and again when the run it worked for ends', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plangate-worker-store-'));
    const store = join(dir, 'store');
    // A run that has started (its session is written) but has not deployed its plan yet, and
    // whose engine then goes away: the endpoint nobody listens on any more.
    const gone = await closedPort();
    await holdStore(store, gone);
    const run = new CliRun(
      [
        'worker',
        '--store',
        store,
        '--target',
        'coder',
        '--agent-command',
        'touch done.txt',
        '--once',
        '--workspace',
        dir,
      ],
      dir,
    );
    try {
      await run.until('waiting for the run that ended', () => /waiting for/.test(run.stdout));
      await holdStore(store, served.url);
      await run.until('waiting for the activity', () => /waiting for the run to create/.test(run.stdout));
      const { activityArn } = await served.client.send(
        new sfn.CreateActivityCommand({ name: 'plangate-coder' }),
      );
      const { stateMachineArn } = await served.client.send(
        new sfn.CreateStateMachineCommand({
          name: 'store-work',
          roleArn: 'arn:aws:iam::123456789012:role/plangate',
          definition: JSON.stringify({
            StartAt: 'Work',
            States: { Work: { Type: 'Task', Resource: activityArn, End: true } },
          }),
        }),
      );
      const { executionArn } = await served.client.send(
        new sfn.StartExecutionCommand({ stateMachineArn, input: JSON.stringify(handoff) }),
      );
      expect(await run.exited, run.stderr).toBe(0);
      // It took the task from the new run's engine: plan p is not one this store approved, so the
      // worker refuses it rather than run a contract it cannot check.
      expect(run.stdout).toContain('refused do-it');
      const execution = await served.client.send(new sfn.DescribeExecutionCommand({ executionArn }));
      expect(execution).toMatchObject({ status: 'FAILED', error: 'Worker.UnknownPlan' });
    } finally {
      run.terminate();
    }
  });

  it('waits for the next run when the engine it polls closes under it (the run ended mid-poll)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plangate-worker-store-'));
    const store = join(dir, 'store');
    // The run's own engine: it ends while the worker's poll waits, and its server still answers
    // for a moment, "the engine is shutting down", as a `plangate run` that finishes does.
    const engine = createEngine({
      storeDir: undefined,
      invokeResource: createResourceInvoker(),
      timeScale: 1,
    });
    const server = await startEngineServer({ engine });
    const client = new sfn.SFNClient({
      endpoint: server.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      maxAttempts: 1,
    });
    await client.send(new sfn.CreateActivityCommand({ name: 'plangate-coder' }));
    await holdStore(store, server.url);
    const run = new CliRun(
      ['worker', '--store', store, '--target', 'coder', '--agent-command', 'true', '--workspace', dir],
      dir,
    );
    try {
      await run.until('polling', () => /working for "coder"/.test(run.stdout));
      await engine.close();
      await run.until('waiting for the next run', () => /waiting for the next plangate run/.test(run.stdout));
      expect(run.stderr).not.toContain('ServiceUnavailable');
    } finally {
      run.terminate();
      client.destroy();
      await server.close();
    }
    // Stopped while it waits for a run, it ends by the signal (no task to hand back), not with an error.
    expect(await run.exited).not.toBe(1);
  });
});

/** An endpoint on loopback that nobody listens on. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return `http://127.0.0.1:${port}`;
}

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import * as sfn from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANGATE_NODE_ARGS } from '../support/plangate-cli.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
/** AWS CLI v2 (the `aws` on PATH may be another one). */
const AWS_CLI = '/usr/bin/aws';
const haveCli = fs.existsSync(AWS_CLI);
if (!haveCli) console.warn(`skipping the AWS CLI activity test: ${AWS_CLI} (AWS CLI v2) is not installed`);

const run = promisify(execFile);

function startServe(store: string): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(process.execPath, [...PLANGATE_NODE_ARGS, 'engine', 'serve', '--store', store], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`engine serve exited early with ${code}`)));
  });
  url.catch(() => undefined);
  return { child, url };
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

/** `aws stepfunctions <args>` against the engine, with dummy credentials; its JSON answer. */
async function aws(endpoint: string, args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(
    AWS_CLI,
    ['stepfunctions', ...args, '--endpoint-url', endpoint, '--region', 'us-east-1', '--output', 'json'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: tmpdir(),
        AWS_ACCESS_KEY_ID: 'x',
        AWS_SECRET_ACCESS_KEY: 'y',
        AWS_PAGER: '',
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_CONFIG_FILE: '/dev/null',
        AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      },
      timeout: 90_000,
    },
  );
  return stdout.trim() === '' ? {} : (JSON.parse(stdout) as Record<string, unknown>);
}

function sdk(endpoint: string): sfn.SFNClient {
  return new sfn.SFNClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    maxAttempts: 1,
  });
}

describe.skipIf(!haveCli)('activities with AWS CLI v2 against plangate engine serve', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'plangate-activities-cli-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('create-activity, then a worker that survives kill -9 of the engine: get-activity-task, send-task-success', async () => {
    const store = join(dir, 'store');
    const first = startServe(store);
    let second: ReturnType<typeof startServe> | undefined;
    try {
      const endpoint = await first.url;
      const created = await aws(endpoint, ['create-activity', '--name', 'cli-worker']);
      expect(created.activityArn).toBe('arn:aws:states:us-east-1:123456789012:activity:cli-worker');
      expect(typeof created.creationDate).toBe('string');
      const activityArn = String(created.activityArn);

      const client = sdk(endpoint);
      const { stateMachineArn } = await client.send(
        new sfn.CreateStateMachineCommand({
          name: 'cli-machine',
          roleArn: 'arn:aws:iam::123456789012:role/r',
          definition: JSON.stringify({
            StartAt: 'Work',
            States: { Work: { Type: 'Task', Resource: activityArn, ResultPath: '$.answer', End: true } },
          }),
        }),
      );
      const { executionArn } = await client.send(
        new sfn.StartExecutionCommand({ stateMachineArn, input: '{"question":42}' }),
      );
      let types: string[] = [];
      while (!types.includes('ActivityScheduled')) {
        const { events } = await client.send(new sfn.GetExecutionHistoryCommand({ executionArn }));
        types = (events ?? []).map((e) => e.type ?? '');
      }
      client.destroy();
      // the task is queued only in the execution's history: the next engine must find it there
      await kill(first.child, 'SIGKILL');

      second = startServe(store);
      const again = await second.url;
      const listed = await aws(again, ['list-activities']);
      expect((listed.activities as Array<{ name: string }>).map((a) => a.name)).toEqual(['cli-worker']);
      const described = await aws(again, ['describe-activity', '--activity-arn', activityArn]);
      expect(described).toMatchObject({ activityArn, name: 'cli-worker' });

      const task = await aws(again, [
        'get-activity-task',
        '--activity-arn',
        activityArn,
        '--worker-name',
        'cli',
      ]);
      expect(task.input).toBe('{"question":42}');
      expect(typeof task.taskToken).toBe('string');
      await aws(again, ['send-task-heartbeat', '--task-token', String(task.taskToken)]);
      await aws(again, [
        'send-task-success',
        '--task-token',
        String(task.taskToken),
        '--task-output',
        '{"answer":"forty-two"}',
      ]);
      let described2: Record<string, unknown>;
      do described2 = await aws(again, ['describe-execution', '--execution-arn', executionArn!]);
      while (described2.status === 'RUNNING');
      expect(described2.status).toBe('SUCCEEDED');
      expect(JSON.parse(String(described2.output))).toEqual({
        question: 42,
        answer: { answer: 'forty-two' },
      });
      const historyOut = await aws(again, ['get-execution-history', '--execution-arn', executionArn!]);
      const started = (historyOut.events as Array<Record<string, unknown>>).find(
        (e) => e.type === 'ActivityStarted',
      );
      expect(started?.activityStartedEventDetails).toEqual({ workerName: 'cli' });

      await aws(again, ['delete-activity', '--activity-arn', activityArn]);
      const gone = await aws(again, ['describe-activity', '--activity-arn', activityArn]).catch(
        (error: { stderr?: string }) => error.stderr ?? '',
      );
      expect(gone).toContain('ActivityDoesNotExist');
      await kill(second.child, 'SIGTERM');
      expect(second.child.exitCode).toBe(0);
    } finally {
      await kill(first.child, 'SIGKILL');
      if (second) await kill(second.child, 'SIGKILL');
    }
  }, 120_000);
});

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as sfn from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANGATE_NODE_ARGS } from '../support/plangate-cli.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

function startServe(args: string[]): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(process.execPath, [...PLANGATE_NODE_ARGS, 'engine', 'serve', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`engine serve exited early with ${code}`)));
  });
  // Callers that expect an early exit never await the URL.
  url.catch(() => undefined);
  return { child, url };
}

function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

describe('plangate engine serve', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'plangate-serve-'));
    await writeFile(
      join(dir, 'double.mjs'),
      'export const run = async (event) => ({ doubled: event.n * 2 });\n',
    );
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints its URL first, serves the SDK with --lambda handlers, and stops cleanly on SIGTERM', async () => {
    const { child, url } = startServe([
      '--store',
      join(dir, 'store'),
      '--durability',
      'strict',
      '--lambda',
      `double=${join(dir, 'double.mjs')}#run`,
    ]);
    try {
      const endpoint = await url;
      expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const client = new sfn.SFNClient({
        endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
        maxAttempts: 1,
      });
      const { stateMachineArn } = await client.send(
        new sfn.CreateStateMachineCommand({
          name: 'double',
          roleArn: 'arn:aws:iam::123456789012:role/r',
          definition: JSON.stringify({
            StartAt: 'Double',
            States: {
              Double: {
                Type: 'Task',
                Resource: 'arn:aws:states:::lambda:invoke',
                Parameters: { FunctionName: 'double', 'Payload.$': '$' },
                OutputPath: '$.Payload',
                End: true,
              },
            },
          }),
        }),
      );
      const { executionArn } = await client.send(
        new sfn.StartExecutionCommand({ stateMachineArn, input: '{"n":21}' }),
      );
      let described: sfn.DescribeExecutionOutput;
      do {
        described = await client.send(new sfn.DescribeExecutionCommand({ executionArn }));
      } while (described.status === 'RUNNING');
      expect(described).toMatchObject({ status: 'SUCCEEDED', output: '{"doubled":42}' });
      client.destroy();
      child.kill('SIGTERM');
      expect(await exitCode(child)).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 30_000);

  it('exits 2 with the usage on a bad option', async () => {
    const { child } = startServe(['--port', 'eighty']);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    expect(await exitCode(child)).toBe(2);
    expect(stderr).toContain('--port must be an integer');
    expect(stderr).toContain('Usage: plangate engine serve');
  }, 30_000);

  it('exits 2 on a durability it does not know', async () => {
    const { child } = startServe(['--durability', 'sometimes']);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    expect(await exitCode(child)).toBe(2);
    expect(stderr).toContain('--durability must be "group" or "strict", not "sometimes"');
  }, 30_000);
});

/**
 * `plangate worker` (the real CLI, a child process) against a Step Functions endpoint: without
 * --activity-arn it finds its target's activity by name, `<name prefix>-<target>`, with
 * ListActivities (page after page), as it does on AWS with --aws; a name nobody created is a
 * clear error.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sfn from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
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

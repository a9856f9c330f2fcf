/**
 * lib/worker's failure paths against the real engine served over the Step Functions API: one
 * activity Task per test whose input is a handoff, one ActivityWorker taking it, and what
 * Step Functions then says of the execution. The agent is a real `bash -c` command.
 */
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sfn from '@aws-sdk/client-sfn';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../lib/plan/schema.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import type { RunnerResult } from '../../lib/runtime/payloads/index.ts';
import { type Handoff, HandoffSchema } from '../../lib/runtime/payloads/index.ts';
import { sandboxStatus } from '../../lib/runtime/sandbox/sandbox.ts';
import { ActivityWorker, type WorkerOptions } from '../../lib/worker/worker.ts';
import { useServedEngine } from './served-engine.ts';

const ROLE = 'arn:aws:iam::123456789012:role/plangate';
const DIGEST = `sha256:${'a'.repeat(64)}`;

const served = useServedEngine();
let machines = 0;

/** A valid handoff; `fields` as a handoff's JSON would have them (defaults filled in). */
function handoff(fields: Record<string, unknown> = {}): Handoff {
  return HandoffSchema.parse({
    plan: { id: 'fix-it', version: 1, digest: DIGEST },
    executionId: 'arn:aws:states:us-east-1:123456789012:execution:fix-it:1',
    stepId: 'write-the-fix',
    index: 1,
    total: 1,
    description: 'Write the fix',
    target: 'coder',
    task: 'Fix it.',
    attempt: 1,
    contract: { kind: 'command', command: 'test -f fixed.txt' },
    timeoutSeconds: 30,
    heartbeatSeconds: 30,
    ...fields,
  });
}

interface Outcome {
  readonly execution: sfn.DescribeExecutionOutput;
  readonly log: string[];
  readonly workspace: string;
  readonly ms: number;
}

/**
 * Queues `input` on a fresh activity (its Task limited by `task`), lets one worker take it, and
 * returns what the execution became and what the worker said.
 */
async function work(
  input: Handoff,
  agentCommand: string,
  task: { TimeoutSeconds?: number; HeartbeatSeconds?: number } = {},
  options: Partial<WorkerOptions> = {},
): Promise<Outcome> {
  machines += 1;
  const { activityArn } = await served.client.send(
    new sfn.CreateActivityCommand({ name: `coder-${machines}` }),
  );
  const { stateMachineArn } = await served.client.send(
    new sfn.CreateStateMachineCommand({
      name: `work-${machines}`,
      roleArn: ROLE,
      definition: JSON.stringify({
        StartAt: 'Work',
        States: { Work: { Type: 'Task', Resource: activityArn, End: true, ...task } },
      }),
    }),
  );
  const { executionArn } = await served.client.send(
    new sfn.StartExecutionCommand({ stateMachineArn, input: JSON.stringify(input) }),
  );
  const workspace = await mkdtemp(join(tmpdir(), 'plangate-worker-'));
  const log: string[] = [];
  const started = performance.now();
  await new ActivityWorker({
    sfn: served.client,
    activityArn: activityArn as string,
    target: 'coder',
    workspace,
    agentCommand,
    log: (line) => log.push(line),
    once: true,
    workerName: 'vm:9498',
    ...options,
  }).run();
  const ms = performance.now() - started;
  for (;;) {
    const execution = await served.client.send(new sfn.DescribeExecutionCommand({ executionArn }));
    if (execution.status !== 'RUNNING') return { execution, log, workspace, ms };
    await new Promise((r) => setTimeout(r, 20));
  }
}

const causeOf = (o: Outcome) => JSON.parse(o.execution.cause ?? '{}') as Record<string, unknown>;
const resultOf = (o: Outcome) => JSON.parse(o.execution.output ?? '{}') as RunnerResult;
const USAGE_LINE = `echo '{"usage":{"tokens":1200,"cost_usd":0.03}}'`;

describe('ActivityWorker', { timeout: 30_000 }, () => {
  it('answers an agent that exits non-zero with SendTaskFailure (AgentFailed), its exit code, stderr and what it used', async () => {
    const o = await work(handoff(), `${USAGE_LINE}; echo 'cannot reach the repo' >&2; exit 3`);
    expect(o.execution.status).toBe('FAILED');
    expect(o.execution.error).toBe('AgentFailed');
    expect(causeOf(o)).toEqual({
      message: 'agent exited 3: cannot reach the repo',
      worker: 'vm:9498',
      exitCode: 3,
      usage: { tokens: 1200, costUsd: 0.03 },
      // What the agent ran and said, for the task's execution.log (not a git workspace: no files).
      agentRun: {
        command: expect.stringContaining('exit 3'),
        exitCode: 3,
        durationMs: expect.any(Number),
        stdout: '{"usage":{"tokens":1200,"cost_usd":0.03}}\n',
        stderr: 'cannot reach the repo\n',
        blockers: [],
        deviations: [],
        sandboxed: sandboxStatus().kind === 'bwrap',
      },
    });
    expect(o.log.at(-1)).toBe('✗ write-the-fix: agent exited 3: cannot reach the repo');
  });

  it("stops an agent that runs past the step's time (TimeoutError), cut to the plan's wall clock left", async () => {
    const o = await work(
      handoff({ timeoutSeconds: 30, budget: { wallClockSeconds: 1.7 } }),
      'sleep 5; touch late.txt',
    );
    expect(o.execution.error).toBe('TimeoutError');
    expect(causeOf(o).message).toBe("agent timed out after 1 s (the plan's wall-clock budget left)");
    expect(o.ms).toBeLessThan(4000);
    expect(existsSync(join(o.workspace, 'late.txt'))).toBe(false);
  });

  it('returns a failing contract as evidence (the checker fails the step), with the usage', async () => {
    const o = await work(handoff(), `echo 'I fixed it'; ${USAGE_LINE}`);
    expect(o.execution.status).toBe('SUCCEEDED');
    const result = resultOf(o);
    expect(result).toMatchObject({
      stepId: 'write-the-fix',
      status: 'succeeded',
      usage: { tokens: 1200, costUsd: 0.03 },
      evidence: { kind: 'command', ran: 'test -f fixed.txt', passed: false },
    });
    expect(o.log.at(-1)).toMatch(/^✗ write-the-fix: agent exited 0; contract /);
  });

  it('refuses a handoff of a plan it does not hold (Worker.UnknownPlan) without running the agent', async () => {
    const o = await work(handoff(), 'touch ran.txt', {}, { approvedPlan: async () => undefined });
    expect(o.execution.error).toBe('Worker.UnknownPlan');
    expect(causeOf(o).message).toBe(
      `the handoff names plan fix-it (${DIGEST}), which is not an approved plan this worker holds`,
    );
    expect(existsSync(join(o.workspace, 'ran.txt'))).toBe(false);
  });

  it("runs the approved plan's contract, not the handoff's, when it holds the plan", async () => {
    const plan: Plan = PlanSchema.parse({
      id: 'fix-it',
      version: 1,
      objective: 'Fix it',
      steps: [
        {
          id: 'write-the-fix',
          description: 'Write the fix',
          target: 'coder',
          task: 'Fix it.',
          contract: { kind: 'command', command: 'grep -q fixed fixed.txt' },
        },
      ],
    });
    const lenient = handoff({ contract: { kind: 'command', command: 'true' } });
    const o = await work(
      lenient,
      'echo broken > fixed.txt',
      {},
      {
        approvedPlan: async (digest) => (digest === DIGEST ? plan : undefined),
      },
    );
    expect(resultOf(o).evidence).toMatchObject({ ran: 'grep -q fixed fixed.txt', passed: false });
  });

  it('stops the agent when a heartbeat is refused because the task timed out, and answers nothing', async () => {
    const o = await work(handoff({ heartbeatSeconds: 1 }), 'sleep 4; touch late.txt', { TimeoutSeconds: 1 });
    expect(o.execution.error).toBe('States.Timeout');
    expect(o.log.at(-1)).toBe('✗ write-the-fix: heartbeat refused (TaskTimedOut); stopping the agent');
    expect(o.ms).toBeLessThan(3500);
    expect(existsSync(join(o.workspace, 'late.txt'))).toBe(false);
  });

  it('says so, and the worker goes on, when its result is refused because the task already timed out', async () => {
    // Heartbeats every 20 s: none is sent before the agent ends, after the Task's 1 s.
    const o = await work(handoff({ heartbeatSeconds: 60 }), 'sleep 1.6; touch fixed.txt', {
      TimeoutSeconds: 1,
    });
    expect(o.execution.error).toBe('States.Timeout');
    expect(o.log.at(-1)).toBe(
      '✗ write-the-fix: the result was refused (TaskTimedOut): the task ended before it was sent',
    );
  });

  it('refuses a task that is not a handoff (Worker.InvalidHandoff)', async () => {
    const o = await work({ nonsense: true } as unknown as Handoff, 'touch ran.txt');
    expect(o.execution.error).toBe('Worker.InvalidHandoff');
    expect(existsSync(join(o.workspace, 'ran.txt'))).toBe(false);
  });
});

/**
 * A step that outlives its timeout is stopped by its own timeout and recorded once per attempt,
 * through the real `plangate run` at real time: the runner kills the command, journals TASK_FAILED
 * with the timeout that fired, and the recovery's next attempt starts after. (The Task state's
 * timeout was the tool's own, so both fired together: each attempt was journaled twice, once as
 * States.Timeout by the machine and once by the runner still working, after the next attempt had
 * started.)
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { CliRun, workDir } from './cli.ts';

it('a hung command is timed out by its step, each attempt recorded once, in order', async () => {
  const cwd = await workDir();
  const plan = join(cwd, 'hang.yaml');
  await writeFile(
    plan,
    `id: hang
version: 1
objective: Run a command that hangs past its step's timeout, twice, then ask a person
sizePolicy: { minSteps: 1 }
recovery:
  transient: { maxAttempts: 2, intervalSeconds: 1, backoffRate: 1 }
steps:
  - id: hang
    description: Sleep past the timeout
    tool: shell
    args: { command: sleep 300 }
    timeoutSeconds: 2
    contract: { kind: command, command: "true" }
`,
  );
  const run = new CliRun(['run', plan, '--json', '--solo', '--approve'], cwd);
  await run.untilEvent('RECOVERY_ESCALATION', 'hang');
  run.answer('abort');
  await run.exited;
  const ofStep = run.events.filter((e) => e.task_id === 'hang').map((e) => e.event);
  const started = run.count('TASK_STARTED', 'hang');
  expect(started).toBeGreaterThanOrEqual(2);
  expect(run.count('TASK_FAILED', 'hang'), ofStep.join(' ')).toBe(started);
  expect(run.count('FAILURE_DETECTED', 'hang'), ofStep.join(' ')).toBe(started);
  for (const failed of run.events.filter((e) => e.event === 'TASK_FAILED'))
    expect((failed.details as { error_message?: string }).error_message).toMatch(/timed out after 2000 ms/);
  // Attempt 1's failure is recorded before attempt 2 starts.
  const second = ofStep.indexOf('TASK_STARTED', 1);
  expect(ofStep.slice(0, second)).toEqual([
    'TASK_STARTED',
    'TASK_FAILED',
    'FAILURE_DETECTED',
    'FAILURE_CLASSIFIED',
  ]);
}, 120_000);

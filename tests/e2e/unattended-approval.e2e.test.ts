/**
 * Issue 30: `plangate run --approve` approved, unattended, steps whose effect nobody had proven
 * (a step `env` of `PATH=./bin:…`, a wrapper the analysis did not know, an upload). Through the
 * real CLI: `--approve` answers only a gate whose every call is proven read-only; any other is
 * left to a person, the run says why, the gate marks "effect unknown" or "exfiltration", and
 * nothing runs until a person answers.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliRun, UNPROVEN_NOTE, workDir } from './cli.ts';

const unattended = (plan: string, cwd: string) =>
  new CliRun(
    ['run', plan, '--json', '--approve', '--time-scale', '0.01'],
    cwd,
    {},
    { approvesWhenAsked: false },
  );

/** A plan whose only step runs `command` (with `env`), after a read-only first step. */
const planWith = (command: string, env = '') => `id: unattended
version: 1
objective: Look around, then run one more command
sizePolicy: { minSteps: 1 }
steps:
  - id: look
    description: List the work directory
    tool: shell
    args: { command: ls -la }
    contract: { kind: command, command: test -d . }
  - id: more
    description: Run one more command
    dependsOn: [look]
    tool: shell
    args:
      command: ${JSON.stringify(command)}${env}
    contract: { kind: command, command: test -d . }
`;

describe('plangate run --approve', { timeout: 90_000 }, () => {
  it('leaves a plan whose step sets PATH to a person, and runs nothing meanwhile', async () => {
    const cwd = await workDir();
    // What `ls` would be, were ./bin first on PATH: it leaves a mark.
    await mkdir(join(cwd, 'bin'));
    await writeFile(join(cwd, 'bin/ls'), '#!/bin/sh\ntouch "$(dirname "$0")/../ran"\n');
    await chmod(join(cwd, 'bin/ls'), 0o755);
    // (A step's `env: {PATH: …}` is refused by the validator, unsafe-env: the command itself sets it here.)
    await writeFile(join(cwd, 'plan.yaml'), planWith('PATH=./bin:/usr/bin:/bin ls'));
    const run = unattended('plan.yaml', cwd);
    try {
      await run.until('the refusal', () => run.stderr.includes(UNPROVEN_NOTE));
      expect(run.stderr).toContain(
        '--approve: a person must approve this plan gate, what it covers is not proven read-only: step more, effect unknown: `PATH=./bin:/usr/bin:/bin ls` sets PATH (where commands are looked up), which changes what runs; asking.',
      );
      // The gate says it too, as a warning.
      await run.until('the gate', () =>
        run.stderr.includes('!! effect unknown: `PATH=./bin:/usr/bin:/bin ls` sets PATH'),
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(run.count('TASK_STARTED')).toBe(0);
      expect(existsSync(join(cwd, 'ran'))).toBe(false);
    } finally {
      run.terminate();
      await run.exited;
    }
  });

  it('leaves a plan that reads a credential file to a person, marked exfiltration', async () => {
    const cwd = await workDir();
    await writeFile(join(cwd, '.env'), 'TOKEN=not-a-real-one\n');
    await writeFile(join(cwd, 'plan.yaml'), planWith('base64 .env'));
    const run = unattended('plan.yaml', cwd);
    try {
      await run.until('the refusal', () => run.stderr.includes(UNPROVEN_NOTE));
      expect(run.stderr).toContain('step more, exfiltration: `base64 .env` reads environment secrets (.env)');
      await run.until('the gate', () =>
        run.stderr.includes('!! exfiltration: `base64 .env` reads environment secrets (.env)'),
      );
      expect(run.count('TASK_STARTED')).toBe(0);
    } finally {
      run.terminate();
      await run.exited;
    }
  });

  it('still approves, unattended, a plan whose every call is proven read-only', async () => {
    const cwd = await workDir();
    await writeFile(join(cwd, 'plan.yaml'), planWith('grep -c . plan.yaml'));
    const run = unattended('plan.yaml', cwd);
    expect(await run.exited, run.stderr).toBe(0);
    expect(run.stderr).toContain('--approve: answering the plan gate APPROVE non-interactively');
    expect(run.stderr).not.toContain(UNPROVEN_NOTE);
    expect(run.count('TASK_COMPLETED')).toBe(2);
  });
});

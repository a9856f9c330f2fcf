/**
 * The harness Lambdas' log of a local run (`logs/harness.jsonl` in the store, what CloudWatch Logs
 * holds on AWS): correlated entries for every step and the gate, the metrics they stand for, and
 * neither the secret planted in the plan nor any task token; `plangate logs` shows them.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { defaultStoreDir, storePaths } from '../../lib/serve/store-directory.ts';
import { CliRun, runPlan, workDir } from './cli.ts';

/** A Step Functions task token's shape, planted in an error message a step prints. */
const TOKEN_SHAPED = `AQ${'x7Yz'.repeat(40)}`;

const PLAN = `
id: harness-logs
version: 1
objective: Run steps that succeed, fail and run side by side, with a secret in their args and errors
sizePolicy: { minSteps: 1 }
secrets:
  - { name: apiToken, source: env, ref: PLANGATE_PLANTED_SECRET }
recovery:
  invalid_input: { detect: { exitCodes: [7] }, maxAttempts: 0, escalation: skip }
steps:
  - id: prepare
    description: Print a line with the secret in it
    tool: shell
    args: { command: 'echo "calling with \${secrets.apiToken}"' }
    contract: { kind: command, command: 'true' }
  - id: left
    description: One branch
    dependsOn: [prepare]
    tool: shell
    args: { command: 'echo left' }
    contract: { kind: command, command: 'true' }
  - id: right
    description: The other branch
    dependsOn: [prepare]
    tool: shell
    args: { command: 'echo right' }
    contract: { kind: command, command: 'true' }
  - id: refused
    description: A tool that fails with the secret and a token-shaped value in its error
    dependsOn: [prepare]
    critical: false
    onFail: { retries: 0, escalation: skip }
    tool: shell
    args: { command: 'echo "refused \${secrets.apiToken} ${TOKEN_SHAPED}" >&2; exit 7' }
    contract: { kind: command, command: 'true' }
  - id: finish
    description: After both branches
    dependsOn: [left, right]
    tool: shell
    args: { command: 'echo done' }
    contract: { kind: command, command: 'true' }
`;

const STEPS = ['prepare', 'left', 'right', 'refused', 'finish'];

type Entry = Record<string, unknown>;

it('logs correlated entries for every step and the gate, with their metrics, and no secret or task token', async () => {
  const cwd = await workDir();
  const secret = `plangate-planted-${randomBytes(12).toString('hex')}`;
  await writeFile(join(cwd, 'plan.yaml'), PLAN);
  const run = runPlan('plan.yaml', cwd, ['--approve'], { PLANGATE_PLANTED_SECRET: secret });
  expect(await run.exited, run.stderr).toBe(0);
  const execution = run.executionArn;

  const text = await readFile(join(storePaths(defaultStoreDir(cwd)).logs, 'harness.jsonl'), 'utf8');
  for (const needle of [secret, Buffer.from(secret).toString('base64'), TOKEN_SHAPED])
    expect(text).not.toContain(needle);
  // Every task token the local engine hands out starts so.
  expect(text).not.toMatch(/pgt1\.[A-Za-z0-9_-]{20,}/);
  expect(text).not.toMatch(/AQ[A-Za-z0-9+/=_-]{100,}/);

  const entries = text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Entry)
    .filter((e) => e.execution === execution);
  const logged = entries.filter((e) => e._aws === undefined);
  const metric = (name: string, dims: Entry = {}) =>
    entries.filter(
      (e) =>
        e._aws !== undefined && e[name] !== undefined && Object.entries(dims).every(([k, v]) => e[k] === v),
    );

  for (const step of STEPS) {
    const about = logged.filter((e) => e.step === step);
    expect(about.length, `entries about ${step}`).toBeGreaterThan(0);
    for (const e of about)
      expect(e).toMatchObject({ plan: 'harness-logs', planVersion: 1, service: 'plangate' });
    expect(about.some((e) => e.handler === 'stepRunner' && e.message === 'journal TASK_STARTED')).toBe(true);
    expect(
      about.some((e) => e.handler === 'stepRunner' && e.level === (step === 'refused' ? 'WARN' : 'INFO')),
    ).toBe(true);
    expect(metric('StepsRun').some((e) => e.step === step)).toBe(true);
  }
  for (const step of STEPS.filter((s) => s !== 'refused'))
    expect(
      logged.some(
        (e) => e.step === step && e.handler === 'contractChecker' && e.message === 'journal TASK_COMPLETED',
      ),
    ).toBe(true);
  expect(logged).toContainEqual(
    expect.objectContaining({
      step: 'refused',
      level: 'WARN',
      failureClass: 'invalid_input',
      message: 'stepRunner failed: Plangate.InvalidInput',
    }),
  );
  expect(metric('StepsFailed', { FailureClass: 'invalid_input', step: 'refused' })).toHaveLength(1);

  // The plan gate: opened by the gate Lambda, answered (--approve) through the approvals API.
  expect(logged).toContainEqual(
    expect.objectContaining({ handler: 'gate', gate: 'plan', message: 'journal GATE_APPROVAL_REQUESTED' }),
  );
  expect(logged).toContainEqual(
    expect.objectContaining({
      handler: 'approvalsApi',
      gate: 'plan',
      message: 'journal GATE_APPROVED',
      decision: 'APPROVE',
    }),
  );
  expect(metric('Decisions', { Gate: 'plan', Decision: 'APPROVE' })).toHaveLength(1);
  expect(metric('GateWaitTime', { Gate: 'plan' })[0]?.GateWaitTime).toBeGreaterThanOrEqual(0);
  expect(logged.filter((e) => e.level === 'ERROR')).toEqual([]);

  // plangate logs: by execution name, one step's entries, as text or as written.
  const name = execution.slice(execution.lastIndexOf(':') + 1);
  const shown = new CliRun(['logs', name, '--step', 'refused'], cwd);
  expect(await shown.exited, shown.stderr).toBe(0);
  const lines = shown.stdout.trim().split('\n');
  expect(lines.length).toBe(entries.filter((e) => e.step === 'refused').length);
  expect(lines.every((line) => / refused {2}/.test(line))).toBe(true);
  expect(shown.stdout).toContain('WARN   stepRunner      refused  stepRunner failed: Plangate.InvalidInput');
  expect(shown.stdout).toContain('StepsFailed=1 (FailureClass=invalid_input)');
  const json = new CliRun(['logs', execution, '--json'], cwd);
  expect(await json.exited, json.stderr).toBe(0);
  expect(
    json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line)),
  ).toEqual(entries);
  const none = new CliRun(['logs', name, '--step', 'no-such-step'], cwd);
  expect(await none.exited).toBe(1);
  expect(none.stderr).toContain('no entries');
}, 180_000);

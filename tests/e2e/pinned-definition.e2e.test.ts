/**
 * What was approved is what the engine runs: a run waits at its plan gate, `plangate run` is
 * killed, and then the store's engine definitions are edited (or a policy file is removed) before
 * `plangate resume`. Resume refuses, with INTEGRITY_MISMATCH journaled and an error naming the
 * execution and both hashes; the edited command never runs; `plangate audit verify` reports it.
 * Through the real CLI and a temporary store.
 */
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { IntegrityPin, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { defaultStoreDir } from '../../lib/serve/store-directory.ts';
import { CliRun, REPO, runPlan, storedEvents, workDir } from './cli.ts';

const APPROVED_COMMAND = 'echo ok > approved.txt';
/** The edit keeps the contract passing, so only the integrity check can tell. */
const EDITED_COMMAND = 'touch edited.txt; echo ok > approved.txt';

function writePlan(cwd: string): string {
  const file = join(cwd, 'plan.yaml');
  writeFileSync(
    file,
    `id: pinned-definition
version: 1
objective: Write approved.txt in the workspace and prove it is there
sizePolicy: { minSteps: 1 }
steps:
  - id: mark
    description: Write approved.txt in the workspace
    tool: shell
    args: { command: "${APPROVED_COMMAND}" }
    contract: { kind: command, command: test -f approved.txt }
`,
  );
  return file;
}

/** `plangate run` up to its plan gate, then kill -9: the execution waits in the store. */
async function waitingAtGate(cwd: string, extra: readonly string[] = []): Promise<string> {
  // A solo run: the resumed --approve approves on the launcher's behalf.
  const run = runPlan(writePlan(cwd), cwd, ['--solo', ...extra]);
  await run.untilEvent('GATE_APPROVAL_REQUESTED');
  await run.until('the gate asked in the terminal', () => run.stderr.includes('Answer by:'));
  // The gate's task has handed its token out (TaskSubmitted) once its Lambda returned.
  await new Promise((r) => setTimeout(r, 1500));
  run.kill9();
  await run.exited;
  return run.executionArn;
}

/** Every engine file that holds the approved command, with the command edited. */
function editStoredDefinitions(cwd: string): number {
  const engine = join(defaultStoreDir(cwd), 'engine');
  const files = [
    join(engine, 'registry.json'),
    ...readdirSync(join(engine, 'definitions')).map((f) => join(engine, 'definitions', f)),
  ];
  let edited = 0;
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes(APPROVED_COMMAND)) continue;
    writeFileSync(file, text.replaceAll(APPROVED_COMMAND, EDITED_COMMAND));
    edited++;
  }
  return edited;
}

/** PLAN_CREATED's pin. */
function pinOf(events: readonly JournalRecord[]): IntegrityPin | undefined {
  return (events[0]?.details as { integrity?: IntegrityPin } | undefined)?.integrity;
}

const resume = (arn: string, cwd: string, extra: readonly string[] = []) =>
  new CliRun(['resume', arn, '--approve', '--json', '--time-scale', '0.01', ...extra], cwd);

describe.concurrent('the approved definition and policy set are pinned', { timeout: 120_000 }, () => {
  it('refuses to resume an execution whose stored definition was edited, and audit verify reports it', async () => {
    const cwd = await workDir();
    const arn = await waitingAtGate(cwd);
    expect(editStoredDefinitions(cwd)).toBeGreaterThan(0);

    const resumed = resume(arn, cwd);
    const exit = await resumed.exited;
    expect(existsSync(join(cwd, 'edited.txt')), 'the edited command ran').toBe(false);
    expect(exit, resumed.stderr).toBe(1);
    expect(existsSync(join(cwd, 'approved.txt'))).toBe(false);
    const events = await storedEvents(cwd, arn);
    const pinned = pinOf(events)?.definition_hash;
    expect(pinned).toMatch(/^sha256:[0-9a-f]{64}$/);
    const mismatch = events.find((e) => e.event === 'INTEGRITY_MISMATCH');
    expect(mismatch?.details).toMatchObject({ check: 'definition', expected: pinned, at: 'resume' });
    const found = String(mismatch?.details.found);
    expect(found).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(found).not.toBe(pinned);
    expect(events.some((e) => e.event === 'TASK_STARTED' || e.event === 'GATE_APPROVED')).toBe(false);
    // The error names the execution, both hashes and the way forward.
    expect(resumed.stderr).toContain(arn);
    expect(resumed.stderr).toContain(`${pinned}`);
    expect(resumed.stderr).toContain(found);
    expect(resumed.stderr).toMatch(/new version/);

    const verify = new CliRun(['audit', 'verify', '--execution', arn], cwd);
    expect(await verify.exited, verify.stderr).toBe(1);
    expect(verify.stdout + verify.stderr).toContain('definition');
    expect(verify.stdout + verify.stderr).toContain(found);
    expect(verify.stdout + verify.stderr).not.toContain('all intact');
  });

  it('refuses to resume when a policy file was removed after submission: the denied step does not run', async () => {
    const cwd = await workDir();
    const policies = join(cwd, 'policies');
    cpSync(join(REPO, 'policies/default'), policies, { recursive: true });
    writeFileSync(
      join(policies, 'no-shell.cedar'),
      `@id("no-shell-steps")\nforbid (principal, action == Action::"RunStep", resource) when { resource.tool == "shell" };\n`,
    );
    const arn = await waitingAtGate(cwd, ['--policy', policies]);
    rmSync(join(policies, 'no-shell.cedar'));

    const resumed = resume(arn, cwd, ['--policy', policies]);
    const exit = await resumed.exited;
    expect(existsSync(join(cwd, 'approved.txt')), 'the step the pinned policy denies ran').toBe(false);
    expect(exit, resumed.stderr).toBe(1);
    const events = await storedEvents(cwd, arn);
    const pinned = pinOf(events)?.policy_hash;
    expect(pinned).toMatch(/^sha256:[0-9a-f]{64}$/);
    const mismatch = events.find((e) => e.event === 'INTEGRITY_MISMATCH');
    expect(mismatch?.details).toMatchObject({ check: 'policy', expected: pinned, at: 'resume' });
    expect(events.some((e) => e.event === 'TASK_STARTED')).toBe(false);
    expect(resumed.stderr).toContain(arn);
    expect(resumed.stderr).toContain(`${pinned}`);
    expect(resumed.stderr).toMatch(/polic/);
  });

  it('resumes an untouched execution as before, and audit verify finds it intact', async () => {
    const cwd = await workDir();
    const arn = await waitingAtGate(cwd);
    const resumed = resume(arn, cwd);
    expect(await resumed.exited, resumed.stderr).toBe(0);
    expect(existsSync(join(cwd, 'approved.txt'))).toBe(true);
    const events = await storedEvents(cwd, arn);
    expect(events.some((e) => e.event === 'INTEGRITY_MISMATCH')).toBe(false);
    const approved = events.find((e) => e.event === 'GATE_APPROVED' && e.details.gate === 'plan');
    expect(pinOf(events)?.definition_hash).toMatch(/^sha256:/);
    expect(approved?.details.definition_hash).toBe(pinOf(events)?.definition_hash);
    const verify = new CliRun(['audit', 'verify', '--execution', arn], cwd);
    expect(await verify.exited, verify.stdout + verify.stderr).toBe(0);
  });
});

/**
 * The platform's policy in `plangate run`: `--approve` answers a gate only where policy permits
 * auto-approval (the shipped set: never anything destructive), and a plan the policy refuses is
 * not run, with one line naming the policy and exit code 1. Through the CLI, its terminal and the
 * store it leaves.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPlan, storedEvents, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

/** A plan whose second step deletes what the first made (its own gate, as the validator demands). */
const DESTRUCTIVE = {
  id: 'auto-approve-destructive',
  objective: 'Make a scratch directory, then remove it again',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'make',
      description: 'Make the scratch directory',
      tool: 'shell',
      args: { command: 'mkdir -p scratch-dir' },
      contract: { kind: 'command', command: 'test -d scratch-dir' },
    },
    {
      id: 'wipe',
      description: 'Remove the scratch directory',
      tool: 'shell',
      dependsOn: ['make'],
      args: { command: 'rm -rf scratch-dir' },
      requiresApproval: true,
      contract: { kind: 'command', command: 'test ! -e scratch-dir' },
    },
  ],
};

const HARMLESS = {
  id: 'auto-approve-harmless',
  objective: 'Echo one value and prove it was echoed',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'say',
      description: 'Echo hello',
      tool: 'echo',
      args: { message: 'hello' },
      contract: { kind: 'assert', expression: 'output.message = "hello"' },
    },
  ],
};

async function planFile(cwd: string, plan: unknown): Promise<string> {
  const file = join(cwd, 'plan.json');
  await writeFile(file, JSON.stringify(plan));
  return file;
}

describe.concurrent('policy in plangate run', { timeout: 90_000 }, () => {
  it('auto-approval is refused where policy forbids it: --approve asks a person about a destructive plan', async () => {
    const cwd = await workDir();
    // This test is the person asked: it answers each gate itself.
    const run = runPlan(
      await planFile(cwd, DESTRUCTIVE),
      cwd,
      ['--approve'],
      {},
      { approvesWhenAsked: false },
    );
    await run.until('the plan gate asked of a person', () =>
      run.stderr.includes("the platform's policy does not permit approving this gate non-interactively"),
    );
    expect(run.count('GATE_APPROVED')).toBe(0);
    run.answer('approve');
    await run.until('the step gate asked of a person', () =>
      /does not permit approving this gate non-interactively[\s\S]*does not permit approving this gate/.test(
        run.stderr,
      ),
    );
    run.answer('approve');
    expect(await run.exited, run.stderr).toBe(0);
    const events = await storedEvents(cwd, run.executionArn);
    expect(seedOrderProblems(events)).toEqual([]);
    const decisions = events.filter((e) => e.event === 'POLICY_DECISION').map((e) => e.details);
    expect(decisions).toEqual([
      expect.objectContaining({
        action: 'AutoApprove',
        decision: 'deny',
        policies: ['auto-approve-only-harmless-plans'],
        outcome: 'a person is asked',
      }),
      expect.objectContaining({
        action: 'AutoApprove',
        decision: 'deny',
        policies: ['auto-approve-only-harmless-steps'],
      }),
    ]);
    // The votes are the person's, not --approve's.
    for (const vote of events.filter((e) => e.event === 'GATE_VOTE'))
      expect(vote.details.comment ?? '').not.toMatch(/--approve/);
  });

  it('a harmless plan is auto-approved, its vote naming the policy that let it through', async () => {
    const cwd = await workDir();
    const run = runPlan(await planFile(cwd, HARMLESS), cwd, ['--approve']);
    expect(await run.exited, run.stderr).toBe(0);
    const events = await storedEvents(cwd, run.executionArn);
    expect(events.filter((e) => e.event === 'POLICY_DECISION')).toEqual([]);
    expect(events.find((e) => e.event === 'GATE_VOTE')?.details.comment).toMatch(
      /^auto-approved by \S+ \(--approve; policy baseline-permit\)$/,
    );
  });

  it('a plan the policy refuses is not run: one line naming the policy, exit 1', async () => {
    const cwd = await workDir();
    const policies = await mkdtemp(join(tmpdir(), 'plangate-run-policy-'));
    await writeFile(
      join(policies, 'org.cedar'),
      `permit (principal, action, resource);
@id("echo-is-reserved")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.tools.contains("echo") } unless { principal in Group::"echoers" };
`,
    );
    const run = runPlan(await planFile(cwd, HARMLESS), cwd, [
      '--approve',
      '--policy',
      policies,
      '--as',
      'mallory',
    ]);
    expect(await run.exited).toBe(1);
    expect(run.stderr).toContain(
      '✗ policy denies mallory SubmitPlan on Plan "auto-approve-harmless@v1" (forbidden by echo-is-reserved): not run.',
    );
    expect(run.stderr).not.toContain('Execution:');
  });

  it('an org that wants four eyes on every plan refuses solo runs (the SubmitPlan context says solo)', async () => {
    const cwd = await workDir();
    const policies = await mkdtemp(join(tmpdir(), 'plangate-run-policy-'));
    await writeFile(
      join(policies, 'org.cedar'),
      `permit (principal, action, resource);
@id("four-eyes-always")
forbid (principal, action == Action::"SubmitPlan", resource) when { context.solo };
`,
    );
    const plan = await planFile(cwd, HARMLESS);
    // --approve approves one's own plan: it is a solo run too.
    for (const flag of ['--solo', '--approve']) {
      const run = runPlan(plan, cwd, [flag, '--policy', policies, '--as', 'mallory']);
      expect(await run.exited).toBe(1);
      expect(run.stderr).toContain('(forbidden by four-eyes-always): not run.');
      expect(run.stderr).not.toContain('Execution:');
    }
  });

  it('a policy directory that does not load is refused with its problems located, exit 2', async () => {
    const cwd = await workDir();
    const policies = await mkdtemp(join(tmpdir(), 'plangate-run-policy-'));
    await writeFile(
      join(policies, 'bad.cedar'),
      'permit (principal, action, resource) when { resource.nope };\n',
    );
    const run = runPlan(await planFile(cwd, HARMLESS), cwd, ['--policy', policies]);
    expect(await run.exited).toBe(2);
    expect(run.stderr).toMatch(/bad\.cedar:1:\d+ error cedar-validation .*nope/);
  });
});

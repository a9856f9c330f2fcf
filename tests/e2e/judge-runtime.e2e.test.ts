/**
 * The platform's policy judges what runs, through `plangate run`: a value filled in at run time
 * that makes a gated call destructive re-opens what the policy requires of that gate (an org rule
 * "destructive content needs two sre") instead of riding on the votes given for the call as
 * written. (A revision made at a gate: policy-judges-runs.e2e.test.ts.)
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, runPlan, storedEvents, workDir } from './cli.ts';

const ORG_POLICY = join(REPO, 'examples/policies/org');

async function planFile(cwd: string, plan: unknown): Promise<string> {
  await mkdir(join(cwd, 'scratch-dir', 'inner'), { recursive: true });
  const file = join(cwd, 'plan.json');
  await writeFile(file, JSON.stringify(plan));
  return file;
}

describe('policy judges the call as it runs', { timeout: 90_000 }, () => {
  it('a run-time value that makes a gated call destructive needs what the policy asks of destructive content', async () => {
    const cwd = await workDir();
    const file = await planFile(cwd, {
      id: 'judge-resolved-value',
      objective: 'Pick an option, then list the scratch directory with it',
      sizePolicy: { minSteps: 1 },
      steps: [
        {
          id: 'pick',
          description: 'Pick the option',
          tool: 'echo',
          args: { message: '-delete' },
          outputs: ['message'],
          contract: { kind: 'assert', expression: 'output.message = "-delete"' },
        },
        {
          id: 'call',
          description: 'List the scratch directory with the option',
          tool: 'shell',
          dependsOn: ['pick'],
          args: { command: 'find scratch-dir $OPT', env: { OPT: '${steps.pick.message}' } },
          requiresApproval: true,
          contract: { kind: 'assert', expression: 'true' },
        },
      ],
    });
    // friend is no sre (examples/policies/org/groups.json): one approval of a call that is not
    // destructive as written completes the gates; the call as it runs is `find … -delete`.
    const run = runPlan(file, cwd, ['--policy', ORG_POLICY, '--as', 'friend', '--solo']);
    await run.until('the plan gate', () => run.stderr.includes('change <step> <arg> <value>'));
    run.answer('approve');
    await run.untilEvent('GATE_APPROVED');
    const mark = run.stderr.length;
    await run.until('the step gate', () => run.stderr.slice(mark).includes('change <step> <arg> <value>'));
    run.answer('approve');
    await run.until('the run-time refusal', () =>
      run.events.some((e) => e.event === 'POLICY_DECISION' && e.details.action === 'RunStep'),
    );
    await run.untilEvent('RECOVERY_ESCALATION');
    run.answer('abort');
    await run.exited;
    expect(existsSync(join(cwd, 'scratch-dir', 'inner'))).toBe(true);
    const events = await storedEvents(cwd, run.executionArn);
    const refusal = events.find((e) => e.event === 'POLICY_DECISION' && e.details.action === 'RunStep');
    expect(refusal?.details).toEqual(
      expect.objectContaining({
        decision: 'deny',
        policies: ['two-sre-for-destructive'],
        outcome: 'the step did not run',
      }),
    );
    expect(events.find((e) => e.event === 'FAILURE_CLASSIFIED')?.details.failure_type).toBe('permission');
  });
});

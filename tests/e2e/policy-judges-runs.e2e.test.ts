/**
 * The platform's policy judges what will run, through `plangate run`: a gate modified at the plan
 * gate is auto-approved (or not) as the revision runs, not as the plan was written; and a value
 * filled in at run time that makes a gated call destructive re-opens what the policy requires of
 * that gate (an org rule "destructive content needs two sre") instead of riding on the votes given
 * for the call as written.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPlan, storedEvents, workDir } from './cli.ts';

async function planFile(cwd: string, plan: unknown): Promise<string> {
  await mkdir(join(cwd, 'scratch-dir', 'inner'), { recursive: true });
  const file = join(cwd, 'plan.json');
  await writeFile(file, JSON.stringify(plan));
  return file;
}

describe.concurrent('policy judges what will run', { timeout: 90_000 }, () => {
  it('--approve does not auto-approve a step gate whose revision made its call destructive', async () => {
    const cwd = await workDir();
    const file = await planFile(cwd, {
      id: 'judge-revision-auto',
      objective: 'Run a script, then look at the scratch directory',
      sizePolicy: { minSteps: 1 },
      steps: [
        // Of unknown effect: --approve leaves the plan gate to a person, who modifies `look`.
        {
          id: 'prepare',
          description: 'Run the preparation script',
          tool: 'shell',
          args: { command: 'sh ./prepare.sh' },
          contract: { kind: 'command', command: 'true' },
        },
        {
          id: 'look',
          description: 'List the scratch directory',
          tool: 'shell',
          dependsOn: ['prepare'],
          args: { command: 'ls scratch-dir' },
          requiresApproval: true,
          contract: { kind: 'command', command: 'true' },
        },
      ],
    });
    await writeFile(join(cwd, 'prepare.sh'), 'true\n');
    const run = runPlan(file, cwd, ['--approve'], {}, { approvesWhenAsked: false });
    await run.until('the plan gate asked of a person', () =>
      run.stderr.includes('change <step> <arg> <value>'),
    );
    run.answer('change look command rm -rf scratch-dir');
    await run.until('the revision asked about', () => run.stderr.includes('Modified: revision 1'));
    run.answer('approve');
    await run.untilEvent('GATE_APPROVED');
    // The step gate runs `rm -rf`: a person is asked, who rejects it.
    await run.until('the step gate asked of a person', () =>
      run.events.some(
        (e) =>
          e.event === 'POLICY_DECISION' &&
          e.details.action === 'AutoApprove' &&
          (e.details.policies as string[]).includes('auto-approve-only-harmless-steps'),
      ),
    );
    run.answer('reject not this');
    await run.exited;
    expect(existsSync(join(cwd, 'scratch-dir'))).toBe(true);
    const events = await storedEvents(cwd, run.executionArn);
    const stepApprovals = events.filter((e) => e.event === 'GATE_APPROVED' && e.details.gate === 'step');
    expect(stepApprovals).toEqual([]);
  });
});

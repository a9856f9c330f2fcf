/** A modification is a plan: applied to the gated steps, the result is judged as a submitted plan is. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/plan/digest.ts';
import { unknownPlanFacts } from '../../lib/policy/entities.ts';
import { PolicySet } from '../../lib/policy/policy-set.ts';
import {
  type ModifiableContent,
  modificationProblems,
  policyProblems,
  problemField,
  revisedArgs,
  revisionPolicyRequest,
} from '../../lib/runtime/gate/modification-check.ts';
import type { StepView } from '../../lib/runtime/payloads/index.ts';

function shellStep(id: string, command: string, extra: Partial<StepView> = {}): StepView {
  return {
    id,
    description: `Step ${id}`,
    tool: 'shell',
    risks: { destructive: [], contract: [], rollback: [], ownGate: extra.requiresApproval ?? false },
    call: { form: 'command', text: command },
    requiresApproval: false,
    requiresHuman: false,
    critical: true,
    outputs: [],
    dependsOn: [],
    ...extra,
  };
}

const write = shellStep('write', 'echo original > out.txt');
const plan = (steps: StepView[], recorded?: ModifiableContent['recorded']): ModifiableContent => ({
  kind: 'plan',
  steps,
  ...(recorded ? { recorded } : {}),
});
const change = (args: Record<string, unknown>, id = 'write') => ({
  skipSteps: [],
  argOverrides: { [id]: args },
});
const fields = async (content: ModifiableContent, modification: ReturnType<typeof change>) =>
  (await modificationProblems(content, modification)).map((p) => [problemField(p), p.code]);

describe('modificationProblems', () => {
  it('accepts a harmless change', async () => {
    expect(await modificationProblems(plan([write]), change({ command: 'echo changed > out.txt' }))).toEqual(
      [],
    );
  });

  it("checks the revised args against the tool's strict input schema: unknown keys, wrong types, an empty command", async () => {
    expect(await fields(plan([write]), change({ command: 123 }))).toEqual([
      ['decision.argOverrides.write.command', 'invalid-args'],
    ]);
    expect(await fields(plan([write]), change({ command: '' }))).toEqual([
      ['decision.argOverrides.write.command', 'invalid-args'],
    ]);
    expect(await fields(plan([write]), change({ comand: 'ls', shell: 'zsh' }))).toEqual([
      ['decision.argOverrides.write.comand', 'invalid-args'],
      ['decision.argOverrides.write.shell', 'invalid-args'],
    ]);
  });

  it('refuses environment names that run code the command does not show (the validator’s rule)', async () => {
    const problems = await modificationProblems(plan([write]), change({ env: { BASH_ENV: './evil.sh' } }));
    expect(problems.map((p) => [problemField(p), p.code])).toEqual([
      ['decision.argOverrides.write.env.BASH_ENV', 'unsafe-env'],
    ]);
  });

  it('sees through wrappers: a destructive call needs the step’s own gate at a plan gate, not at its own', async () => {
    for (const command of [
      'nice rm -rf x',
      'env X=1 rm -rf x',
      "sh -c 'rm -rf x'",
      'true; rm -rf x',
      'echo $(rm -rf x)',
      '"r"m -rf x',
    ]) {
      const problems = await modificationProblems(plan([write]), change({ command }));
      expect(
        problems.map((p) => p.code),
        command,
      ).toEqual(['destructive-without-approval']);
      expect(problems[0]?.message).toMatch(/needs the step's own gate/);
      const gated = shellStep('write', 'echo original', { requiresApproval: true });
      expect(await modificationProblems({ kind: 'step', steps: [gated] }, change({ command }))).toEqual([]);
    }
  });

  it('reports every problem at once, located at the answer’s field', async () => {
    const problems = await modificationProblems(
      plan([write]),
      change({ command: 'rm -rf x (', env: { LD_PRELOAD: '/tmp/x.so' }, cwdd: '.' }),
    );
    expect(problems.map((p) => p.pointer).sort()).toEqual([
      '/argOverrides/write/command',
      '/argOverrides/write/cwdd',
      '/argOverrides/write/env/LD_PRELOAD',
    ]);
  });

  it('checks what the revision runs: its recorded args with every override so far on top', async () => {
    const recorded = { write: { tool: 'shell', args: canonicalJson({ command: 'echo a', cwd: 'out' }) } };
    expect(revisedArgs(write, { command: 'echo b' }, recorded.write)).toEqual({
      command: 'echo b',
      cwd: 'out',
    });
    // An earlier revision's override counts with the new one.
    const content: ModifiableContent = {
      ...plan([write], recorded),
      current: { skipSteps: [], argOverrides: { write: { command: 'rm -rf ./x' } } },
    };
    expect((await modificationProblems(content, change({ cwd: 'elsewhere' }))).map((p) => p.code)).toEqual([
      'destructive-without-approval',
    ]);
  });

  it('a modification may use only the references its step already uses (the compiled step reads only those)', async () => {
    const reading = shellStep('write', 'echo "$TAG"', {
      call: {
        form: 'command',
        text: 'echo ${steps.build.tag}',
        references: [{ raw: '${steps.build.tag}', step: 'build', output: 'tag' }],
      },
      dependsOn: ['build'],
    });
    expect(
      await modificationProblems(plan([reading]), change({ command: 'echo "${steps.build.tag}" done' })),
    ).toEqual([]);
    const problems = await modificationProblems(
      plan([reading]),
      change({ command: 'echo ${steps.build.other} ${context.dir}' }),
    );
    expect(problems.map((p) => [p.code, p.message.split(':')[0]])).toEqual([
      ['modification-reference', '${steps.build.other}'],
      ['modification-reference', '${context.dir}'],
    ]);
  });

  it('a step gate cannot skip its step; an agent’s task is not an argument', async () => {
    const gated = shellStep('write', 'echo', { requiresApproval: true });
    expect(
      (
        await modificationProblems(
          { kind: 'step', steps: [gated] },
          { skipSteps: ['write'], argOverrides: {} },
        )
      ).map((p) => p.pointer),
    ).toEqual(['/skipSteps']);
    const agent = { ...shellStep('fix', ''), tool: 'agent', call: { form: 'task' as const, text: 'Fix it' } };
    expect(
      (await modificationProblems(plan([agent]), change({ task: 'x' }, 'fix'))).map((p) => p.code),
    ).toEqual(['invalid-args']);
  });

  it('never accepts a recursive delete at an ungated step, whatever follows it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 40 }), async (suffix) => {
        const command = `rm -rf ./d${suffix}`;
        // Destructive, or not valid shell: refused either way.
        expect(await modificationProblems(plan([write]), change({ command }))).not.toEqual([]);
      }),
      { numRuns: 60 },
    );
  });
});

describe('the platform policy on a revision', () => {
  it('asks SubmitPlan about the revised facts: a destructive ungated step is denied by the default set', async () => {
    const policy = await PolicySet.load();
    const facts = {
      ...unknownPlanFacts(),
      stepCount: 1,
      steps: {
        write: {
          tool: 'shell',
          target: '',
          hosts: [],
          destructive: [],
          unknown: [],
          exfiltration: [],
          ownGate: false,
          networkHosts: [],
          programs: ['echo'],
          unknownPrograms: [],
          unknownDestinations: [],
          awsServices: [],
          lambdaFunctions: [],
        },
      },
    };
    const identity = { id: 'p', version: 1, digest: 'sha256:x' };
    const harmless = revisionPolicyRequest(
      identity,
      facts,
      'carol',
      {
        write: { tool: 'shell', args: { command: 'echo hi' }, ownGate: false },
      },
      false,
    );
    expect(policyProblems(harmless, policy, ['write']).problems).toEqual([]);
    const destructive = revisionPolicyRequest(
      identity,
      facts,
      'carol',
      {
        write: { tool: 'shell', args: { command: 'rm -rf ./x' }, ownGate: false },
      },
      false,
    );
    const { problems } = policyProblems(destructive, policy, ['write']);
    expect(problems).toEqual([
      {
        code: 'policy-denied',
        pointer: '/argOverrides/write',
        message: expect.stringContaining('destructive-step-needs-own-gate'),
      },
    ]);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { prng, randomDag } from '../../bench/dag.ts';
import type { AslDefinition } from '../../lib/compiler/asl.ts';
import {
  CompileError,
  type CompileResult,
  compilePlan,
  criticalPath,
  decompose,
  EXECUTE_STATE,
  simulate,
} from '../../lib/compiler/index.ts';
import { childPlaceholder } from '../../lib/compiler/placeholders.ts';
import { validateDefinition } from '../../lib/engine/validate/index.ts';
import type { PlanInput } from '../../lib/plan/schema.ts';
import { aslValidator } from './asl-validator.ts';

/** A DAG as fast-check builds it: step i may depend on any earlier step. */
/** Args and descriptions that look like JSONata and `${…}` references: they must stay literal data. */
const TRICKY_PLAN: PlanInput = {
  id: 'tricky',
  objective: 'args that look like expressions',
  context: { env: 'prod' },
  steps: [
    { id: 'a', description: '{% $states.context %}', tool: 'shell', args: { cmd: '{% 1 + 1 %}' } },
    {
      id: 'b',
      description: 'uses a reference',
      tool: 'shell',
      dependsOn: ['a'],
      args: { text: 'line1\nline2 ${steps.a.out} ${context.env}\u2028' },
    },
  ],
};

const dagArbitrary = fc
  .integer({ min: 1, max: 40 })
  .chain((n) =>
    fc.tuple(
      fc.constant(n),
      fc.array(fc.array(fc.nat(), { maxLength: 4 }), { minLength: n, maxLength: n }),
      fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: n, maxLength: n }),
    ),
  )
  .map(([n, picks, durations]) => {
    const steps = Array.from({ length: n }, (_, i) => ({
      id: `s${i}`,
      dependsOn: i === 0 ? [] : [...new Set((picks[i] ?? []).map((p) => `s${p % i}`))],
    }));
    return { steps, duration: new Map(steps.map((s, i) => [s.id, durations[i] as number])) };
  });

function planOf(steps: readonly { id: string; dependsOn: string[] }[], id = 'prop'): PlanInput {
  return {
    id,
    objective: 'property test',
    steps: steps.map((s) => ({
      id: s.id,
      description: `Step ${s.id}`,
      tool: 'noop',
      dependsOn: s.dependsOn,
    })),
  };
}

function run(compiled: CompileResult, duration: (id: string) => number) {
  const [main, ...children] = compiled.definitions;
  const map = new Map<string, AslDefinition>();
  for (const [i, c] of children.entries())
    map.set(`\${${c.arnSubstitution ?? childPlaceholder(i + 1)}}`, c.asl);
  return simulate({
    definition: (main as { asl: AslDefinition }).asl,
    startAt: EXECUTE_STATE,
    children: map,
    duration,
  });
}

function expectValid(compiled: CompileResult) {
  for (const d of compiled.definitions) {
    // asl-validator annotates the object it checks: give it a copy.
    const result = aslValidator(JSON.parse(d.json));
    expect(result.isValid, result.isValid ? '' : result.errorsText('\n')).toBe(true);
    expect(validateDefinition(d.json)).toEqual([]);
  }
}

describe('compilePlan', () => {
  it('starts every step exactly when its last dependency finishes, for any DAG and durations', () => {
    fc.assert(
      fc.property(dagArbitrary, ({ steps, duration }) => {
        const compiled = compilePlan(planOf(steps), { simulate: false });
        const sim = run(compiled, (id) => duration.get(id) as number);
        for (const s of steps) {
          const ready = Math.max(0, ...s.dependsOn.map((d) => sim.finish.get(d) as number));
          expect(sim.start.get(s.id)).toBe(ready);
        }
        expect(sim.makespan).toBe(criticalPath(steps, (id) => duration.get(id) as number));
      }),
      { numRuns: 150 },
    );
  });

  it.each(['never', 'always'] as const)(
    'emits definitions that pass asl-validator and the engine validator (step machines: %s)',
    (stepMachines) => {
      fc.assert(
        fc.property(dagArbitrary, ({ steps }) =>
          expectValid(compilePlan(planOf(steps), { simulate: false, stepMachines })),
        ),
        { numRuns: 10 },
      );
    },
  );

  it('needs no join for series-parallel graphs (chain, diamond, fork-join of chains)', () => {
    const sp = [
      [
        { id: 'a', dependsOn: [] },
        { id: 'b', dependsOn: ['a'] },
        { id: 'c', dependsOn: ['b'] },
      ],
      [
        { id: 'a', dependsOn: [] },
        { id: 'b', dependsOn: ['a'] },
        { id: 'c', dependsOn: ['a'] },
        { id: 'd', dependsOn: ['b', 'c'] },
      ],
      [
        { id: 'a', dependsOn: [] },
        { id: 'b1', dependsOn: ['a'] },
        { id: 'b2', dependsOn: ['b1'] },
        { id: 'c1', dependsOn: ['a'] },
        { id: 'd', dependsOn: ['b2', 'c1', 'a'] },
        { id: 'e', dependsOn: ['d'] },
        { id: 'f', dependsOn: ['d'] },
      ],
    ];
    for (const steps of sp) expect(decompose(steps).joins.size).toBe(0);
    // The N graph is the smallest graph that is not series-parallel: one join edge.
    const n = decompose([
      { id: 'a', dependsOn: [] },
      { id: 'b', dependsOn: [] },
      { id: 'c', dependsOn: ['a', 'b'] },
      { id: 'd', dependsOn: ['b'] },
    ]);
    expect([...n.joins.values()].flat()).toHaveLength(1);
  });

  it('embeds plan data as literals: no JSONata evaluation, no stray ${…} substitutions', () => {
    const compiled = compilePlan(TRICKY_PLAN);
    expectValid(compiled);
    expect(compiled.substitutions).toEqual([
      'ClassifierFunctionArn',
      'ContractCheckerFunctionArn',
      'GateFunctionArn',
      'StepRunnerFunctionArn',
    ]);
    const run = compiled.definitions[0]?.asl.States.Execute as { Branches: AslDefinition[] };
    const payloadOf = (state: string) =>
      (run.Branches[0]?.States[state]?.Arguments as { Payload: Record<string, string> } | undefined)
        ?.Payload ?? {};
    const payload = payloadOf('Run b');
    expect(payload.args).toBe(
      '{% {"text":"line1\\nline2 \\u0024{steps.a.out} \\u0024{context.env}\\u2028"} %}',
    );
    // Plan-wide facts are literals assigned once at Start; steps that need them read the variable.
    expect(payload.context).toBe('{% $context %}');
    expect(payload.secrets).toBeUndefined();
    const start = compiled.definitions[0]?.asl.States.Start as { Assign: Record<string, string> };
    expect(start.Assign.context).toBe('{% {"env":"prod"} %}');
    expect(payloadOf('Run a').context).toBeUndefined();
  });

  it('embeds plan data as literals in a step machine call too', () => {
    const compiled = compilePlan(TRICKY_PLAN, { stepMachines: 'always' });
    expectValid(compiled);
    expect(compiled.substitutions).toEqual([
      'ClassifierFunctionArn',
      'ContractCheckerFunctionArn',
      'GateFunctionArn',
      'StepRunnerFunctionArn',
      'StepStateMachineArn1',
    ]);
    const run = compiled.definitions[0]?.asl.States.Execute as { Branches: AslDefinition[] };
    // Each step is a call of the step machine; its data is one literal of the call's input.
    const inputOf = (state: string) =>
      (run.Branches[0]?.States[state]?.Arguments as { Input: Record<string, string> } | undefined)?.Input ??
      {};
    const input = inputOf('Step b');
    expect(input.step).toContain(
      '"args":{"text":"line1\\nline2 \\u0024{steps.a.out} \\u0024{context.env}\\u2028"}',
    );
    expect(inputOf('Step a').step).toContain('"description":"{% \\u0024states.context %}"');
    // Plan-wide facts are literals assigned once at Start; steps that need them read the variable.
    expect(input.run).toContain('"context":$context');
    expect(input.run).not.toContain('$secrets');
    const start = compiled.definitions[0]?.asl.States.Start as { Assign: Record<string, string> };
    expect(start.Assign.context).toBe('{% {"env":"prod"} %}');
    expect(inputOf('Step a').run).toBeUndefined();
  });

  it('retries a refused child start (throttling, the open-executions quota) on every step machine call and part, and nothing else', () => {
    const compiled = compilePlan(
      {
        id: 'fan',
        objective: 'a fan-out on step machines',
        steps: [
          { id: 'a', description: 'A', tool: 'shell' },
          { id: 'b', description: 'B', tool: 'shell', dependsOn: ['a'] },
          { id: 'c', description: 'C', tool: 'shell', dependsOn: ['a'] },
        ],
      },
      { stepMachines: 'always' },
    );
    expectValid(compiled);
    const refused = {
      ErrorEquals: [
        'StepFunctions.AWSStepFunctionsException',
        'StepFunctions.ExecutionLimitExceededException',
      ],
      MaxAttempts: 6,
      JitterStrategy: 'FULL',
    };
    // Every startExecution.sync:2 task of a definition, in Parallel branches too.
    const childStarts = (asl: AslDefinition | undefined) => {
      const found: Record<string, unknown>[] = [];
      const visit = (states: AslDefinition['States']) => {
        for (const state of Object.values(states)) {
          if (state.Resource === 'arn:aws:states:::states:startExecution.sync:2') found.push(state);
          for (const branch of (state.Branches ?? []) as AslDefinition[]) visit(branch.States);
        }
      };
      if (asl) visit(asl.States);
      return found;
    };
    const calls = childStarts(compiled.definitions[0]?.asl);
    expect(calls).toHaveLength(3);
    for (const call of calls) {
      // The one retrier: a child that ran and failed (States.TaskFailed) reaches Execute's Catch as before.
      expect(call.Retry).toEqual([refused]);
      expect(call.Catch).toBeUndefined();
    }
    // No answer from the service is not retried: the child may have started (the step would run twice).
    expect(JSON.stringify(compiled.definitions.map((d) => d.asl))).not.toContain(
      'StepFunctions.SdkClientException',
    );

    // A part of a split plan is a child start too.
    const split = compilePlan(planOf(randomDag(40, prng(5)).steps, 'split'), {
      maxDefinitionBytes: 20_000,
      stepMachines: 'never',
    });
    const parts = split.definitions.flatMap((d) => childStarts(d.asl));
    expect(parts.length).toBeGreaterThan(0);
    for (const part of parts) expect(part.Retry).toEqual([refused]);
  });

  it("retries a gate's opening cut short by the engine's stop, except a human step's (its FAILED answer is a task failure)", () => {
    const compiled = compilePlan({
      id: 'gates',
      objective: 'a plan gate, a step gate and a human step',
      steps: [
        { id: 'a', description: 'A', tool: 'shell', requiresApproval: true },
        { id: 'b', description: 'B', dependsOn: ['a'], requiresHuman: true, outputs: ['signer'] },
      ],
    });
    expectValid(compiled);
    const gates: Record<string, unknown>[] = [];
    const visit = (states: AslDefinition['States']) => {
      for (const state of Object.values(states)) {
        if (state.Resource === 'arn:aws:states:::lambda:invoke.waitForTaskToken') gates.push(state);
        for (const branch of (state.Branches ?? []) as AslDefinition[]) visit(branch.States);
      }
    };
    for (const definition of compiled.definitions) visit(definition.asl.States);
    const kinds = (gate: Record<string, unknown>) => JSON.stringify(gate.Arguments);
    const human = gates.filter((g) => kinds(g).includes('"human"'));
    const others = gates.filter((g) => !kinds(g).includes('"human"'));
    expect(human.length).toBeGreaterThan(0);
    expect(others.length).toBeGreaterThan(1);
    const interrupted = (gate: Record<string, unknown>) =>
      (gate.Retry as { ErrorEquals: string[] }[]).some((r) => r.ErrorEquals.includes('States.TaskFailed'));
    for (const gate of others) expect(interrupted(gate), kinds(gate)).toBe(true);
    for (const gate of human) expect(interrupted(gate)).toBe(false);
  });

  it('is deterministic', () => {
    const dag = randomDag(60, prng(3));
    expect(compilePlan(dag.plan).definitions.map((d) => d.json)).toEqual(
      compilePlan(dag.plan).definitions.map((d) => d.json),
    );
  });

  it('rejects an unknown dependency or a cycle with a located error', () => {
    expect(() =>
      compilePlan({ id: 'bad', objective: 'x', steps: [{ id: 'a', description: 'A', dependsOn: ['zz'] }] }),
    ).toThrow(new CompileError('steps[0].dependsOn: unknown step "zz"'));
    expect(() =>
      compilePlan({
        id: 'bad',
        objective: 'x',
        steps: [
          { id: 'a', description: 'A', dependsOn: ['b'] },
          { id: 'b', description: 'B', dependsOn: ['a'] },
        ],
      }),
    ).toThrow(/cycle through a, b/);
    expect(() => compilePlan({ id: 'bad', objective: 'x', steps: [] })).toThrow(/^steps: /);
  });

  it.each([1_000, 10_000])(
    'compiles a %i-step plan within the AWS quotas (1 MiB a definition, 25,000 history events), ≤ 1.5 KB and ≤ 4 transitions a step, still exact',
    (steps) => {
      const dag = randomDag(steps, prng(11), 'huge');
      const compiled = compilePlan(dag.plan, { simulate: false });
      expect(compiled.definitions.length).toBeGreaterThan(1);
      for (const definition of compiled.definitions)
        expect(Buffer.byteLength(definition.json), definition.name).toBeLessThanOrEqual(1_048_576);
      for (const m of compiled.report.machines) {
        expect(m.bytes).toBeLessThanOrEqual(1_048_576);
        // Half of the history quota is left for retries and escalations.
        expect(m.estimatedHistoryEvents * 2, m.name).toBeLessThanOrEqual(25_000);
      }
      expect(compiled.report.totals.bytes / steps).toBeLessThanOrEqual(1_536);
      expect(compiled.report.totals.happyPathTransitions / steps).toBeLessThanOrEqual(4);
      const duration = (id: string) => dag.duration.get(id) as number;
      expect(run(compiled, duration).makespan).toBeCloseTo(criticalPath(dag.steps, duration), 6);
    },
  );

  it.each([
    ['never', 2, 2, 10],
    ['always', 3, 1, 6],
  ] as const)(
    'reports per-step cost with step machines %s: %i transitions for runner → checker (and the call), more for gates and joins',
    (stepMachines, transitions, states, historyEvents) => {
      const costs = {
        id: 'costs',
        objective: 'x',
        steps: [
          { id: 'a', description: 'A', tool: 't' },
          { id: 'b', description: 'B', tool: 't' },
          { id: 'c', description: 'C', tool: 't', dependsOn: ['a', 'b'], requiresApproval: true },
          { id: 'd', description: 'D', tool: 't', dependsOn: ['b'] },
        ],
      };
      const compiled = compilePlan(costs, { stepMachines });
      const byId = new Map(compiled.report.perStep.map((s) => [s.stepId, s]));
      expect(byId.get('a')?.transitions).toBe(transitions);
      // On a step machine, the call is the one state the step has in the plan machine.
      expect(byId.get('a')?.states).toBe(states);
      expect(byId.get('a')?.historyEvents).toBe(historyEvents);
      expect(compiled.report.criticalPathInflation).toBe(1);
      const joined = [...byId.values()].filter((s) => s.join);
      expect(joined).toHaveLength(1);
      expect(joined[0]?.transitions).toBe(transitions + (joined[0]?.gate ? 4 : 1));
      expect(byId.get('c')?.gate).toBe(true);
    },
  );
});

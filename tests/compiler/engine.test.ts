import { describe, expect, it } from 'vitest';
import {
  type CompiledDefinition,
  type CompileOptions,
  compilePlan as compile,
} from '../../lib/compiler/index.ts';
import type { PlanInput } from '../../lib/plan/schema.ts';
import type { ApprovalDecision, GateRequest } from '../../lib/runtime/payloads/index.ts';
import { runCompiled } from './harness.ts';

/** a → (b, c); d after b; e after b and c: a diamond with a tail (series-parallel). */
const plan: PlanInput = {
  id: 'release',
  objective: 'Release the service',
  steps: [
    { id: 'a', description: 'Build', tool: 'shell', args: { cmd: 'make' } },
    { id: 'b', description: 'Test', tool: 'shell', dependsOn: ['a'] },
    { id: 'c', description: 'Docs', tool: 'shell', dependsOn: ['a'], critical: false },
    { id: 'd', description: 'Package', tool: 'shell', dependsOn: ['b'] },
    { id: 'e', description: 'Publish', tool: 'shell', dependsOn: ['b', 'c'] },
  ],
  postconditions: [
    { id: 'live', description: 'Service answers', contract: { kind: 'assert', expression: 'true' } },
  ],
};

const runsBefore = (order: string[], x: string, y: string) => order.indexOf(x) < order.indexOf(y);

// Every behaviour, with each step's states in the plan machine and with tool steps on step machines.
describe.each(['never', 'always'] as const)(
  'compiled plans on the embedded engine (step machines: %s)',
  (stepMachines) => {
    const compilePlan = (input: PlanInput, options: CompileOptions = {}) =>
      compile(input, { ...options, stepMachines });

    it('runs every step after its dependencies when the plan gate approves', async () => {
      const run = await runCompiled(compilePlan(plan));
      expect(run.status).toBe('SUCCEEDED');
      expect([...run.started].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
      for (const [x, y] of [
        ['a', 'b'],
        ['a', 'c'],
        ['b', 'd'],
        ['b', 'e'],
        ['c', 'e'],
      ] as const)
        expect(runsBefore(run.started, x, y)).toBe(true);
      expect(run.output).toEqual({ summary: { completed: 5, failed: 0, skipped: 0 } });
      expect(run.gates.map((g) => g.kind)).toEqual(['plan']);
    });

    it('fails with Plangate.GateRejected and runs nothing when the plan gate rejects', async () => {
      const run = await runCompiled(compilePlan(plan), {
        gate: () => ({ decision: 'REJECT', reason: 'no' }),
      });
      expect(run.status).toBe('FAILED');
      expect(run.error).toBe('Plangate.GateRejected');
      expect(run.started).toEqual([]);
    });

    it('asks again after ASK_FOR_CLARIFICATION, then applies skips and arg overrides', async () => {
      const run = await runCompiled(compilePlan(plan), {
        gate: (request) =>
          request.round === 1
            ? { decision: 'ASK_FOR_CLARIFICATION', question: 'Why docs?' }
            : {
                decision: 'APPROVE_WITH_MODIFICATIONS',
                skipSteps: ['d'],
                argOverrides: { a: { cmd: 'make fast' } },
              },
      });
      expect(run.status).toBe('SUCCEEDED');
      expect(run.gates.map((g) => [g.round, g.question])).toEqual([
        [1, null],
        [2, 'Why docs?'],
      ]);
      expect(run.started).not.toContain('d');
      expect(run.statuses.get('d')).toBe('skipped');
      expect(run.overrides.get('a')).toEqual({ cmd: 'make fast' });
      expect(run.output).toEqual({ summary: { completed: 4, failed: 0, skipped: 1 } });
    });

    it('recovers a transient failure with the Retry block', async () => {
      const run = await runCompiled(compilePlan(plan), {
        runnerError: (step, _attempt, call) =>
          step === 'b' && call === 1 ? 'Plangate.Transient' : undefined,
      });
      expect(run.status).toBe('SUCCEEDED');
      expect(run.runnerCalls.get('b')).toBe(2);
      expect(run.gates.map((g) => g.kind)).toEqual(['plan']);
    });

    it('escalation SKIP of a non-critical step blocks its dependents while the independent branch completes', async () => {
      const run = await runCompiled(compilePlan(plan), {
        runnerError: (step) => (step === 'c' ? 'Plangate.Permission' : undefined),
        escalate: () => ({ decision: 'SKIP' }),
      });
      expect(run.status).toBe('SUCCEEDED');
      expect(run.statuses.get('c')).toBe('skipped');
      expect(run.statuses.get('e')).toBe('blocked');
      expect(run.started).toEqual(expect.arrayContaining(['a', 'b', 'd']));
      expect(run.started).not.toContain('e');
      expect(run.gates.filter((g) => g.kind === 'escalation').map((g) => [g.stepId, g.critical])).toEqual([
        ['c', false],
      ]);
      expect(run.output).toEqual({ summary: { completed: 3, failed: 0, skipped: 2 } });
    });

    it('escalation SKIP of a critical step fails the run with Plangate.CriticalStepSkipped', async () => {
      const run = await runCompiled(compilePlan(plan), {
        runnerError: (step) => (step === 'b' ? 'Plangate.Permission' : undefined),
        escalate: () => ({ decision: 'SKIP' }),
      });
      expect(run.status).toBe('FAILED');
      expect(run.error).toBe('Plangate.CriticalStepSkipped');
      expect(run.finalize?.succeeded).toBe(false);
    });

    it('re-runs the step after a contract failure (logic recipe), then escalates and aborts', async () => {
      const recovered = await runCompiled(compilePlan(plan), {
        contractFails: (step, attempt) => step === 'd' && attempt === 1,
      });
      expect(recovered.status).toBe('SUCCEEDED');
      expect(recovered.runnerCalls.get('d')).toBe(2);

      const aborted = await runCompiled(compilePlan(plan), {
        contractFails: (step) => step === 'd',
        escalate: () => ({ decision: 'ABORT' }),
      });
      expect(aborted.status).toBe('FAILED');
      expect(aborted.error).toBe('Plangate.Aborted');
      expect(aborted.statuses.has('d')).toBe(false);
    });

    it('escalation RETRY loops back to the step', async () => {
      const run = await runCompiled(compilePlan(plan), {
        runnerError: (step, attempt) => (step === 'a' && attempt === 1 ? 'Plangate.Permission' : undefined),
        escalate: () => ({ decision: 'RETRY' }),
      });
      expect(run.status).toBe('SUCCEEDED');
      expect(run.gates.filter((g) => g.kind === 'escalation').map((g) => g.attempt)).toEqual([1]);
      expect(run.runnerCalls.get('a')).toBe(2);
    });

    it('fails with Plangate.PostconditionFailed when a postcondition does not hold', async () => {
      const run = await runCompiled(compilePlan(plan), { failingPostconditions: ['live'] });
      expect(run.status).toBe('FAILED');
      expect(run.error).toBe('Plangate.PostconditionFailed');
      expect(run.statuses.size).toBe(5);
    });

    it('fails with Plangate.InconsistentRun when Finalize finds the journal contradicts itself', async () => {
      const run = await runCompiled(compilePlan(plan), {
        inconsistent: 'step b was approved at its gate but never ran',
      });
      expect(run.status).toBe('FAILED');
      expect(run.error).toBe('Plangate.InconsistentRun');
      expect(run.finalize).toMatchObject({ succeeded: false });
    });

    it('gates a requiresApproval step; REJECT there skips it and blocks its dependents', async () => {
      const gated: PlanInput = {
        ...plan,
        steps: plan.steps.map((s) => (s.id === 'b' ? { ...s, requiresApproval: true } : s)),
      };
      const run = await runCompiled(compilePlan(gated), {
        gate: (request) =>
          request.kind === 'step' ? { decision: 'REJECT', reason: 'not today' } : { decision: 'APPROVE' },
      });
      expect(run.gates.map((g) => [g.kind, g.stepId])).toEqual([
        ['plan', undefined],
        ['step', 'b'],
      ]);
      expect(run.statuses.get('b')).toBe('skipped');
      expect(run.statuses.get('d')).toBe('blocked');
      expect(run.statuses.get('e')).toBe('blocked');
      expect(run.statuses.get('c')).toBe('completed');
      expect(run.status).toBe('SUCCEEDED');
    });

    it("applies a step gate's modification to that step only, on top of the plan gate's", async () => {
      const gated: PlanInput = {
        ...plan,
        steps: plan.steps.map((s) => (s.id === 'a' ? { ...s, requiresApproval: true } : s)),
      };
      // A step gate's decision holds its revision's overrides by step id (the plan gate's included).
      const run = await runCompiled(compilePlan(gated), {
        gate: (request): ApprovalDecision =>
          request.kind === 'step'
            ? {
                decision: 'APPROVE_WITH_MODIFICATIONS',
                skipSteps: [],
                argOverrides: { a: { cmd: 'make fast', cwd: 'src' }, b: { cmd: 'not this step' } },
              }
            : {
                decision: 'APPROVE_WITH_MODIFICATIONS',
                skipSteps: [],
                argOverrides: { a: { cmd: 'make fast' } },
              },
      });
      expect(run.status).toBe('SUCCEEDED');
      expect(run.overrides.get('a')).toEqual({ cmd: 'make fast', cwd: 'src' });
      expect(run.overrides.get('b')).toEqual({});
    });

    describe('the timeout ladder keeps the plan state', () => {
      // b and c gated; every wait the script leaves unanswered times out (time scale 0), and the
      // next rung asks again: a reminder, then carol's group, then the expiry.
      const laddered: PlanInput = {
        ...plan,
        approval: { timeoutSeconds: 600, remindAfterSeconds: 300, escalateTo: [{ approvers: ['carol'] }] },
        steps: plan.steps.map((s) => (s.id === 'b' || s.id === 'c' ? { ...s, requiresApproval: true } : s)),
      };
      const TIMED_OUT = { decision: 'REJECT', by: 'plangate-timeout', reason: 'timed out' } as const;
      const rung = (request: GateRequest) => request.ladder?.stage ?? 'ask';
      // 1 s of plan time is 1 ms: reminded after 0.3 s, 0.6 s per group.
      const ladderClock = { timeScale: 0.001 };

      it('runs steps approved after the reminder (plan gate) and by the escalated group (step gates)', async () => {
        const run = await runCompiled(
          compilePlan(laddered),
          {
            gate: (request) =>
              rung(request) === (request.kind === 'plan' ? 'remind' : 'escalate')
                ? { decision: 'APPROVE' }
                : undefined,
          },
          ladderClock,
        );
        expect(run.status).toBe('SUCCEEDED');
        expect([...run.started].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
        expect(run.gates.filter((g) => g.stepId === 'b').map(rung)).toEqual(['ask', 'remind', 'escalate']);
        expect(run.output).toEqual({ summary: { completed: 5, failed: 0, skipped: 0 } });
      });

      it('skips a non-critical step nobody approved as timed out; a critical one stops the run (CriticalStepSkipped)', async () => {
        const expireAll = (request: GateRequest) =>
          request.kind === 'plan'
            ? { decision: 'APPROVE' as const }
            : rung(request) === 'expire'
              ? TIMED_OUT
              : undefined;
        const onlyC = await runCompiled(
          compilePlan(laddered),
          {
            gate: (request) => (request.stepId === 'b' ? { decision: 'APPROVE' } : expireAll(request)),
          },
          ladderClock,
        );
        expect(onlyC.status).toBe('SUCCEEDED');
        expect(onlyC.statuses.get('c')).toBe('skipped');
        expect(onlyC.rejections.get('c')).toMatchObject({ by: 'plangate-timeout', reason: 'timed out' });
        expect(onlyC.statuses.get('e')).toBe('blocked');
        expect(onlyC.statuses.get('d')).toBe('completed');

        const both = await runCompiled(compilePlan(laddered), { gate: expireAll }, ladderClock);
        expect(both.status).toBe('FAILED');
        expect(both.error).toBe('Plangate.CriticalStepSkipped');
        expect(both.started).not.toContain('b');
        expect(both.finalize).toMatchObject({ succeeded: false });
      });

      it('tells the runner who rejected a step at its gate', async () => {
        const run = await runCompiled(compilePlan(laddered), {
          gate: (request) =>
            request.kind === 'step'
              ? { decision: 'REJECT', by: 'alice', reason: 'freeze' }
              : { decision: 'APPROVE' },
        });
        expect(run.status).toBe('SUCCEEDED');
        expect(run.rejections.get('b')).toMatchObject({ by: 'alice', reason: 'freeze' });
      });
    });

    it('synchronizes a non-series-parallel join exactly (N graph) and a split plan across child machines', async () => {
      const nGraph: PlanInput = {
        id: 'ngraph',
        objective: 'N-shaped dependencies',
        steps: [
          { id: 'a', description: 'A', tool: 'shell' },
          { id: 'b', description: 'B', tool: 'shell' },
          { id: 'c', description: 'C', tool: 'shell', dependsOn: ['a', 'b'] },
          { id: 'd', description: 'D', tool: 'shell', dependsOn: ['b'] },
        ],
      };
      const compiled = compilePlan(nGraph);
      expect(compiled.report.structure.joinEdges).toBe(1);
      const run = await runCompiled(compiled);
      expect(run.status).toBe('SUCCEEDED');
      expect(
        runsBefore(run.started, 'a', 'c') &&
          runsBefore(run.started, 'b', 'c') &&
          runsBefore(run.started, 'b', 'd'),
      ).toBe(true);

      const split = compilePlan(nGraph, { maxDefinitionBytes: stepMachines === 'always' ? 9_000 : 20_000 });
      expect(split.definitions.some((d) => d.name.includes('-part-'))).toBe(true);
      const splitRun = await runCompiled(split);
      expect(splitRun.status).toBe('SUCCEEDED');
      expect([...splitRun.started].sort()).toEqual(['a', 'b', 'c', 'd']);
    });

    it("hands a join step's contract the outputs of a transitive dependency that ran on another branch", async () => {
      // x → a → c ← b ← y, a → e, b → d: whichever branch c runs on, it joins the other, and its
      // contract reads the root of each side (x and y), two steps up.
      const nGraph: PlanInput = {
        id: 'ngraph-transitive',
        objective: 'A join step checks outputs made two steps up other branches',
        steps: [
          { id: 'x', description: 'X', tool: 'shell', outputs: ['value'] },
          { id: 'y', description: 'Y', tool: 'shell', outputs: ['value'] },
          { id: 'a', description: 'A', tool: 'shell', dependsOn: ['x'] },
          { id: 'b', description: 'B', tool: 'shell', dependsOn: ['y'] },
          {
            id: 'c',
            description: 'C',
            tool: 'shell',
            dependsOn: ['a', 'b'],
            contract: { kind: 'assert', expression: 'steps.x.value = "x#1" and steps.y.value = "y#1"' },
          },
          { id: 'd', description: 'D', tool: 'shell', dependsOn: ['b'] },
          { id: 'e', description: 'E', tool: 'shell', dependsOn: ['a'] },
        ],
      };
      const compiled = compilePlan(nGraph);
      expect(compiled.report.structure.joinEdges).toBeGreaterThan(0);
      const run = await runCompiled(compiled);
      expect(run.status).toBe('SUCCEEDED');
      const checkC = run.checks.find((c) => c.stepId === 'c');
      expect(checkC?.inputs).toEqual({
        x: { status: 'completed', output: { value: 'x#1' } },
        y: { status: 'completed', output: { value: 'y#1' } },
      });
    });

    it('turns a requiresHuman step into a human gate whose reported outputs the checker checks', async () => {
      const human: PlanInput = {
        id: 'handoff',
        objective: 'Provision a key by hand, then use it',
        context: { region: 'eu-west-1' },
        approval: { approvers: ['ops@example.com'], quorum: 1, forbiddenApprovers: ['bot'] },
        steps: [
          {
            id: 'key',
            description: 'Create the API key in the console',
            task: 'Open the console and create a key named deploy',
            requiresHuman: true,
            outputs: ['keyId'],
            contract: {
              kind: 'assert',
              expression: '$exists(output.keyId) and context.region = "eu-west-1"',
            },
          },
          {
            id: 'use',
            description: 'Deploy with the key',
            tool: 'shell',
            dependsOn: ['key'],
            contract: { kind: 'assert', expression: 'steps.key.keyId = "key#1"' },
          },
        ],
      };
      const run = await runCompiled(compilePlan(human));
      expect(run.status).toBe('SUCCEEDED');
      const gate = run.gates.find((g) => g.kind === 'human');
      expect(gate).toMatchObject({
        stepId: 'key',
        description: 'Create the API key in the console',
        approval: { approvers: ['ops@example.com'], forbiddenApprovers: ['bot'], quorum: 1 },
        human: {
          instructions: 'Open the console and create a key named deploy',
          outputs: ['keyId'],
          skip: false,
        },
      });
      expect(run.gates[0]?.approval).toEqual(gate?.approval);
      // The checker gets the description, the context its assertion reads and the outputs of the steps it names.
      const [checkKey, checkUse] = run.checks;
      expect(checkKey).toMatchObject({
        stepId: 'key',
        description: 'Create the API key in the console',
        context: { region: 'eu-west-1' },
        run: { status: 'succeeded', output: { keyId: 'key#1' } },
      });
      expect(checkUse?.inputs).toEqual({ key: { status: 'completed', output: { keyId: 'key#1' } } });
      expect(checkUse?.context).toBeUndefined();
    });

    it('escalates a human step the person reports failed, and asks again on RETRY', async () => {
      const human: PlanInput = {
        id: 'handoff',
        objective: 'A manual step',
        steps: [{ id: 'plug', description: 'Plug the cable in', requiresHuman: true, outputs: [] }],
      };
      const run = await runCompiled(compilePlan(human), {
        human: (request) =>
          request.attempt === 1
            ? { decision: 'FAILED', reason: 'no cable' }
            : { decision: 'DONE', outputs: {} },
        escalate: () => ({ decision: 'RETRY' }),
      });
      expect(run.status).toBe('SUCCEEDED');
      expect(run.gates.map((g) => [g.kind, g.attempt])).toEqual([
        ['plan', undefined],
        ['human', 1],
        ['escalation', 1],
        ['human', 2],
      ]);
      expect(run.gates[2]?.failure?.failureClass).toBe('unrecoverable');
    });

    it('shares one escalation among the steps of a branch (or a step machine) and routes each answer back to the failed step', async () => {
      const chain: PlanInput = {
        id: 'chain',
        objective: 'A sequence in one branch',
        steps: [
          { id: 'a', description: 'First', tool: 'shell' },
          { id: 'b', description: 'Second', tool: 'shell', dependsOn: ['a'], critical: false },
          { id: 'c', description: 'Third', tool: 'shell', dependsOn: ['b'] },
          { id: 'd', description: 'Fourth', tool: 'shell', dependsOn: ['a'] },
        ],
      };
      const compiled = compilePlan(chain);
      const escalations = (definition: CompiledDefinition | undefined) =>
        (JSON.stringify(definition?.asl).match(/"Escalate \d+":\{/g) ?? []).length;
      expect(compiled.definitions.map((d) => [d.name, escalations(d)])).toEqual(
        stepMachines === 'always'
          ? // Four steps with the same Retry blocks: one step machine holds the only escalation.
            [
              ['chain', 0],
              ['chain-step-1', 1],
            ]
          : // a, then (b → c) beside d: three branch scopes, so b and c share one escalation.
            [['chain', 3]],
      );
      // c fails its contract until a person says RETRY; b fails and is skipped, so c is then blocked.
      const retried = await runCompiled(compiled, {
        contractFails: (id, attempt) => (id === 'c' || id === 'd') && attempt <= 2,
        escalate: () => ({ decision: 'RETRY' }),
      });
      expect(retried.status).toBe('SUCCEEDED');
      expect(
        retried.gates.filter((g) => g.kind === 'escalation').map((g) => [g.stepId, g.description]),
      ).toEqual(
        expect.arrayContaining([
          ['c', 'Third'],
          ['d', 'Fourth'],
        ]),
      );
      expect(retried.runnerCalls.get('a')).toBe(1);
      expect(retried.runnerCalls.get('c')).toBe(3);
      const skipped = await runCompiled(compiled, {
        contractFails: (id) => id === 'b',
        escalate: () => ({ decision: 'SKIP' }),
      });
      expect(skipped.status).toBe('SUCCEEDED');
      expect(Object.fromEntries(skipped.statuses)).toEqual({
        a: 'completed',
        b: 'skipped',
        c: 'blocked',
        d: 'completed',
      });
    });
  },
);

describe('a step machine call that Step Functions refuses to start', () => {
  const onStepMachines = () => compile(plan, { stepMachines: 'always' });

  it('is retried when throttled or at the open-executions quota, and the plan succeeds with each step run once', async () => {
    const run = await runCompiled(onStepMachines(), {
      refuseStart: (step, start) =>
        start === 1 && step === 'b'
          ? 'ThrottlingException'
          : start === 1 && step === 'c'
            ? 'ExecutionLimitExceeded'
            : undefined,
    });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.childStarts.get('b')).toBe(2);
    expect(run.childStarts.get('c')).toBe(2);
    expect(run.childStarts.get('a')).toBe(1);
    expect([...run.runnerCalls.values()]).toEqual([1, 1, 1, 1, 1]);
    expect(run.gates.map((g) => g.kind)).toEqual(['plan']);
    expect(run.output).toEqual({ summary: { completed: 5, failed: 0, skipped: 0 } });
  });

  it('stops the plan with the refusal once the Retry gives up (6 retries)', async () => {
    // e, the last step: a refusal elsewhere would stop the run while e's join still waits.
    const run = await runCompiled(onStepMachines(), {
      refuseStart: (step) => (step === 'e' ? 'ThrottlingException' : undefined),
    });
    expect(run.status).toBe('FAILED');
    expect(run.error).toBe('StepFunctions.AWSStepFunctionsException');
    expect(run.childStarts.get('e')).toBe(7);
    expect(run.runnerCalls.has('e')).toBe(false);
  });

  it("leaves the step's own failures to its recovery: a failed child is not started again", async () => {
    // A permission failure escalates; ABORT fails the child, which the call does not retry.
    const aborted = await runCompiled(onStepMachines(), {
      runnerError: (step) => (step === 'b' ? 'Plangate.Permission' : undefined),
      escalate: () => ({ decision: 'ABORT' }),
    });
    expect(aborted.status).toBe('FAILED');
    expect(aborted.error).toBe('Plangate.Aborted');
    expect(aborted.childStarts.get('b')).toBe(1);
    expect(
      aborted.gates.filter((g) => g.kind === 'escalation').map((g) => [g.stepId, g.failure?.failureClass]),
    ).toEqual([['b', 'permission']]);
    // A transient failure is retried by its recipe inside the child, as without the call's Retry.
    const recovered = await runCompiled(onStepMachines(), {
      runnerError: (step, _attempt, call) => (step === 'b' && call === 1 ? 'Plangate.Transient' : undefined),
    });
    expect(recovered.status).toBe('SUCCEEDED');
    expect(recovered.childStarts.get('b')).toBe(1);
    expect(recovered.runnerCalls.get('b')).toBe(2);
  });
});

import { describe, expect, it } from 'vitest';
import { compilePlan } from '../../lib/compiler/index.ts';
import { GRAPH_LIMIT_BYTES, planGraph } from '../../lib/compiler/plan-graph.ts';
import { type PlanInput, PlanSchema } from '../../lib/plan/schema.ts';
import { echoChainPlan, echoStep } from '../support/echo-plan.ts';

const stepsOf = (plan: PlanInput) => PlanSchema.parse(plan).steps;
const base = () => echoChainPlan('sketched', ['collect', 'report']) as PlanInput;

/** The sketch of `report` after `change` is applied to it. */
function reportAfter(change: (step: Record<string, unknown>) => void) {
  const plan = base();
  change(plan.steps[1] as Record<string, unknown>);
  return planGraph(stepsOf(plan))?.[1];
}

describe('the plan graph the plan gate shows', () => {
  it('holds each step’s id, name and dependencies, and fingerprints instead of bodies', () => {
    const graph = planGraph(stepsOf(base()));
    expect(graph?.map(({ id, name, dependsOn, tool }) => ({ id, name, dependsOn, tool }))).toEqual([
      { id: 'collect', name: 'Echo collect', dependsOn: undefined, tool: 'echo' },
      { id: 'report', name: 'Echo report', dependsOn: ['collect'], tool: 'echo' },
    ]);
    for (const step of graph ?? []) {
      expect(step.args).toMatch(/^[0-9a-f]{32}$/);
      expect(step.contract).toMatch(/^[0-9a-f]{32}$/);
      expect(step.settings).toMatch(/^[0-9a-f]{32}$/);
    }
    expect(JSON.stringify(graph)).not.toContain('output.message');
  });

  it('changes exactly the fingerprint of what changed', () => {
    const before = planGraph(stepsOf(base()))?.[1];
    const differing = (after: typeof before) =>
      (['args', 'contract', 'settings', 'tool', 'name'] as const).filter((k) => before?.[k] !== after?.[k]);
    expect(differing(reportAfter(() => {}))).toEqual([]);
    expect(differing(reportAfter((s) => Object.assign(s, { args: { message: 'other' } })))).toEqual(['args']);
    expect(
      differing(reportAfter((s) => Object.assign(s, { contract: { kind: 'assert', expression: 'true' } }))),
    ).toEqual(['contract']);
    expect(differing(reportAfter((s) => Object.assign(s, { requiresApproval: true })))).toEqual(['settings']);
    expect(differing(reportAfter((s) => Object.assign(s, { tool: 'shell' })))).toEqual(['tool']);
    expect(reportAfter((s) => delete s.contract)?.contract).toBeUndefined();
  });

  it('names an agent step’s tool `agent` and counts its target and task as what it is given', () => {
    const agent = (target: string) =>
      reportAfter((s) => {
        delete s.tool;
        Object.assign(s, { target, task: 'Summarise', args: {} });
      });
    expect(agent('writer')?.tool).toBe('agent');
    expect(agent('writer')?.args).not.toBe(agent('reviewer')?.args);
  });

  it('shortens a long name to one line of 80 characters', () => {
    const name = reportAfter((s) => Object.assign(s, { description: `Line one\n${'x'.repeat(200)}` }))?.name;
    expect(name).toBe(`Line one ${'x'.repeat(70)}…`);
  });

  it('is left out when too large, and the plan gate still lists every step id', () => {
    const ids = Array.from({ length: 2_000 }, (_, i) => `step-${i + 1}`);
    const plan = { ...echoChainPlan('large', ids), steps: ids.map((id) => echoStep(id)) };
    expect(planGraph(stepsOf(plan as PlanInput))).toBeUndefined();
    const summary = startAssign(plan as PlanInput).summary;
    expect(summary).toContain('"stepIds":["step-1"');
    expect(summary).not.toContain('"graph"');
    // Small plans do carry it, within the limit.
    expect(JSON.stringify(planGraph(stepsOf(base()))).length).toBeLessThan(GRAPH_LIMIT_BYTES);
  });

  it('counts against the main machine’s size, so a plan that fits only without it is split', () => {
    const ids = Array.from({ length: 300 }, (_, i) => `step-${i + 1}`);
    const plan = echoChainPlan('sized', ids) as PlanInput;
    const graphBytes = JSON.stringify(planGraph(stepsOf(plan))).length;
    expect(graphBytes).toBeGreaterThan(40_000);
    // A limit its steps fit within, but not with the graph beside them.
    const options = { simulate: false, stepMachines: 'never' } as const;
    const whole = compilePlan(plan, { ...options, maxDefinitionBytes: 10_000_000 }).definitions;
    expect(whole.map((d) => d.name)).toEqual(['sized']);
    const limit = (whole[0] as { json: string }).json.length - Math.floor(graphBytes / 2);
    const { definitions } = compilePlan(plan, { ...options, maxDefinitionBytes: limit });
    expect(definitions.filter((d) => d.name.startsWith('sized-part-')).length).toBeGreaterThan(0);
    for (const definition of definitions)
      expect(JSON.stringify(definition.asl).length, definition.name).toBeLessThanOrEqual(limit);
  });

  it('is assigned once in Start; every rung of the gate’s ladder sends `$summary`', () => {
    const plan = {
      ...base(),
      approval: {
        approvers: ['ana'],
        remindAfterSeconds: 60,
        timeoutSeconds: 120,
        escalateTo: [{ approvers: ['ben'] }],
      },
    } as PlanInput;
    const text = JSON.stringify(compilePlan(plan, { simulate: false }).definitions[0]?.asl);
    expect(startAssign(plan).summary).toContain('"graph":[{"id":"collect"');
    expect(text.split('\\"graph\\"')).toHaveLength(2);
    // ask, remind, group 1, its reminder, expiry
    expect(text.split('"summary":"{% $summary %}"')).toHaveLength(6);
  });
});

function startAssign(plan: PlanInput): Record<string, string> {
  const asl = compilePlan(plan, { simulate: false }).definitions[0]?.asl as {
    States: Record<string, { Assign?: Record<string, string> }>;
  };
  return asl.States.Start?.Assign ?? {};
}

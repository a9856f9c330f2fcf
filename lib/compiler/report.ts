/**
 * The compile report: what each step costs on the happy path (states, billed transitions,
 * history events), each machine's size against AWS's limits, how the graph was compiled
 * (Parallels, exact joins, child machines) and the critical-path inflation measured by
 * simulating the compiled definition.
 */
import type { Plan } from '../plan/schema.ts';
import type { PlanIdentity } from '../runtime/payloads/index.ts';
import type { AslDefinition, AslState, CompiledDefinition } from './asl.ts';
import { childPlaceholder, isStepMachinePlaceholder, ref } from './placeholders.ts';
import type { StepCost } from './plan-step.ts';
import { STEP_FUNCTIONS_QUOTAS } from './quotas.ts';
import { criticalPath, simulate } from './simulate.ts';
import type { Layout } from './split.ts';
import { type HappyPath, HISTORY_EVENTS } from './states/index.ts';
import type { Decomposition } from './structure.ts';

export interface StepReport {
  readonly stepId: string;
  /** The definition the step's states are in. */
  readonly machine: string;
  readonly states: number;
  /** Happy-path state transitions (what Standard workflows bill). */
  readonly transitions: number;
  readonly historyEvents: number;
  readonly join: boolean;
  readonly signal: boolean;
  readonly gate: boolean;
}

export interface MachineReport {
  readonly name: string;
  readonly steps: number;
  readonly states: number;
  readonly bytes: number;
  /**
   * Happy path (for a step machine: one execution, which runs one step); retries and
   * escalations add to it (see `limits.historyHeadroom`).
   */
  readonly estimatedHistoryEvents: number;
}

export interface CompileReport {
  readonly plan: PlanIdentity;
  readonly steps: number;
  readonly structure: {
    readonly parallels: number;
    /** Steps that wait on an exact join. */
    readonly joinWaits: number;
    /** Dependency edges synchronized by joins (all others are native sequence/Parallel order). */
    readonly joinEdges: number;
    readonly childMachines: number;
    /** True when the dependency graph compiled with sequences and Parallels only. */
    readonly seriesParallel: boolean;
  };
  readonly machines: readonly MachineReport[];
  readonly perStep: readonly StepReport[];
  readonly totals: {
    readonly states: number;
    readonly bytes: number;
    readonly happyPathTransitions: number;
    readonly estimatedHistoryEvents: number;
  };
  /** Compiled makespan ÷ critical path with every step taking the same time (1.00 = no added waiting). */
  readonly criticalPathInflation: number | null;
  readonly limits: {
    readonly maxHistoryEvents: number;
    readonly maxDefinitionBytes: number;
    readonly inlineOutputLimitBytes: number;
    /** A state payload is at most 256 KiB. */
    readonly maxPayloadBytes: number;
  };
}

export interface ReportInputs {
  readonly plan: Plan;
  readonly identity: PlanIdentity;
  readonly definitions: readonly CompiledDefinition[];
  /** Each step's happy-path cost, counted on its rendered states. */
  readonly costs: ReadonlyMap<string, StepCost>;
  /** The happy path of one execution of each step machine, by definition name. */
  readonly stepMachinePaths: ReadonlyMap<string, HappyPath>;
  readonly decomposition: Decomposition;
  readonly layout: Layout;
  readonly limits: { maxHistoryEvents: number; maxDefinitionBytes: number; inlineOutputLimitBytes: number };
  /** Estimated happy-path events of a machine's own states (gate, completion; a part's frame). */
  readonly machineOverhead: { top: number; child: number };
  readonly simulate: boolean;
}

export function buildReport(inputs: ReportInputs): CompileReport {
  const { definitions, costs, decomposition } = inputs;
  const mainName = (definitions[0] as CompiledDefinition).name;
  const machineOf = new Map<string, string>();
  const machineEvents = new Map<string, number>();
  const machineSteps = new Map<string, number>();
  let parallels = 0;

  // Walk the layout: which machine each step lands in, and each machine's happy-path events.
  const walk = (layout: Layout, machine: string) => {
    const stack: Layout[] = [layout];
    while (stack.length > 0) {
      const node = stack.pop() as Layout;
      if (node.kind === 'step') {
        machineOf.set(node.id, machine);
        machineSteps.set(machine, (machineSteps.get(machine) ?? 0) + 1);
        bump(machineEvents, machine, (costs.get(node.id) as StepCost).historyEvents);
      } else if (node.kind === 'child') {
        bump(machineEvents, machine, HISTORY_EVENTS.childExecution);
        const childName = `${mainName}-part-${node.part}`;
        bump(machineEvents, childName, inputs.machineOverhead.child);
        walk(node.body, childName);
      } else if (node.kind === 'seq') {
        stack.push(...node.items);
      } else {
        parallels += 1;
        bump(machineEvents, machine, HISTORY_EVENTS.parallel);
        stack.push(...node.branches);
      }
    }
  };
  bump(machineEvents, mainName, inputs.machineOverhead.top);
  walk(inputs.layout, mainName);

  const perStep: StepReport[] = inputs.plan.steps.map((step) => {
    const cost = costs.get(step.id) as StepCost;
    return {
      stepId: step.id,
      machine: machineOf.get(step.id) ?? mainName,
      states: cost.states,
      transitions: cost.transitions,
      historyEvents: cost.historyEvents,
      join: decomposition.joins.has(step.id),
      signal: decomposition.signals.has(step.id),
      gate: step.requiresApproval,
    };
  });

  // A step machine's execution runs one step: started, runner, checker, succeeded.
  for (const [name, path] of inputs.stepMachinePaths)
    bump(machineEvents, name, HISTORY_EVENTS.execution + path.historyEvents);
  const machines: MachineReport[] = definitions.map((d) => ({
    name: d.name,
    steps: machineSteps.get(d.name) ?? 0,
    states: countStates(d.asl),
    bytes: Buffer.byteLength(d.json),
    estimatedHistoryEvents: machineEvents.get(d.name) ?? 0,
  }));

  let joinEdges = 0;
  for (const preds of decomposition.joins.values()) joinEdges += preds.length;

  return {
    plan: inputs.identity,
    steps: inputs.plan.steps.length,
    structure: {
      parallels,
      joinWaits: decomposition.joins.size,
      joinEdges,
      childMachines: definitions.filter(
        (d) => d.arnSubstitution && !isStepMachinePlaceholder(d.arnSubstitution),
      ).length,
      seriesParallel: decomposition.joins.size === 0,
    },
    machines,
    perStep,
    totals: {
      states: machines.reduce((n, m) => n + m.states, 0),
      bytes: machines.reduce((n, m) => n + m.bytes, 0),
      happyPathTransitions: perStep.reduce((n, s) => n + s.transitions, 0),
      estimatedHistoryEvents: machines.reduce((n, m) => n + m.estimatedHistoryEvents, 0),
    },
    criticalPathInflation: inputs.simulate ? inflation(inputs) : null,
    limits: { ...inputs.limits, maxPayloadBytes: STEP_FUNCTIONS_QUOTAS.payloadBytes },
  };
}

function inflation(inputs: ReportInputs): number {
  const [main, ...children] = inputs.definitions as CompiledDefinition[];
  const childMap = new Map<string, AslDefinition>();
  children.forEach((child, i) => {
    childMap.set(ref(child.arnSubstitution ?? childPlaceholder(i + 1)), child.asl);
  });
  const unit = () => 1;
  const result = simulate({
    definition: (main as CompiledDefinition).asl,
    startAt: 'Execute',
    children: childMap,
    duration: unit,
  });
  const longest = criticalPath(inputs.plan.steps, unit);
  return Math.round((result.makespan / longest) * 1000) / 1000;
}

function bump(map: Map<string, number>, key: string, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

/** States in a definition, counting inside Parallel branches. */
export function countStates(definition: AslDefinition): number {
  let count = 0;
  const stack: Record<string, AslState>[] = [definition.States];
  while (stack.length > 0) {
    const states = stack.pop() as Record<string, AslState>;
    for (const state of Object.values(states)) {
      count += 1;
      if (state.Type === 'Parallel') for (const b of state.Branches as AslDefinition[]) stack.push(b.States);
    }
  }
  return count;
}

/**
 * Exact dependency graphs, measured: over ≥ 1,000 random DAGs (5–200 steps, random durations)
 * the compiled definition is simulated by walking its ASL (lib/compiler/simulate.ts: Parallel
 * waits for all branches, a join waits for its signals, child machines run to completion) and
 * its makespan is divided by the graph's critical path. The level-barrier baseline (one
 * Parallel per topological level) is built as ASL too and simulated the same way.
 * Writes bench/results/dag.json.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AslDefinition, AslState } from '../lib/compiler/asl.ts';
import { LAMBDA_INVOKE } from '../lib/compiler/asl.ts';
import { compilePlan, criticalPath, EXECUTE_STATE, simulate } from '../lib/compiler/index.ts';
import { childPlaceholder, PLACEHOLDERS, ref } from '../lib/compiler/placeholders.ts';
import type { PlanInput } from '../lib/plan/schema.ts';

/** Deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RandomDag {
  readonly plan: PlanInput;
  readonly steps: { id: string; dependsOn: string[] }[];
  readonly duration: Map<string, number>;
}

/**
 * A random DAG of `n` steps: each step depends on 0–3 earlier steps, mostly recent ones (so
 * graphs are deep as well as wide), with durations spread over two orders of magnitude.
 */
export function randomDag(n: number, random: () => number, name = 'dag'): RandomDag {
  const steps: { id: string; dependsOn: string[] }[] = [];
  const duration = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const id = `s${i}`;
    const deps = new Set<string>();
    const want = i === 0 ? 0 : Math.floor(random() * 4);
    for (let k = 0; k < want; k++) {
      const window = Math.max(1, Math.min(i, 1 + Math.floor(random() * 12)));
      deps.add(`s${i - 1 - Math.floor(random() * window)}`);
    }
    steps.push({ id, dependsOn: [...deps] });
    duration.set(id, Math.round(10 ** (random() * 2) * 10) / 10);
  }
  const plan: PlanInput = {
    id: name,
    objective: `Random DAG of ${n} steps`,
    steps: steps.map((s) => ({
      id: s.id,
      description: `Step ${s.id}`,
      tool: 'noop',
      dependsOn: s.dependsOn,
    })),
  };
  return { plan, steps, duration };
}

/** The naive compilation: one Parallel per topological level, each branch one step. */
export function levelBarrierDefinition(steps: readonly { id: string; dependsOn: string[] }[]): AslDefinition {
  const level = new Map<string, number>();
  for (const s of steps) level.set(s.id, Math.max(-1, ...s.dependsOn.map((d) => level.get(d) as number)) + 1);
  const levels: string[][] = [];
  for (const s of steps) {
    const l = level.get(s.id) as number;
    levels[l] ??= [];
    (levels[l] as string[]).push(s.id);
  }
  const run = (id: string, next?: string): AslState => ({
    Type: 'Task',
    Resource: LAMBDA_INVOKE,
    Arguments: { FunctionName: ref(PLACEHOLDERS.stepRunner), Payload: { stepId: id } },
    ...(next ? { Next: next } : { End: true }),
  });
  const states: Record<string, AslState> = {};
  levels.forEach((ids, l) => {
    const next = l + 1 < levels.length ? `Level ${l + 1}` : undefined;
    states[`Level ${l}`] =
      ids.length === 1
        ? run(ids[0] as string, next)
        : {
            Type: 'Parallel',
            Branches: ids.map((id) => ({ StartAt: `Run ${id}`, States: { [`Run ${id}`]: run(id) } })),
            ...(next ? { Next: next } : { End: true }),
          };
  });
  return { StartAt: 'Level 0', States: states };
}

export interface DagMeasurement {
  readonly steps: number;
  readonly compiled: number;
  readonly levelBarrier: number;
  readonly joinEdges: number;
  readonly childMachines: number;
  /** Steps that started later than their last dependency finished (must be 0). */
  readonly lateStarts: number;
}

export function measure(dag: RandomDag): DagMeasurement {
  const compiled = compilePlan(dag.plan, { simulate: false });
  const [main, ...children] = compiled.definitions;
  const childMap = new Map<string, AslDefinition>();
  for (const [i, c] of children.entries())
    childMap.set(ref(c.arnSubstitution ?? childPlaceholder(i + 1)), c.asl);
  const duration = (id: string) => dag.duration.get(id) as number;
  const sim = simulate({
    definition: main?.asl as AslDefinition,
    startAt: EXECUTE_STATE,
    children: childMap,
    duration,
  });
  const longest = criticalPath(dag.steps, duration);
  let lateStarts = 0;
  for (const s of dag.steps) {
    const ready = Math.max(0, ...s.dependsOn.map((d) => sim.finish.get(d) as number));
    if ((sim.start.get(s.id) as number) > ready + 1e-9) lateStarts += 1;
  }
  const baseline = simulate({ definition: levelBarrierDefinition(dag.steps), duration });
  return {
    steps: dag.steps.length,
    compiled: sim.makespan / longest,
    levelBarrier: baseline.makespan / longest,
    joinEdges: compiled.report.structure.joinEdges,
    childMachines: compiled.report.structure.childMachines,
    lateStarts,
  };
}

function stats(values: readonly number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))] as number;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { min: round(at(0)), median: round(at(0.5)), p90: round(at(0.9)), max: round(at(1)) };
}

function main(): void {
  const seed = 20_261_122;
  const graphs = 1_000;
  const random = prng(seed);
  const started = performance.now();
  const all: DagMeasurement[] = [];
  for (let g = 0; g < graphs; g++)
    all.push(measure(randomDag(5 + Math.floor(random() * 196), random, `dag${g}`)));
  // The reference point: 50-step graphs.
  const fifty: DagMeasurement[] = [];
  for (let g = 0; g < 200; g++) fifty.push(measure(randomDag(50, random, `fifty${g}`)));
  const result = {
    description:
      'makespan ÷ critical path, simulated by walking the compiled ASL (compiled) and a one-Parallel-per-level ASL (levelBarrier) on the same random DAGs',
    seed,
    graphs,
    stepsPerGraph: { min: 5, max: 200 },
    durations: 'log-uniform 1–100 per step',
    edges: 'each step depends on 0–3 of the 12 previous steps',
    compiled: stats(all.map((m) => m.compiled)),
    levelBarrier: stats(all.map((m) => m.levelBarrier)),
    fiftyStepGraphs: {
      graphs: fifty.length,
      compiled: stats(fifty.map((m) => m.compiled)),
      levelBarrier: stats(fifty.map((m) => m.levelBarrier)),
    },
    lateStarts: all.reduce((n, m) => n + m.lateStarts, 0) + fifty.reduce((n, m) => n + m.lateStarts, 0),
    graphsWithJoins: all.filter((m) => m.joinEdges > 0).length,
    joinEdgesPerGraph: stats(all.map((m) => m.joinEdges)),
    seconds: Math.round(performance.now() - started) / 1000,
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/dag.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  if (result.compiled.max > 1 + 1e-9 || result.lateStarts > 0) process.exitCode = 1;
}

const invokedDirectly =
  process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) main();

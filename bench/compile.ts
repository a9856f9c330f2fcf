/**
 * Compile time against plan size: random DAG plans of 10, 100, 1,000 and 10,000 steps
 * (best of several runs each), with the number of definitions, the largest definition and the
 * largest estimated history per machine, and what a run costs on AWS per step: happy-path state
 * transitions (Standard workflows bill each, the step machines' included) and definition bytes
 * (a definition's quota is 1 MB; every definition counts, the step machines' included).
 * Writes bench/results/compile.json. `--before <file>` adds that run's figures (the same bench at
 * an earlier commit, run beside this one) and the ratios.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { compilePlan } from '../lib/compiler/index.ts';
import { isStepMachinePlaceholder } from '../lib/compiler/placeholders.ts';
import { prng, randomDag } from './dag.ts';

const SIZES = [10, 100, 1_000, 10_000];

function bestOf(runs: number, work: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    work();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

const random = prng(7);
const rows = SIZES.map((steps) => {
  const dag = randomDag(steps, random, `plan${steps}`);
  // Warm up the JIT on this size before timing.
  const result = compilePlan(dag.plan, { simulate: false });
  const ms = bestOf(steps >= 10_000 ? 3 : 5, () => compilePlan(dag.plan, { simulate: false }));
  const machines = result.report.machines;
  return {
    steps,
    milliseconds: Math.round(ms * 10) / 10,
    microsecondsPerStep: Math.round((ms * 1000) / steps),
    definitions: result.definitions.length,
    largestDefinitionBytes: Math.max(...machines.map((m) => m.bytes)),
    largestEstimatedHistoryEvents: Math.max(...machines.map((m) => m.estimatedHistoryEvents)),
    totalStates: result.report.totals.states,
    joinEdges: result.report.structure.joinEdges,
    // What Standard workflows bill and what the 1 MB definition quota sees, per step.
    happyPathTransitionsPerStep: Math.round((result.report.totals.happyPathTransitions / steps) * 100) / 100,
    definitionBytesPerStep: Math.round(result.report.totals.bytes / steps),
    withinQuotas: machines.every((m) => m.bytes <= 1_048_576 && m.estimatedHistoryEvents <= 25_000),
    stepMachines: result.definitions.filter(
      (d) => d.arnSubstitution && isStepMachinePlaceholder(d.arnSubstitution),
    ).length,
    // The same plan with every step's states in the plan machine (stepMachines: 'never').
    inline: inlineFigures(dag.plan, steps),
  };
});

function inlineFigures(plan: Parameters<typeof compilePlan>[0], steps: number) {
  const { report, definitions } = compilePlan(plan, { simulate: false, stepMachines: 'never' });
  return {
    definitions: definitions.length,
    happyPathTransitionsPerStep: Math.round((report.totals.happyPathTransitions / steps) * 100) / 100,
    definitionBytesPerStep: Math.round(report.totals.bytes / steps),
  };
}

const beforeFile = process.argv.includes('--before')
  ? process.argv[process.argv.indexOf('--before') + 1]
  : undefined;
type Row = (typeof rows)[number];
const before =
  beforeFile && existsSync(beforeFile)
    ? (JSON.parse(readFileSync(beforeFile, 'utf8')) as { rows: Row[]; loadAverage?: number[] })
    : undefined;
const ratios = before
  ? rows.map((row) => {
      const old = before.rows.find((r) => r.steps === row.steps);
      return {
        steps: row.steps,
        definitionBytesPerStep: old
          ? Math.round((row.definitionBytesPerStep / old.definitionBytesPerStep) * 100) / 100
          : null,
        happyPathTransitionsPerStep: old
          ? Math.round((row.happyPathTransitionsPerStep / old.happyPathTransitionsPerStep) * 100) / 100
          : null,
        milliseconds: old ? Math.round((row.milliseconds / old.milliseconds) * 100) / 100 : null,
      };
    })
  : undefined;

const output = {
  goals: { happyPathTransitionsPerStep: 4, definitionBytesPerStep: 1536 },
  description:
    "compilePlan wall time (best of 3–5 runs, simulation off) on random DAG plans with the default stepMachines: 'auto' (inline: the same plan with stepMachines: 'never'); each definition must stay under 1 MiB and 25,000 history events",
  node: process.version,
  loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  limits: { definitionBytes: 1_048_576, historyEvents: 25_000 },
  rows,
  ...(before
    ? { before: { source: beforeFile, rows: before.rows, loadAverage: before.loadAverage }, ratios }
    : {}),
};
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/compile.json', import.meta.url), `${JSON.stringify(output, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);

/**
 * Engine benchmark: transitions per second and overhead per transition of plangate's embedded
 * engine (in memory and durable) and of aws-local-stepfunctions@3 (in memory), on the same
 * definitions in the same run. Writes bench/results/engine.json.
 *
 * Run: npm run bench:engine [-- --quick]
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createEngine, type Engine } from '../lib/engine/engine.ts';
import { createResourceInvoker } from '../lib/engine/resources/index.ts';
import { peerRunner } from './engine-peer.ts';
import { noop, WORKLOADS, type Workload } from './engine-workloads.ts';

const quick = process.argv.includes('--quick');
/** Measured executions per workload and engine (after one warm-up run); the median is reported. */
const RUNS = quick ? 3 : 15;

interface Measurement {
  readonly medianMs: number;
  readonly minMs: number;
  readonly transitionsPerSecond: number;
  readonly overheadMicrosPerTransition: number;
}

async function measure(workload: Workload, runOnce: () => Promise<unknown>): Promise<Measurement> {
  await runOnce();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await runOnce();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const medianMs = times[Math.floor(times.length / 2)] ?? Number.NaN;
  return {
    medianMs: round(medianMs),
    minMs: round(times[0] ?? Number.NaN),
    transitionsPerSecond: Math.round(workload.transitions / (medianMs / 1000)),
    overheadMicrosPerTransition: round((medianMs * 1000) / workload.transitions),
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** One plangate engine (memory or durable) with the bench's Lambda function registered. */
function plangateEngine(storeDir: string | undefined): Engine {
  const invokeResource = createResourceInvoker({ lambdaHandlers: { noop: (event) => noop(event) } });
  return createEngine({ storeDir, invokeResource, timeScale: 0 });
}

async function plangateRunner(engine: Engine, workload: Workload): Promise<() => Promise<unknown>> {
  const { stateMachineArn } = await engine.createStateMachine({
    name: workload.name,
    definition: JSON.stringify(workload.definition),
    roleArn: 'arn:aws:iam::123456789012:role/bench',
  });
  const input = JSON.stringify(workload.input);
  return async () => {
    const { executionArn } = await engine.startExecution({ stateMachineArn, input });
    const done = await engine.awaitExecution(executionArn!);
    if (done.status !== 'SUCCEEDED')
      throw new Error(`${workload.name} ended ${done.status}: ${done.error} ${done.cause}`);
    return done.output;
  };
}

async function main(): Promise<void> {
  const storeDir = await mkdtemp(join(tmpdir(), 'plangate-bench-'));
  const memory = plangateEngine(undefined);
  const durable = plangateEngine(storeDir);
  const rows = [];
  try {
    for (const workload of WORKLOADS) {
      const engines = {
        'plangate-memory': await measure(workload, await plangateRunner(memory, workload)),
        'plangate-durable': await measure(workload, await plangateRunner(durable, workload)),
        'aws-local-stepfunctions': await measure(workload, peerRunner(workload)),
      };
      const peer = engines['aws-local-stepfunctions'].medianMs;
      const ratios = {
        durableSpeedupVsPeer: round(peer / engines['plangate-durable'].medianMs),
        memorySpeedupVsPeer: round(peer / engines['plangate-memory'].medianMs),
      };
      rows.push({ workload: workload.name, transitions: workload.transitions, engines, ratios });
      process.stdout.write(
        `${workload.name.padEnd(28)} memory ${fmt(engines['plangate-memory'])}  durable ${fmt(engines['plangate-durable'])}  peer ${fmt(engines['aws-local-stepfunctions'])}  durable/peer ×${ratios.durableSpeedupVsPeer}\n`,
      );
    }
  } finally {
    await memory.close();
    await durable.close();
    await rm(storeDir, { recursive: true, force: true });
  }
  const geomean = (values: number[]) =>
    round(Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length));
  const result = {
    benchmark: 'engine',
    generatedAt: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    runsPerMeasurement: RUNS,
    method:
      'median wall time of one execution (start to terminal status), after one warm-up run; transitions = states entered; ' +
      'speedup = peer median / plangate median (>1: plangate faster). plangate-durable persists every history event to a temp store directory.',
    workloads: rows,
    summary: {
      durableSpeedupVsPeerGeometricMean: geomean(rows.map((r) => r.ratios.durableSpeedupVsPeer)),
      memorySpeedupVsPeerGeometricMean: geomean(rows.map((r) => r.ratios.memorySpeedupVsPeer)),
    },
  };
  const dir = new URL('./results/', import.meta.url);
  await mkdir(dir, { recursive: true });
  await writeFile(new URL('engine.json', dir), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    `summary: durable ×${result.summary.durableSpeedupVsPeerGeometricMean} vs peer (geometric mean), memory ×${result.summary.memorySpeedupVsPeerGeometricMean}\n`,
  );
}

function fmt(m: Measurement): string {
  return `${String(m.medianMs).padStart(8)} ms ${String(m.transitionsPerSecond).padStart(7)} tr/s`;
}

await main();

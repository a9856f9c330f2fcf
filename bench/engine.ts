/**
 * Engine benchmark: transitions per second and overhead per transition of plangate's embedded
 * engine, durable (a temp store directory; group commit, the default, and strict: fdatasync
 * before every effect) and in memory, against aws-local-stepfunctions@3 (in memory), on the
 * same definitions in the same run. Before timing, every workload runs once
 * on each engine and the outputs and the number of states entered must be equal, so the peer is
 * known to execute the definitions. Rounds are interleaved (each round runs every engine once,
 * in an order shuffled every round) after warm-up rounds, so load on a shared machine hits all
 * engines alike and no engine always runs after the same one (and collects its garbage).
 * Writes bench/results/engine.json.
 *
 * Run: npm run bench:engine [-- --quick] [-- --rounds N] [-- --only name-prefix] [-- --out file.json --label text --no-floor]
 * (--out/--label: e.g. to measure an older engine with this harness and keep it apart; --no-floor
 * for engines whose history files are not one line per write)
 */

import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { createEngine, type Engine } from '../lib/engine/engine.ts';
import { createResourceInvoker } from '../lib/engine/resources/index.ts';
import { prng } from './dag.ts';
import { durabilityFloor } from './engine-floor.ts';
import { PeerRunner } from './engine-peer.ts';
import { noop, respondLater, WORKLOADS, type Workload } from './engine-workloads.ts';

const quick = process.argv.includes('--quick');
const roundsArg = process.argv.indexOf('--rounds');
/** Measured rounds per workload; each round times one execution on every engine. */
const ROUNDS = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : quick ? 5 : 61;
const withFloor = !process.argv.includes('--no-floor');
const outArg = process.argv.indexOf('--out');
const labelArg = process.argv.indexOf('--label');
/** What this run measured, when it is not the working tree's engine. */
const LABEL = labelArg > 0 ? process.argv[labelArg + 1] : undefined;
const onlyArg = process.argv.indexOf('--only');
/** The workloads whose names start with `--only`'s value (all by default): for working on one. */
const SELECTED =
  onlyArg > 0 ? WORKLOADS.filter((w) => w.name.startsWith(String(process.argv[onlyArg + 1]))) : WORKLOADS;

/** The engines in a random order (Fisher–Yates), so that no engine always follows the same one. */
function shuffled(engines: readonly EngineName[], random: () => number): EngineName[] {
  const out = [...engines];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as EngineName, out[i] as EngineName];
  }
  return out;
}

/** Rounds run first and discarded (JIT warm-up, file system caches). */
const WARMUP_ROUNDS = quick ? 2 : 8;

type EngineName =
  | 'plangate-durable'
  | 'plangate-durable-strict'
  | 'plangate-memory'
  | 'aws-local-stepfunctions';
const ENGINES: readonly EngineName[] = [
  'plangate-durable',
  'plangate-durable-strict',
  'plangate-memory',
  'aws-local-stepfunctions',
];

/** Invocations of the bench's Lambda function, to check that both engines call it alike. */
let handlerCalls = 0;
function countedNoop(event: unknown): Promise<unknown> {
  handlerCalls++;
  return noop(event);
}

interface Measurement {
  readonly medianMs: number;
  readonly p25Ms: number;
  readonly p75Ms: number;
  readonly minMs: number;
  readonly maxMs: number;
  /** (p75 − p25) / median, in percent. */
  readonly spreadPercent: number;
  readonly transitionsPerSecond: number;
  readonly overheadMicrosPerTransition: number;
  /**
   * Median CPU time of the process during one execution (user + system, every thread): the work
   * an execution costs, without the waits (I/O stalls, other processes) that wall time includes.
   */
  readonly cpuMedianMs: number;
}

function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  const a = sorted[low] ?? Number.NaN;
  const b = sorted[high] ?? Number.NaN;
  return a + (b - a) * (at - low);
}

function summarize(workload: Workload, times: readonly number[], cpu: readonly number[]): Measurement {
  const sorted = [...times].sort((a, b) => a - b);
  const median = quantile(sorted, 0.5);
  const p25 = quantile(sorted, 0.25);
  const p75 = quantile(sorted, 0.75);
  return {
    medianMs: round(median),
    p25Ms: round(p25),
    p75Ms: round(p75),
    minMs: round(sorted[0] ?? Number.NaN),
    maxMs: round(sorted.at(-1) ?? Number.NaN),
    spreadPercent: round(((p75 - p25) / median) * 100),
    transitionsPerSecond: Math.round(workload.transitions / (median / 1000)),
    overheadMicrosPerTransition: round((median * 1000) / workload.transitions),
    cpuMedianMs: round(
      quantile(
        [...cpu].sort((a, b) => a - b),
        0.5,
      ),
    ),
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** A ratio to three significant digits (some are far below 0.01). */
function ratio(value: number): number {
  return Number(value.toPrecision(3));
}

/** The peer's callback task: waits for the responder to hand its input back. */
function peerCallback(input: unknown): Promise<unknown> {
  handlerCalls++;
  return new Promise((resolve) => respondLater(() => resolve(input)));
}

/**
 * One plangate engine (memory or durable) with the bench's Lambda functions registered: `noop`,
 * and `callback`, which hands its task token to the responder, who sends the input back with
 * SendTaskSuccess.
 */
function plangateEngine(storeDir: string | undefined, durability: 'group' | 'strict' = 'group'): Engine {
  const callback = (event: unknown) => {
    handlerCalls++;
    const { token, input } = event as { token: string; input: unknown };
    respondLater(() =>
      engine.sendTaskSuccess({ taskToken: token, output: JSON.stringify(input) }).catch((error) => {
        process.stderr.write(`SendTaskSuccess failed: ${error}\n`);
        process.exit(1);
      }),
    );
    return Promise.resolve({});
  };
  const invokeResource = createResourceInvoker({ lambdaHandlers: { noop: countedNoop, callback } });
  const engine = createEngine({ storeDir, invokeResource, timeScale: 0, durability });
  return engine;
}

/** Runs a workload on a plangate engine: one execution per call, resolving to its output. */
class PlangateRunner {
  private constructor(
    private readonly engine: Engine,
    private readonly workload: Workload,
    private readonly stateMachineArn: string,
    private readonly input: string,
  ) {}

  static async create(engine: Engine, workload: Workload): Promise<PlangateRunner> {
    const { stateMachineArn } = await engine.createStateMachine({
      name: workload.name,
      definition: JSON.stringify(workload.definition),
      roleArn: 'arn:aws:iam::123456789012:role/bench',
    });
    return new PlangateRunner(engine, workload, String(stateMachineArn), JSON.stringify(workload.input));
  }

  async run(): Promise<unknown> {
    return (await this.execute()).output;
  }

  /** One execution and the states it entered (from its history). */
  async runObserved(): Promise<{ output: unknown; statesEntered: number }> {
    const { output, executionArn } = await this.execute();
    let statesEntered = 0;
    let nextToken: string | undefined;
    do {
      const page = await this.engine.getExecutionHistory({
        executionArn,
        maxResults: 1000,
        includeExecutionData: false,
        ...(nextToken ? { nextToken } : {}),
      });
      for (const e of page.events ?? []) if (e.type?.endsWith('StateEntered')) statesEntered++;
      nextToken = page.nextToken;
    } while (nextToken);
    return { output, statesEntered };
  }

  private async execute(): Promise<{ output: unknown; executionArn: string }> {
    const { executionArn } = await this.engine.startExecution({
      stateMachineArn: this.stateMachineArn,
      input: this.input,
    });
    const done = await this.engine.awaitExecution(String(executionArn));
    if (done.status !== 'SUCCEEDED')
      throw new Error(`${this.workload.name} ended ${done.status}: ${done.error} ${done.cause}`);
    return { output: JSON.parse(String(done.output)), executionArn: String(executionArn) };
  }
}

interface Runner {
  run(): Promise<unknown>;
  runObserved(): Promise<{ output: unknown; statesEntered: number }>;
}

/** Runs each engine once, untimed, and fails unless outputs, states entered and handler calls agree. */
async function verify(workload: Workload, runners: Record<EngineName, Runner>): Promise<void> {
  const seen: Array<{ engine: EngineName; output: unknown; statesEntered: number; calls: number }> = [];
  for (const engine of ENGINES) {
    const before = handlerCalls;
    const { output, statesEntered } = await runners[engine].runObserved();
    seen.push({ engine, output, statesEntered, calls: handlerCalls - before });
  }
  const [first, ...rest] = seen;
  if (!first) return;
  for (const other of rest) {
    if (!isDeepStrictEqual(other.output, first.output))
      throw new Error(`${workload.name}: ${other.engine} output differs from ${first.engine}'s`);
    if (other.calls !== first.calls)
      throw new Error(
        `${workload.name}: ${other.engine} made ${other.calls} task calls, ${first.engine} ${first.calls}`,
      );
  }
  for (const s of seen) {
    if (s.statesEntered !== workload.transitions)
      throw new Error(
        `${workload.name}: ${s.engine} entered ${s.statesEntered} states, expected ${workload.transitions}`,
      );
    if (s.calls !== workload.taskStates.length)
      throw new Error(
        `${workload.name}: ${s.engine} made ${s.calls} task calls, expected ${workload.taskStates.length}`,
      );
  }
}

/** Warm-up, then interleaved timed rounds; the engine order is shuffled every round (seeded). */
async function measure(
  runners: Record<EngineName, Runner>,
): Promise<{ times: Record<EngineName, number[]>; cpu: Record<EngineName, number[]> }> {
  const times = emptySamples();
  const cpu = emptySamples();
  const random = prng(11); // the engine order of each round, the same every run
  for (let r = 0; r < WARMUP_ROUNDS + ROUNDS; r++) {
    for (const engine of shuffled(ENGINES, random)) {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      await runners[engine].run();
      const elapsed = performance.now() - started;
      const used = process.cpuUsage(cpuBefore);
      if (r >= WARMUP_ROUNDS) {
        times[engine].push(elapsed);
        cpu[engine].push((used.user + used.system) / 1000);
      }
    }
  }
  return { times, cpu };
}

function emptySamples(): Record<EngineName, number[]> {
  return {
    'plangate-durable': [],
    'plangate-durable-strict': [],
    'plangate-memory': [],
    'aws-local-stepfunctions': [],
  };
}

/**
 * The durability floor of a workload (engine-floor.ts), from the history one execution leaves in
 * a store of its own once its engine has closed (the close checkpoints the log into the history file).
 */
async function floorOf(workload: Workload): Promise<ReturnType<typeof durabilityFloor>> {
  const dir = await mkdtemp(join(os.tmpdir(), 'plangate-bench-floor-'));
  try {
    const engine = plangateEngine(dir);
    await (await PlangateRunner.create(engine, workload)).run();
    await engine.close();
    return durabilityFloor(historyDir(dir, workload.name), join(dir, 'floor.tmp'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The durable store's history directory of a state machine. */
function historyDir(storeDir: string, machineName: string): string {
  const executions = join(storeDir, 'executions');
  const dir = readdirSync(executions).find((d) => decodeURIComponent(d.slice(1)) === machineName);
  if (!dir) throw new Error(`no histories of ${machineName} in ${executions}`);
  return join(executions, dir);
}

function machine() {
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    osRelease: os.release(),
    cpuModel: cpus[0]?.model ?? 'unknown',
    logicalCpus: cpus.length,
    totalMemoryGiB: round(os.totalmem() / 2 ** 30),
    loadAverage1mAtStart: round(os.loadavg()[0] ?? Number.NaN),
  };
}

async function main(): Promise<void> {
  const host = machine();
  const storeDir = await mkdtemp(join(os.tmpdir(), 'plangate-bench-'));
  const strictDir = await mkdtemp(join(os.tmpdir(), 'plangate-bench-strict-'));
  const memory = plangateEngine(undefined);
  const durable = plangateEngine(storeDir);
  const strict = plangateEngine(strictDir, 'strict');
  const rows = [];
  let durableStore: ReturnType<Engine['storeStats']> | undefined;
  let strictStore: ReturnType<Engine['storeStats']> | undefined;
  try {
    for (const workload of SELECTED) {
      const runners: Record<EngineName, Runner> = {
        'plangate-durable': await PlangateRunner.create(durable, workload),
        'plangate-durable-strict': await PlangateRunner.create(strict, workload),
        'plangate-memory': await PlangateRunner.create(memory, workload),
        'aws-local-stepfunctions': new PeerRunner(workload, workload.callback ? peerCallback : countedNoop),
      };
      await verify(workload, runners);
      const { times, cpu } = await measure(runners);
      const engines = {
        'plangate-durable': summarize(workload, times['plangate-durable'], cpu['plangate-durable']),
        'plangate-durable-strict': summarize(
          workload,
          times['plangate-durable-strict'],
          cpu['plangate-durable-strict'],
        ),
        'plangate-memory': summarize(workload, times['plangate-memory'], cpu['plangate-memory']),
        'aws-local-stepfunctions': summarize(
          workload,
          times['aws-local-stepfunctions'],
          cpu['aws-local-stepfunctions'],
        ),
      };
      const peer = engines['aws-local-stepfunctions'].medianMs;
      const pairedDurable = times['plangate-durable'].map(
        (t, i) => (times['aws-local-stepfunctions'][i] ?? Number.NaN) / t,
      );
      const floor = withFloor ? await floorOf(workload) : undefined;
      const ratios = {
        peerOverDurable: ratio(peer / engines['plangate-durable'].medianMs),
        ...(floor ? { peerOverDurabilityFloor: ratio(peer / floor.floorMs) } : {}),
        peerOverDurablePairedMedian: ratio(
          quantile(
            [...pairedDurable].sort((a, b) => a - b),
            0.5,
          ),
        ),
        peerOverDurableCpu: ratio(
          engines['aws-local-stepfunctions'].cpuMedianMs / engines['plangate-durable'].cpuMedianMs,
        ),
        peerOverDurableStrict: ratio(peer / engines['plangate-durable-strict'].medianMs),
        peerOverMemory: ratio(peer / engines['plangate-memory'].medianMs),
      };
      rows.push({
        workload: workload.name,
        transitions: workload.transitions,
        engines,
        ratios,
        ...(floor ? { durabilityFloor: floor } : {}),
      });
      process.stdout.write(
        `${workload.name.padEnd(26)} durable ${fmt(engines['plangate-durable'])}  strict ${fmt(engines['plangate-durable-strict'])}  memory ${fmt(engines['plangate-memory'])}  peer ${fmt(engines['aws-local-stepfunctions'])}  peer/durable ×${ratios.peerOverDurable}\n`,
      );
    }
    durableStore = durable.storeStats();
    strictStore = strict.storeStats();
  } finally {
    await memory.close();
    await durable.close();
    await strict.close();
    await rm(storeDir, { recursive: true, force: true });
    await rm(strictDir, { recursive: true, force: true });
  }
  const geomean = (values: number[]) =>
    ratio(Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length));
  const durableRatios = rows.map((r) => r.ratios.peerOverDurable);
  const result = {
    benchmark: 'engine',
    ...(LABEL === undefined ? {} : { label: LABEL }),
    generatedAt: new Date().toISOString(),
    machine: { ...host, loadAverage1mAtEnd: round(os.loadavg()[0] ?? Number.NaN) },
    warmupRounds: WARMUP_ROUNDS,
    rounds: ROUNDS,
    method:
      'Each workload first runs once on every engine untimed: outputs must be equal, every engine must enter the same number of states ' +
      '(plangate: *StateEntered history events; peer: StateEntered event logs) and make the same number of task calls. Then ' +
      `${WARMUP_ROUNDS} warm-up and ${ROUNDS} timed rounds; each round times one execution (start to terminal status) per engine, ` +
      'in an order shuffled every round (seeded: no engine always runs right after the same one, whose garbage it would collect). Times are wall-clock ms: median, quartiles, min, max; spreadPercent = IQR / median. ' +
      'transitions = states entered. Ratios are peer time / plangate time (> 1: plangate faster): peerOverDurable from the medians, ' +
      'peerOverDurablePairedMedian the median of per-round ratios. plangate-durable writes every history event to a temp store ' +
      'directory with the default durability (group commit: events go to one write-ahead log; a write(2) of all pending events before every ' +
      'task call, task token handed out and API answer, and within 20 ms for events nobody waits for; fdatasync of the log at most 20 ms after a write, off the event loop); ' +
      'plangate-durable-strict waits for that fdatasync before every task call and API answer (docs/engine-speed.md); the peer keeps everything in memory. ' +
      'The peer has no .waitForTaskToken: in callback-chain its Task handler waits for the same responder (setImmediate) that calls SendTaskSuccess on plangate. ' +
      'stores: what each durable store did during the whole run (fdatasyncs of the log, checkpoints). ' +
      'cpuMedianMs: median CPU time of the process (user + system, all threads) during one execution; peerOverDurableCpu compares those ' +
      '(the work, without I/O stalls and waits for other processes that wall time includes). Ratios have three significant digits. ' +
      'durabilityFloor: the least any engine writing this history format must spend per execution on this machine (' +
      'encoding the whole stored history in store format 3 + one write(2) per stored batch, measured on the history of one execution in a store of its own, see bench/engine-floor.ts; jsonEncodeHistoryMs: the same history as JSON, the earlier format); ' +
      'peerOverDurabilityFloor < 1 means that floor alone takes longer than the whole peer execution.',
    workloads: rows,
    stores: { 'plangate-durable': durableStore, 'plangate-durable-strict': strictStore },
    summary: {
      peerOverDurableGeometricMean: geomean(durableRatios),
      peerOverDurableLowest: Math.min(...durableRatios),
      peerOverDurableCpuGeometricMean: geomean(rows.map((r) => r.ratios.peerOverDurableCpu)),
      peerOverDurableStrictGeometricMean: geomean(rows.map((r) => r.ratios.peerOverDurableStrict)),
      peerOverMemoryGeometricMean: geomean(rows.map((r) => r.ratios.peerOverMemory)),
      durableFasterOnEveryWorkload: durableRatios.every((r) => r > 1),
    },
  };
  const out =
    outArg > 0
      ? new URL(String(process.argv[outArg + 1]), `file://${process.cwd()}/`)
      : new URL('./results/engine.json', import.meta.url);
  await mkdir(new URL('./', out), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    `summary: peer/durable ×${result.summary.peerOverDurableGeometricMean} (geometric mean), lowest ×${result.summary.peerOverDurableLowest}; peer/memory ×${result.summary.peerOverMemoryGeometricMean}\n`,
  );
}

function fmt(m: Measurement): string {
  return `${m.medianMs.toFixed(2).padStart(7)} ms ±${String(Math.round(m.spreadPercent)).padStart(3)}%`;
}

await main();

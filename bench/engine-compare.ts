/**
 * The engine against another checkout of itself (main, by default), in one run: the five
 * workloads of bench/engine.ts on both engines, durable (group commit, a temp store each) and in
 * memory. Each checkout's engines run in a child process of their own (two engines in one process
 * disturb each other's JIT and collector: phases where either runs at twice its time); this
 * process alternates the rounds between them, one execution at a time, in an order shuffled every
 * round, so load on a shared machine hits both alike. Per workload and mode: the median of the
 * per-round ratios (this checkout / the other: above 1 means this one is slower), the ratio of
 * the medians and the quartiles, of wall time and of CPU time. Guards a restructuring against slowing the
 * engine down: exits 1 when a wall-time median of round ratios passes --limit. Writes
 * bench/results/engine-compare.json.
 *
 *   npx tsx bench/engine-compare.ts [--other /tmp/engine-main] [--rounds 101] [--limit 1.25] [--only prefix] [--out file.json]
 *
 * The other checkout needs its node_modules (a symlink will do): `git worktree add --detach
 * /tmp/engine-main main && ln -s "$PWD/node_modules" /tmp/engine-main/node_modules`.
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { prng } from './dag.ts';
import { noop, respondLater, WORKLOADS, type Workload } from './engine-workloads.ts';

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const OTHER_DIR = resolve(option('--other') ?? '/tmp/engine-main');
const THIS_DIR = resolve(import.meta.dirname, '..');
const ROUNDS = Number(option('--rounds') ?? 101);
const WARMUP_ROUNDS = 8;
const LIMIT = Number(option('--limit') ?? 1.25);
const ONLY = option('--only');
const OUT = option('--out');
const SELECTED = ONLY === undefined ? WORKLOADS : WORKLOADS.filter((w) => w.name.startsWith(ONLY));

type Checkout = 'this' | 'other';

/** The checkout's commit, with `+changes` when its work tree differs from it. */
function commitOf(dir: string): string {
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();
  return `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', 'lib') ? '+changes' : ''}`;
}
type Mode = 'durable' | 'memory';
const MODES: readonly Mode[] = ['durable', 'memory'];

// ---- a child: one checkout's engines ------------------------------------------------------------

/** What the bench uses of an engine (the same on both checkouts). */
interface BenchEngine {
  createStateMachine(input: { name: string; definition: string; roleArn: string }): Promise<{
    stateMachineArn?: string;
  }>;
  startExecution(input: { stateMachineArn: string; input: string }): Promise<{ executionArn?: string }>;
  awaitExecution(arn: string): Promise<{ status?: string; output?: string; error?: string; cause?: string }>;
  getExecutionHistory(input: {
    executionArn: string;
    maxResults: number;
    includeExecutionData: boolean;
    nextToken?: string;
  }): Promise<{ events?: Array<{ type?: string }>; nextToken?: string }>;
  sendTaskSuccess(input: { taskToken: string; output: string }): Promise<unknown>;
  close(): Promise<void>;
}

interface EngineModules {
  readonly createEngine: (options: Record<string, unknown>) => BenchEngine;
  readonly createResourceInvoker: (options: Record<string, unknown>) => unknown;
}

async function engineModules(root: string): Promise<EngineModules> {
  const engine = await import(pathToFileURL(join(root, 'lib/engine/engine.ts')).href);
  const resources = await import(pathToFileURL(join(root, 'lib/engine/resources/index.ts')).href);
  return { createEngine: engine.createEngine, createResourceInvoker: resources.createResourceInvoker };
}

/** One engine with the bench's functions: `noop`, and `callback`, answered with SendTaskSuccess; counts their calls. */
function benchEngine(
  modules: EngineModules,
  storeDir: string | undefined,
  calls: { count: number },
): BenchEngine {
  const callback = (event: unknown) => {
    calls.count++;
    const { token, input } = event as { token: string; input: unknown };
    respondLater(() =>
      engine.sendTaskSuccess({ taskToken: token, output: JSON.stringify(input) }).catch((error) => {
        process.stderr.write(`SendTaskSuccess failed: ${error}\n`);
        process.exit(1);
      }),
    );
    return Promise.resolve({});
  };
  const counted = (event: unknown) => {
    calls.count++;
    return noop(event);
  };
  const invokeResource = modules.createResourceInvoker({ lambdaHandlers: { noop: counted, callback } });
  const engine = modules.createEngine({ storeDir, invokeResource, timeScale: 0 });
  return engine;
}

/** Runs one workload's executions on one engine. */
class Runner {
  private constructor(
    private readonly engine: BenchEngine,
    private readonly stateMachineArn: string,
    private readonly input: string,
    private readonly name: string,
  ) {}

  static async create(engine: BenchEngine, workload: Workload): Promise<Runner> {
    const { stateMachineArn } = await engine.createStateMachine({
      name: workload.name,
      definition: JSON.stringify(workload.definition),
      roleArn: 'arn:aws:iam::123456789012:role/bench',
    });
    return new Runner(engine, String(stateMachineArn), JSON.stringify(workload.input), workload.name);
  }

  /** One execution, to its terminal status: its output and ARN. */
  async run(): Promise<{ output: unknown; executionArn: string }> {
    const { executionArn } = await this.engine.startExecution({
      stateMachineArn: this.stateMachineArn,
      input: this.input,
    });
    const done = await this.engine.awaitExecution(String(executionArn));
    if (done.status !== 'SUCCEEDED')
      throw new Error(`${this.name} ended ${done.status}: ${done.error} ${done.cause}`);
    return { output: JSON.parse(String(done.output)), executionArn: String(executionArn) };
  }

  /** The history event types of an execution. */
  async historyTypes(executionArn: string): Promise<string[]> {
    const types: string[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.engine.getExecutionHistory({
        executionArn,
        maxResults: 1000,
        includeExecutionData: false,
        ...(nextToken ? { nextToken } : {}),
      });
      for (const e of page.events ?? []) types.push(String(e.type));
      nextToken = page.nextToken;
    } while (nextToken);
    return types;
  }
}

/** What the parent asks of a child. */
type Request =
  | { readonly kind: 'prepare'; readonly workload: string }
  | { readonly kind: 'verify'; readonly mode: Mode }
  | { readonly kind: 'run'; readonly mode: Mode }
  | { readonly kind: 'close' };

/** What a child answers: a verification run, a timed run, or that it is ready. */
type Reply =
  | { readonly kind: 'verified'; readonly output: unknown; readonly types: string[]; readonly calls: number }
  | { readonly kind: 'timed'; readonly wallMs: number; readonly cpuMs: number }
  | { readonly kind: 'ready' }
  | { readonly kind: 'failed'; readonly message: string };

/** A child's life: the engines of the checkout at `root`, serving the parent's requests one at a time. */
async function serve(root: string): Promise<void> {
  const modules = await engineModules(root);
  const storeDir = await mkdtemp(join(os.tmpdir(), 'plangate-compare-'));
  const calls = { count: 0 };
  const engines: Record<Mode, BenchEngine> = {
    durable: benchEngine(modules, storeDir, calls),
    memory: benchEngine(modules, undefined, calls),
  };
  let runners: Record<Mode, Runner> | undefined;
  const answer = (reply: Reply) => process.send?.(reply);
  process.on('message', async (request: Request) => {
    try {
      if (request.kind === 'prepare') {
        const workload = WORKLOADS.find((w) => w.name === request.workload) as Workload;
        runners = {
          durable: await Runner.create(engines.durable, workload),
          memory: await Runner.create(engines.memory, workload),
        };
        answer({ kind: 'ready' });
      } else if (request.kind === 'verify') {
        const runner = (runners as Record<Mode, Runner>)[request.mode];
        const before = calls.count;
        const { output, executionArn } = await runner.run();
        const types = (await runner.historyTypes(executionArn)).sort();
        answer({ kind: 'verified', output, types, calls: calls.count - before });
      } else if (request.kind === 'run') {
        const runner = (runners as Record<Mode, Runner>)[request.mode];
        const cpu = process.cpuUsage();
        const started = performance.now();
        await runner.run();
        const wallMs = performance.now() - started;
        const used = process.cpuUsage(cpu);
        answer({ kind: 'timed', wallMs, cpuMs: (used.user + used.system) / 1000 });
      } else {
        await engines.durable.close();
        await engines.memory.close();
        await rm(storeDir, { recursive: true, force: true });
        answer({ kind: 'ready' });
        process.disconnect();
      }
    } catch (error) {
      answer({ kind: 'failed', message: error instanceof Error ? error.message : String(error) });
    }
  });
  answer({ kind: 'ready' });
}

// ---- the parent: alternates rounds between the two children ----------------------------------

/** A child process serving one checkout, asked one request at a time. */
class Child {
  private pending: ((reply: Reply) => void) | undefined;
  private readonly ready: Promise<Reply>;

  constructor(private readonly process: ChildProcess) {
    this.ready = new Promise((resolve) => {
      this.pending = resolve;
    });
    process.on('message', (reply: Reply) => {
      const pending = this.pending;
      this.pending = undefined;
      pending?.(reply);
    });
  }

  static start(root: string): Child {
    const script = fileURLToPath(import.meta.url);
    return new Child(fork(script, ['--serve', root], { execArgv: ['--import', 'tsx'], cwd: THIS_DIR }));
  }

  async ask(request: Request): Promise<Reply> {
    await this.ready;
    const reply = await new Promise<Reply>((resolve) => {
      this.pending = resolve;
      this.process.send(request);
    });
    if (reply.kind === 'failed') throw new Error(reply.message);
    return reply;
  }
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = sorted[Math.floor(at)] ?? Number.NaN;
  const high = sorted[Math.ceil(at)] ?? Number.NaN;
  return low + (high - low) * (at - Math.floor(at));
}

function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

const round3 = (value: number) => Number(value.toPrecision(3));

/**
 * This checkout's times against the other's: quartiles of each, the median of per-round ratios
 * (the two ran back to back in each round, under the same load) and the ratio of the medians.
 */
function ratios(mine: readonly number[], theirs: readonly number[]) {
  const quartiles = (values: readonly number[]) => [0.25, 0.5, 0.75].map((q) => round3(quantile(values, q)));
  return {
    thisQuartilesMs: quartiles(mine),
    otherQuartilesMs: quartiles(theirs),
    medianOfRoundRatios: round3(median(mine.map((t, i) => t / (theirs[i] ?? Number.NaN)))),
    ratioOfMedians: round3(median(mine) / median(theirs)),
  };
}

interface Samples {
  readonly wall: number[];
  readonly cpu: number[];
}

/** Every engine runs once untimed: outputs, history event types (as a multiset) and task calls must agree. */
async function verify(workload: Workload, children: Record<Checkout, Child>): Promise<void> {
  const seen: Array<{ engine: string; reply: Reply }> = [];
  for (const checkout of ['this', 'other'] as const)
    for (const mode of MODES)
      seen.push({
        engine: `${checkout}-${mode}`,
        reply: await children[checkout].ask({ kind: 'verify', mode }),
      });
  const [first, ...rest] = seen;
  for (const other of rest) {
    if (!first || !isDeepStrictEqual(other.reply, first.reply))
      throw new Error(`${workload.name}: ${other.engine} ran differently from ${first?.engine}`);
  }
}

async function main(): Promise<void> {
  if (!existsSync(join(OTHER_DIR, 'lib/engine/engine.ts')) || !existsSync(join(OTHER_DIR, 'node_modules')))
    throw new Error(
      `${OTHER_DIR} is not a checkout with its node_modules (see the header of bench/engine-compare.ts)`,
    );
  const children: Record<Checkout, Child> = { this: Child.start(THIS_DIR), other: Child.start(OTHER_DIR) };
  const loadAtStart = os.loadavg();
  const started = Date.now();
  const rows = [];
  try {
    for (const workload of SELECTED) {
      for (const child of Object.values(children))
        await child.ask({ kind: 'prepare', workload: workload.name });
      await verify(workload, children);
      const samples: Record<string, Samples> = {};
      const engines = (['this', 'other'] as const).flatMap((checkout) =>
        MODES.map((mode) => ({ checkout, mode })),
      );
      for (const { checkout, mode } of engines) samples[`${checkout}-${mode}`] = { wall: [], cpu: [] };
      const random = prng(17);
      for (let r = 0; r < WARMUP_ROUNDS + ROUNDS; r++) {
        for (const { checkout, mode } of shuffled(engines, random)) {
          const reply = await children[checkout].ask({ kind: 'run', mode });
          if (r < WARMUP_ROUNDS || reply.kind !== 'timed') continue;
          const sample = samples[`${checkout}-${mode}`] as Samples;
          sample.wall.push(reply.wallMs);
          sample.cpu.push(reply.cpuMs);
        }
      }
      const row: Record<string, unknown> = { workload: workload.name };
      const line: string[] = [];
      for (const mode of MODES) {
        const mine = samples[`this-${mode}`] as Samples;
        const theirs = samples[`other-${mode}`] as Samples;
        const wall = ratios(mine.wall, theirs.wall);
        row[mode] = { wall, cpu: ratios(mine.cpu, theirs.cpu) };
        line.push(`${mode} ×${wall.medianOfRoundRatios} (of medians ×${wall.ratioOfMedians})`);
      }
      rows.push(row);
      process.stdout.write(`${workload.name.padEnd(28)} ${line.join('  ')}\n`);
    }
  } finally {
    for (const child of Object.values(children)) await child.ask({ kind: 'close' }).catch(() => undefined);
  }
  const wallRatios = rows.flatMap((row) =>
    MODES.map((mode) => (row[mode] as { wall: { medianOfRoundRatios: number } }).wall.medianOfRoundRatios),
  );
  const worst = Math.max(...wallRatios);
  const cpus = os.cpus();
  const result = {
    benchmark: 'engine-compare',
    generatedAt: new Date().toISOString(),
    this: { dir: THIS_DIR, commit: commitOf(THIS_DIR) },
    other: { dir: OTHER_DIR, commit: commitOf(OTHER_DIR) },
    machine: {
      node: process.version,
      cpuModel: cpus[0]?.model ?? 'unknown',
      logicalCpus: cpus.length,
      loadAverageAtStart: loadAtStart.map(round3),
      loadAverageAtEnd: os.loadavg().map(round3),
    },
    warmupRounds: WARMUP_ROUNDS,
    rounds: ROUNDS,
    elapsedSeconds: Math.round((Date.now() - started) / 1000),
    method:
      'Each checkout of the engine in a child process of its own, driven by one parent that alternates: per workload every engine (this/other × durable/memory) ' +
      'first runs once untimed (outputs, history event types and task calls must agree), then warm-up and timed rounds, each round one execution per engine in ' +
      'an order shuffled every round (seeded), one execution at a time. Times are measured in the child: wall time from StartExecution to the terminal status, ' +
      'and the CPU time of its process meanwhile. medianOfRoundRatios = the median of the per-round ratios this / other (above 1, this checkout is slower): ' +
      'the two ran back to back under the same load, so the pair cancels load that changes over the run; ratioOfMedians = median(this) / median(other), which ' +
      'jumps where times have two modes (the Map workload: collections) and the median falls in either. Durable engines use the default durability (group ' +
      'commit) on temp stores. The limit applies to the wall-time medians of round ratios.',
    limit: LIMIT,
    worstWallMedianOfRoundRatios: worst,
    withinLimit: worst <= LIMIT,
    workloads: rows,
  };
  const out = OUT ? resolve(OUT) : resolve(import.meta.dirname, 'results/engine-compare.json');
  await mkdir(resolve(out, '..'), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    `worst wall-time median of round ratios ×${worst} (limit ×${LIMIT}); written to ${out}\n`,
  );
  if (worst > LIMIT) process.exitCode = 1;
}

const serving = option('--serve');
if (serving === undefined) await main();
else await serve(serving);

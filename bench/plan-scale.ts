/**
 * Plans at scale on the local stack, in this process, exactly as `plangate run --approve` runs
 * them (the embedded engine durable in a temp store, dynalite, the local bus, the harness Lambda
 * handlers): per-step overhead of a 100-step chain and a 100-wide fan-out of no-op steps (an echo
 * tool and an assert contract: all the time is harness), memory across a 1,000-step chain, a
 * 10,000-step plan to completion, and many executions started at once with their journals
 * checked (counts, gaps, hash chains). Writes bench/results/plan-scale.json.
 *
 *   npm run bench:scale [-- --quick] [-- --only NAME] [-- --out FILE] [-- --before FILE]
 *
 * --quick: smaller sizes, for a smoke run (writes only where --out says). --only NAME: one part
 * (chain, fanOut, memoryChain, large, concurrent), printed and written only where --out says.
 * --before FILE: the output of this same bench run on the code before a change, run just before
 * on the same machine; its figures go into the result as `before`, with after/before ratios and
 * both load averages.
 *
 * The memory run also takes the heap after a full garbage collection at each tenth of its steps
 * (V8's `gc`, exposed at run time), so growth per step is measured apart from garbage not yet
 * collected.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DescribeExecutionCommand, ListExecutionsCommand } from '@aws-sdk/client-sfn';
import { launchPlan } from '../lib/launch/launch-plan.ts';
import type { PlanInput } from '../lib/plan/schema.ts';
import { approvalsFor } from '../lib/runtime/gate/gate.ts';
import { verifyChain } from '../lib/runtime/journal/chain.ts';
import { readEvents } from '../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../lib/runtime/payloads/index.ts';
import { LocalRunStack } from '../lib/serve/local-stack.ts';
import { storePaths } from '../lib/serve/store-directory.ts';
import { echoChainPlan, echoStep } from '../tests/support/echo-plan.ts';

const QUICK = process.argv.includes('--quick');
const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const OUT = option('--out');
const BEFORE = option('--before');
const ONLY = option('--only');
const runs = (part: string) => ONLY === undefined || ONLY === part;

// A full collection on demand, without starting node with --expose-gc.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
const SIZES = QUICK
  ? { chain: 20, fanOut: 20, memoryChain: 100, large: 500, concurrent: 10 }
  : { chain: 100, fanOut: 100, memoryChain: 1_000, large: 10_000, concurrent: 200 };

function chainPlan(id: string, steps: number): PlanInput {
  return echoChainPlan(
    id,
    Array.from({ length: steps }, (_, i) => `s${i + 1}`),
  ) as PlanInput;
}

function fanOutPlan(id: string, width: number): PlanInput {
  return {
    id,
    version: 1,
    objective: `A fan-out of ${width} independent no-op steps, each proven by an assert contract`,
    sizePolicy: { minSteps: 1, maxSteps: 100_000 },
    steps: Array.from({ length: width }, (_, i) => echoStep(`w${i + 1}`)),
  } as PlanInput;
}

/** Gates no no-op plan should open: a bench that meets one stops and says so. */
const unexpected: string[] = [];

interface Stack {
  stack: LocalRunStack;
  dir: string;
  approve: () => void;
}

/** The local run stack in a temp store, answering every plan gate APPROVE as `--approve` does. */
async function startStack(): Promise<Stack> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-scale-'));
  const signingKey = Buffer.alloc(32, 7);
  const pending: ApprovalNotice[] = [];
  let answer: (notice: ApprovalNotice) => void = (notice) => pending.push(notice);
  const stack = await LocalRunStack.start({
    paths: storePaths(join(dir, 'store')),
    signingKey,
    cwd: dir,
    notify: async (notice) => answer(notice),
  });
  const approvals = approvalsFor({ ...stack.journalDeps(), sfn: stack.sfn, signingKey });
  return {
    stack,
    dir,
    approve: () => {
      answer = (notice) => {
        if (notice.kind !== 'plan') {
          unexpected.push(
            `a ${notice.kind} gate opened (a no-op step failed?): ${JSON.stringify(notice.failure)}`,
          );
          return;
        }
        void approvals.answer(notice.approvalId, {
          by: 'plangate-run--approve',
          digest: notice.plan.digest,
          decision: { decision: 'APPROVE' },
        });
      };
      for (const notice of pending.splice(0)) answer(notice);
    },
  };
}

async function launch(s: Stack, plan: PlanInput, name: string): Promise<string> {
  const { PlanSchema } = await import('../lib/plan/schema.ts');
  const launched = await launchPlan({
    sfn: s.stack.sfn,
    plan: PlanSchema.parse(plan),
    roleArn: LocalRunStack.ROLE_ARN,
    substitutions: LocalRunStack.substitutions(),
    namePrefix: 'plangate',
    tracing: false,
    journal: s.stack.journalDeps(),
    executionName: name,
  });
  return launched.executionArn;
}

/**
 * The end status of each of many executions of one state machine: one ListExecutions a round for
 * all of them, not a DescribeExecution every 20 ms per execution asked of the process measured.
 */
async function allFinished(s: Stack, executionArns: readonly string[]): Promise<string[]> {
  const stateMachineArn = (executionArns[0] ?? '').replace(/:execution:([^:]+):[^:]+$/, ':stateMachine:$1');
  for (;;) {
    const running = new Set<string>();
    let nextToken: string | undefined;
    do {
      const page = await s.stack.sfn.send(
        new ListExecutionsCommand({ stateMachineArn, statusFilter: 'RUNNING', nextToken }),
      );
      for (const e of page.executions ?? []) if (e.executionArn) running.add(e.executionArn);
      nextToken = page.nextToken;
    } while (nextToken);
    if (unexpected.length > 0) throw new Error(unexpected.join('\n'));
    if (!executionArns.some((arn) => running.has(arn))) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return Promise.all(executionArns.map((arn) => finished(s, arn)));
}

async function finished(s: Stack, executionArn: string, sample?: () => Promise<void>): Promise<string> {
  for (;;) {
    const out = await s.stack.sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (out.status === 'FAILED') process.stderr.write(`${executionArn}: FAILED ${out.error}: ${out.cause}\n`);
    if (out.status !== 'RUNNING') return out.status as string;
    if (unexpected.length > 0) throw new Error(unexpected.join('\n'));
    await sample?.();
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Executions of the stack that succeeded: in a chain on step machines, the steps done (the plan's own is still running). */
async function succeededExecutions(s: Stack): Promise<number> {
  let count = 0;
  let nextToken: string | undefined;
  do {
    const page = await s.stack.engine.listExecutions({
      statusFilter: 'SUCCEEDED',
      maxResults: 1000,
      nextToken,
    });
    count += page.executions?.length ?? 0;
    nextToken = page.nextToken;
  } while (nextToken);
  return count;
}

/** The heap after a full collection, in MiB. */
function heapAfterGc(): number {
  collectGarbage();
  return mib(process.memoryUsage().heapUsed);
}

/**
 * The texts of the histories of the plan's running executions (its own and, for a split plan, the
 * running part's) as GetExecutionHistory returns them (inputs, outputs, parameters, …), in MiB.
 */
async function runningHistoriesMiB(s: Stack): Promise<number> {
  let chars = 0;
  const count = (value: unknown): void => {
    if (typeof value === 'string') chars += value.length;
    else if (value && typeof value === 'object') for (const v of Object.values(value)) count(v);
  };
  const running = await s.stack.engine.listExecutions({ statusFilter: 'RUNNING', maxResults: 1000 });
  for (const { executionArn } of running.executions ?? []) {
    let nextToken: string | undefined;
    do {
      const page = await s.stack.engine.getExecutionHistory({ executionArn, maxResults: 1000, nextToken });
      count(page.events);
      nextToken = page.nextToken;
    } while (nextToken);
  }
  return mib(chars);
}

/** At a tenth of a run: steps done, the heap after a full collection, the running executions' history texts. */
interface Tenth {
  readonly steps: number;
  readonly heapAfterGcMiB: number;
  readonly planHistoryMiB: number;
}

/**
 * Runs one plan from approval to the end; ms, and with `memory` the heap at every poll (`heap`),
 * and also, at each tenth of the plan's steps (as their child executions finish), the heap after
 * a full collection and the size of the plan's running histories (`tenths`: a count of
 * executions every poll, for plans of step machines), then the heap once the plan has finished.
 */
async function runOne(plan: PlanInput, name: string, memory?: 'heap' | 'tenths') {
  const s = await startStack();
  try {
    const arn = await launch(s, plan, name);
    const heap: number[] = [];
    const tenths: Tenth[] = [];
    const steps = plan.steps.length;
    const sample = async () => {
      heap.push(process.memoryUsage().heapUsed);
      if (memory !== 'tenths') return;
      const done = await succeededExecutions(s);
      if (tenths.length < 9 && done >= ((tenths.length + 1) * steps) / 10) {
        const heapAfterGcMiB = heapAfterGc();
        tenths.push({ steps: done, heapAfterGcMiB, planHistoryMiB: await runningHistoriesMiB(s) });
      }
    };
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    s.approve();
    const status = await finished(s, arn, memory ? sample : undefined);
    const ms = performance.now() - started;
    const cpuMs = cpuMillis(process.cpuUsage(cpuStarted));
    const heapAfterRunMiB = memory === 'tenths' ? heapAfterGc() : undefined;
    const events = await readEvents(s.stack.data.clients.doc, s.stack.data.tableNames.events, arn);
    return {
      status,
      ms,
      cpuMs,
      events: events.length,
      chainOk: verifyChain(events).ok,
      heap,
      tenths,
      heapAfterRunMiB,
    };
  } finally {
    await s.stack.close();
    await rm(s.dir, { recursive: true, force: true });
  }
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
/** CPU time of this process (every thread: the main one, the thread pool, V8's helpers), in ms. */
const cpuMillis = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;
const mib = (bytes: number) => round(bytes / 1024 / 1024);

/** Many executions of a 9-step chain started at once, their journals checked. */
async function concurrentRuns(results: Record<string, unknown>): Promise<void> {
  const s = await startStack();
  try {
    const plan = chainPlan('scale-concurrent', 9);
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    const arns = await Promise.all(
      Array.from({ length: SIZES.concurrent }, (_, i) => launch(s, plan, `concurrent-${i}`)),
    );
    s.approve();
    const statuses = await allFinished(s, arns);
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = cpuMillis(process.cpuUsage(cpuStarted));
    let events = 0;
    let badChains = 0;
    let gaps = 0;
    for (const arn of arns) {
      const records = await readEvents(s.stack.data.clients.doc, s.stack.data.tableNames.events, arn);
      events += records.length;
      if (!verifyChain(records).ok) badChains++;
      if (records.some((r, i) => r.seq !== i + 1)) gaps++;
    }
    const perExecution = new Set<number>();
    for (const arn of arns)
      perExecution.add(
        (await readEvents(s.stack.data.clients.doc, s.stack.data.tableNames.events, arn)).length,
      );
    results.concurrent = {
      executions: SIZES.concurrent,
      stepsEach: 9,
      succeeded: statuses.filter((x) => x === 'SUCCEEDED').length,
      seconds: round(seconds),
      executionsPerSecond: round(SIZES.concurrent / seconds, 2),
      stepsPerSecond: round((SIZES.concurrent * 9) / seconds, 1),
      cpuMsPerStep: round(cpuMs / (SIZES.concurrent * 9), 2),
      events,
      distinctEventCountsPerExecution: [...perExecution],
      brokenHashChains: badChains,
      executionsWithGaps: gaps,
    };
    process.stdout.write(`concurrent: ${JSON.stringify(results.concurrent)}\n`);
  } catch (error) {
    process.stderr.write(`concurrent: ${(error as Error).stack}\n`);
    throw error;
  } finally {
    await s.stack.close();
    await rm(s.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const results: Record<string, unknown> = {};
  const loadBefore = loadavg();
  for (const [name, plan, steps] of [
    ['chain', chainPlan('scale-chain', SIZES.chain), SIZES.chain],
    ['fanOut', fanOutPlan('scale-fan-out', SIZES.fanOut), SIZES.fanOut],
  ] as const) {
    if (!runs(name)) continue;
    // The first run of a process also pays its one-time start-up (modules the handlers load on
    // first use, V8 compiling the hot paths): reported, then a second run on a new stack measures
    // what each further step costs.
    const first = await runOne(plan, `${name}-first-run`);
    const run = await runOne(plan, `${name}-run`);
    results[name] = {
      steps,
      status: run.status,
      totalMs: Math.round(run.ms),
      overheadMsPerStep: round(run.ms / steps, 2),
      cpuMsPerStep: round(run.cpuMs / steps, 2),
      firstRunMsPerStep: round(first.ms / steps, 2),
      firstRunCpuMsPerStep: round(first.cpuMs / steps, 2),
      goalMsPerStep: 20,
      met: run.status === 'SUCCEEDED' && first.status === 'SUCCEEDED' && run.ms / steps <= 20,
      events: run.events,
      hashChainOk: run.chainOk,
    };
    process.stdout.write(`${name}: ${JSON.stringify(results[name])}\n`);
  }

  if (runs('memoryChain')) {
    const memory = await runOne(chainPlan('scale-memory', SIZES.memoryChain), 'memory-run', 'tenths');
    const tenth = Math.max(1, Math.floor(memory.heap.length / 10));
    const early = memory.heap.slice(tenth, 2 * tenth);
    const late = memory.heap.slice(-tenth);
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    // From the second tenth to the last one measured while the plan runs (90% of its steps).
    const second = memory.tenths[1];
    const last = memory.tenths.at(-1);
    const span = second && last && last.steps > second.steps ? last.steps - second.steps : undefined;
    const kibPerStep = (from: number, to: number) => (span ? round(((to - from) * 1024) / span, 1) : null);
    results.memoryChain = {
      steps: SIZES.memoryChain,
      status: memory.status,
      totalMs: Math.round(memory.ms),
      heapEarlyMiB: mib(avg(early)),
      heapLateMiB: mib(avg(late)),
      heapPeakMiB: mib(Math.max(...memory.heap)),
      samples: memory.heap.length,
      heapAfterGcPerTenth: memory.tenths,
      heapAfterGcAfterRunMiB: memory.heapAfterRunMiB,
      heapAfterGcLastOverSecondTenth:
        second && last ? round(last.heapAfterGcMiB / second.heapAfterGcMiB, 2) : null,
      heapAfterGcKiBPerStep: second && last ? kibPerStep(second.heapAfterGcMiB, last.heapAfterGcMiB) : null,
      planHistoryKiBPerStep: second && last ? kibPerStep(second.planHistoryMiB, last.planHistoryMiB) : null,
      note: "heapEarly/Late: heap used (garbage included) averaged over the second and the last tenth of the polls. heapAfterGcPerTenth: as 10%…90% of the steps had finished, the heap after a full collection and the texts of the plan execution's own history (which the engine holds while it runs); the KiB-per-step figures compare the second tenth with the ninth; heapAfterGcAfterRunMiB: once the plan finished, stack still up",
    };
    process.stdout.write(`memoryChain: ${JSON.stringify(results.memoryChain)}\n`);
  }

  if (runs('large')) {
    const large = await runOne(chainPlan('scale-large', SIZES.large), 'large-run', 'heap');
    results.large = {
      steps: SIZES.large,
      status: large.status,
      totalSeconds: round(large.ms / 1000),
      msPerStep: round(large.ms / SIZES.large, 2),
      cpuMsPerStep: round(large.cpuMs / SIZES.large, 2),
      heapPeakMiB: mib(Math.max(...large.heap)),
      rssMiB: mib(process.memoryUsage().rss),
      events: large.events,
      hashChainOk: large.chainOk,
    };
    process.stdout.write(`large: ${JSON.stringify(results.large)}\n`);
  }

  if (runs('concurrent')) await concurrentRuns(results);

  const output: Record<string, unknown> = {
    description:
      'plans on the local stack in one process (durable engine, dynalite, local bus, the harness Lambda handlers), approved as --approve does; no-op steps, so all time is harness overhead',
    node: process.version,
    machine: { cpu: cpus()[0]?.model, cores: cpus().length },
    loadAverage: { start: loadBefore.map((x) => round(x, 2)), end: loadavg().map((x) => round(x, 2)) },
    quick: QUICK,
    ...results,
  };
  if (BEFORE) {
    const before = JSON.parse(readFileSync(BEFORE, 'utf8')) as Record<string, Record<string, number>>;
    output.before = before;
    output.ratios = beforeOverAfter(before, results as Record<string, Record<string, number>>);
  }
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  const target =
    OUT ?? (QUICK || ONLY !== undefined ? undefined : new URL('./results/plan-scale.json', import.meta.url));
  if (target) writeFileSync(target, `${JSON.stringify(output, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
}

/** before ÷ after of each time and memory figure: above 1 is faster or smaller now; throughput is after ÷ before. */
function beforeOverAfter(
  before: Record<string, Record<string, number>>,
  after: Record<string, Record<string, number>>,
): Record<string, number> {
  const ratio = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b !== undefined && b > 0 ? round(a / b, 2) : Number.NaN;
  return {
    chainMsPerStep: ratio(before.chain?.overheadMsPerStep, after.chain?.overheadMsPerStep),
    chainCpuMsPerStep: ratio(before.chain?.cpuMsPerStep, after.chain?.cpuMsPerStep),
    chainFirstRunMsPerStep: ratio(before.chain?.firstRunMsPerStep, after.chain?.firstRunMsPerStep),
    fanOutCpuMsPerStep: ratio(before.fanOut?.cpuMsPerStep, after.fanOut?.cpuMsPerStep),
    largeCpuMsPerStep: ratio(before.large?.cpuMsPerStep, after.large?.cpuMsPerStep),
    concurrentCpuMsPerStep: ratio(before.concurrent?.cpuMsPerStep, after.concurrent?.cpuMsPerStep),
    fanOutMsPerStep: ratio(before.fanOut?.overheadMsPerStep, after.fanOut?.overheadMsPerStep),
    memoryChainTotalMs: ratio(before.memoryChain?.totalMs, after.memoryChain?.totalMs),
    memoryChainHeapPeak: ratio(before.memoryChain?.heapPeakMiB, after.memoryChain?.heapPeakMiB),
    memoryChainHeapAfterGcGrowthPerStep: ratio(
      before.memoryChain?.heapAfterGcKiBPerStep,
      after.memoryChain?.heapAfterGcKiBPerStep,
    ),
    largeSeconds: ratio(before.large?.totalSeconds, after.large?.totalSeconds),
    largeHeapPeak: ratio(before.large?.heapPeakMiB, after.large?.heapPeakMiB),
    concurrentThroughput: ratio(
      after.concurrent?.executionsPerSecond,
      before.concurrent?.executionsPerSecond,
    ),
  };
}

await main();

/**
 * `npm run bench:memory`: does `plangate serve` give memory back under steady load? The real
 * `plangate serve --identity header` is started on a temporary store, a few plans are submitted
 * and left waiting at their gates, then reads are driven at a fixed rate for `--minutes`
 * (default 30): `GET /plans/{id}` nine times in ten, `GET /executions/{id}/events` the tenth.
 * The serve process's own RSS (VmRSS of /proc/<pid>/status: the node process itself, no npx or
 * tsx wrapper between) is sampled every few seconds. Recorded in bench/results/memory.json:
 * requests, rate and errors, RSS at start, after the warm-up, at the end and at its peak, and the
 * slope of RSS after the warm-up (least squares, MiB per 10 minutes) with a verdict: flat when the
 * slope is under `--bound` MiB per 10 minutes (default 16). Not part of `npm test`.
 *
 *   npm run bench:memory [-- --minutes N] [-- --rate R] [-- --warmup-seconds S] [-- --bound MIB] [-- --out FILE]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startServe } from '../tests/e2e/serve-process.ts';
import { echoChainPlan } from '../tests/support/echo-plan.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    minutes: { type: 'string' },
    rate: { type: 'string' },
    'warmup-seconds': { type: 'string' },
    'sample-seconds': { type: 'string' },
    bound: { type: 'string' },
    plans: { type: 'string' },
    out: { type: 'string' },
  },
});
const OUT = path.resolve(REPO, values.out ?? 'bench/results/memory.json');
const DURATION_MS = Number(values.minutes ?? 30) * 60_000;
/** Requests per second, all routes together (the report: about 190/s). */
const RATE = Number(values.rate ?? 190);
const WARMUP_MS = Number(values['warmup-seconds'] ?? 60) * 1000;
const SAMPLE_MS = Number(values['sample-seconds'] ?? 5) * 1000;
/** The stated bound: RSS after the warm-up may grow by less than this many MiB per 10 minutes. */
const BOUND_MIB_PER_10_MIN = Number(values.bound ?? 16);
const PLANS = Number(values.plans ?? 5);
/** Requests under way at once; a tick that finds them all busy skips its request (counted). */
const MAX_IN_FLIGHT = 64;
const SUBMITTER = { 'x-plangate-user': 'carol' };
const MIB = 1024 * 1024;

const dir = await mkdtemp(path.join(tmpdir(), 'plangate-bench-memory-'));
const serve = startServe(['--identity', 'header', '--store', path.join(dir, 'store')], dir);
const pid = serve.child.pid;
if (pid === undefined) throw new Error('plangate serve did not start');
const url = await serve.line((line) => line.startsWith('http://'));

/** The serve process's resident set, in bytes (VmRSS is in kB). */
function rss(): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kb) * 1024;
}

const rssAtStart = rss();
const ids: string[] = [];
const executions: string[] = [];
for (let i = 0; i < PLANS; i++) {
  const id = `memory-${i}`;
  const response = await fetch(`${url}/plans`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...SUBMITTER },
    body: JSON.stringify(
      echoChainPlan(id, ['first', 'second', 'third'], {
        approval: { approvers: ['dana'], quorum: 1, allowAutoApprove: false, timeoutSeconds: 86_400 },
      }),
    ),
  });
  if (response.status !== 201) throw new Error(`submit ${response.status}: ${await response.text()}`);
  const { executionArn } = (await response.json()) as { executionArn: string };
  ids.push(executionArn.split(':').pop() as string);
  executions.push(encodeURIComponent(executionArn));
  await serve.line((line) => line.startsWith('gate plan of ') && line.includes(` ${id} `));
}

/** The i-th request: nine of ten read one plan's status, one its events (there is no GET /plans). */
function target(i: number): { route: string; path: string } {
  const id = ids[i % ids.length] as string;
  if (i % 10 === 9)
    return { route: 'GET /executions/{id}/events', path: `/executions/${executions[i % ids.length]}/events` };
  return { route: 'GET /plans/{id}', path: `/plans/${id}` };
}

const errors = new Map<string, number>();
const error = (type: string): void => {
  errors.set(type, (errors.get(type) ?? 0) + 1);
};
let sent = 0;
let answered = 0;
let skipped = 0;
let inFlight = 0;

async function read(i: number): Promise<void> {
  inFlight++;
  const { route, path } = target(i);
  try {
    const response = await fetch(`${url}${path}`, { headers: SUBMITTER });
    await response.arrayBuffer();
    if (response.status !== 200) error(`${route} ${response.status}`);
    else answered++;
  } catch (failure) {
    const cause = (failure as { cause?: { code?: string } }).cause;
    error(`${route} ${cause?.code ?? (failure as Error).message}`);
  } finally {
    inFlight--;
  }
}

const samples: { seconds: number; rssMiB: number }[] = [];
const began = performance.now();
const exited = (): boolean => serve.child.exitCode !== null || serve.child.signalCode !== null;
const sample = (): void => {
  if (!exited()) samples.push({ seconds: (performance.now() - began) / 1000, rssMiB: rss() / MIB });
};
sample();
const sampler = setInterval(sample, SAMPLE_MS);
let lastReport = began;

// Fixed rate: every tick sends the requests its share of the elapsed time is owed.
await new Promise<void>((done) => {
  const ticker = setInterval(() => {
    const elapsed = performance.now() - began;
    if (elapsed >= DURATION_MS || exited()) {
      clearInterval(ticker);
      done();
      return;
    }
    const owed = Math.floor((elapsed / 1000) * RATE) - sent - skipped;
    for (let k = 0; k < owed; k++) {
      if (inFlight >= MAX_IN_FLIGHT) skipped++;
      else void read(sent++);
    }
    if (performance.now() - lastReport > 60_000) {
      lastReport = performance.now();
      const last = samples.at(-1);
      process.stderr.write(
        `${Math.round(elapsed / 1000)} s: ${answered} answered, ${[...errors.values()].reduce((a, b) => a + b, 0)} errors, RSS ${last?.rssMiB.toFixed(0)} MiB\n`,
      );
    }
  }, 10);
});
while (inFlight > 0) await new Promise((r) => setTimeout(r, 20));
const seconds = (performance.now() - began) / 1000;
clearInterval(sampler);
sample();
const alive = !exited();
const exitCode = await serve.stop();
await rm(dir, { recursive: true, force: true });

/** Least-squares slope of RSS over time, in MiB per 10 minutes. */
function slope(points: readonly { seconds: number; rssMiB: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, p) => a + p.seconds, 0) / n;
  const my = points.reduce((a, p) => a + p.rssMiB, 0) / n;
  const sxy = points.reduce((a, p) => a + (p.seconds - mx) * (p.rssMiB - my), 0);
  const sxx = points.reduce((a, p) => a + (p.seconds - mx) ** 2, 0);
  return sxx === 0 ? 0 : (sxy / sxx) * 600;
}
const afterWarmup = samples.filter((s) => s.seconds * 1000 >= WARMUP_MS);
const round = (x: number) => Math.round(x * 10) / 10;
const slopeAfterWarmup = round(slope(afterWarmup));
const output = {
  generatedAt: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  durationSeconds: Math.round(seconds),
  warmupSeconds: WARMUP_MS / 1000,
  plansAtTheirGates: PLANS,
  targetRatePerSecond: RATE,
  requests: { sent, answered, ratePerSecond: round(answered / seconds), skippedAtMaxInFlight: skipped },
  errors: Object.fromEntries(errors),
  serveAliveAtEnd: alive,
  serveExitCode: exitCode,
  rssMiB: {
    beforePlans: round(rssAtStart / MIB),
    atStart: round(samples[0]?.rssMiB ?? 0),
    afterWarmup: round(afterWarmup[0]?.rssMiB ?? 0),
    atEnd: round(samples.at(-1)?.rssMiB ?? 0),
    peak: round(Math.max(...samples.map((s) => s.rssMiB))),
  },
  slopeAfterWarmupMiBPer10Min: slopeAfterWarmup,
  boundMiBPer10Min: BOUND_MIB_PER_10_MIN,
  verdict: alive && slopeAfterWarmup < BOUND_MIB_PER_10_MIN ? 'flat' : alive ? 'growing' : 'serve died',
  samples: samples.map((s) => [Math.round(s.seconds), round(s.rssMiB)]),
};
mkdirSync(path.dirname(OUT), { recursive: true });
writeFileSync(OUT, `${JSON.stringify(output, null, 2)}\n`);
const { samples: _, ...summary } = output;
process.stdout.write(`${JSON.stringify(summary, null, 2)}\nwritten to ${path.relative(REPO, OUT)}\n`);

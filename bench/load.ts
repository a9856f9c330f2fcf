/**
 * `npm run bench:load`: the local platform under a bounded load, in one process on loopback. An
 * in-process LocalPlatform (the same as `plangate serve --identity header`) is given `--plans`
 * plans (default 200), started evenly over `--ramp-seconds` (default 10) so that all of them are
 * under way at once at the peak; each is submitted, waits at its gate, is approved and runs its
 * three echo steps. Recorded in bench/results/load.json: throughput, p50/p99 of submit,
 * decision→first step and per step, errors by type (any answer or outcome the client did not ask
 * for), the 503s at capacity that were retried after their Retry-After (counted apart: asked for
 * by the admission control, not errors), and peak RSS. Not part of `npm test`.
 *
 *   npm run bench:load [-- --plans N] [-- --ramp-seconds S] [-- --max-in-flight N] [-- --max-queued N] [-- --out FILE]
 *   npm run bench:load -- --plans 800 --ramp-seconds 1 --out bench/results/load-800.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULT_ADMISSION } from '../lib/aws-local/api-gateway/server.ts';
import { readEvents } from '../lib/runtime/journal/journal.ts';
import { LocalPlatform } from '../lib/serve/platform.ts';
import { storePaths } from '../lib/serve/store-directory.ts';
import { echoChainPlan } from '../tests/support/echo-plan.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    plans: { type: 'string' },
    'ramp-seconds': { type: 'string' },
    'max-in-flight': { type: 'string' },
    'max-queued': { type: 'string' },
    out: { type: 'string' },
  },
});
const OUT = path.resolve(REPO, values.out ?? 'bench/results/load.json');
const PLANS = Number(values.plans ?? 200);
const RAMP_MS = Number(values['ramp-seconds'] ?? 10) * 1000;
const admission = {
  maxInFlight: Number(values['max-in-flight'] ?? DEFAULT_ADMISSION.maxInFlight),
  maxQueued: Number(values['max-queued'] ?? DEFAULT_ADMISSION.maxQueued),
};
/** A plan not ended by then counts as an error (`timeout`). */
const PLAN_TIMEOUT_MS = 10 * 60_000;
const STEPS = ['first', 'second', 'third'];
const SUBMITTER = { 'x-plangate-user': 'carol' };
const APPROVER = { 'x-plangate-user': 'dana' };

const errors = new Map<string, number>();
const error = (type: string): void => {
  errors.set(type, (errors.get(type) ?? 0) + 1);
};
let busyRetries = 0;
let peakRss = process.memoryUsage().rss;
const rssTimer = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 100);

/** Gates reached, by plan id: told by the platform as it tells an approver. */
const gateWaiters = new Map<string, (approvalId: string) => void>();
const gatesReached = new Map<string, string>();
function gateOf(planId: string): Promise<string> {
  const reached = gatesReached.get(planId);
  if (reached) return Promise.resolve(reached);
  return new Promise((resolve) => gateWaiters.set(planId, resolve));
}

const dir = await mkdtemp(path.join(tmpdir(), 'plangate-bench-load-'));
const rssAtStart = process.memoryUsage().rss;
const platform = await LocalPlatform.start({
  paths: storePaths(path.join(dir, 'store')),
  cwd: dir,
  identity: { mode: 'header' },
  admission,
  onGate: (notice) => {
    if (notice.kind !== 'plan' || notice.stage) return;
    gatesReached.set(notice.plan.id, notice.approvalId);
    gateWaiters.get(notice.plan.id)?.(notice.approvalId);
  },
});
const { dynamo, tables } = platform.stack.journalDeps();

/**
 * A request, retried after its Retry-After while the platform answers 503 at capacity (what the
 * admission control asks of a client); any other answer is the caller's to judge.
 */
async function request(stage: string, url: string, init: RequestInit): Promise<Response> {
  for (;;) {
    const response = await fetch(url, init).catch((failure: unknown) => {
      const cause = (failure as { cause?: { code?: string } }).cause;
      throw new Error(`${stage}: ${cause?.code ?? (failure as Error).message}`);
    });
    if (response.status !== 503) return response;
    const body = (await response.json()) as { message?: string };
    if (!body.message?.startsWith('The server is at capacity')) return response;
    busyRetries++;
    await new Promise((r) => setTimeout(r, Number(response.headers.get('retry-after') ?? 1) * 1000));
  }
}

const submitMs: number[] = [];
const decisionToFirstStepMs: number[] = [];
const stepMs: number[] = [];
let inFlight = 0;
let peakInFlight = 0;
let succeeded = 0;
let ended = 0;

async function onePlan(i: number): Promise<void> {
  const id = `load-${i}`;
  const plan = echoChainPlan(id, STEPS, {
    approval: { approvers: ['dana'], quorum: 1, allowAutoApprove: false, timeoutSeconds: 3600 },
  });
  let t = performance.now();
  const submitted = await request('submit', `${platform.url}/plans`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...SUBMITTER },
    body: JSON.stringify(plan),
  });
  if (submitted.status !== 201) return error(`submit ${submitted.status}`);
  submitMs.push(performance.now() - t);
  const { executionArn } = (await submitted.json()) as { executionArn: string };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const approvalId = await Promise.race([
    gateOf(id),
    new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), PLAN_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  if (!approvalId) return error('gate never reached its approver');
  const page = `${platform.url}/approvals/${encodeURIComponent(approvalId)}`;
  const view = await request('approval page', page, { headers: { accept: 'application/json', ...APPROVER } });
  if (view.status !== 200) return error(`approval page ${view.status}`);
  const { planDigest } = (await view.json()) as { planDigest: string };
  t = performance.now();
  const answered = await request('answer', page, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...APPROVER },
    body: JSON.stringify({ decision: 'APPROVE', digest: planDigest }),
  });
  if (answered.status !== 200) return error(`answer ${answered.status}`);
  const decidedAt = Date.now() - (performance.now() - t) / 2;
  const ended = await platform.stack.engine.awaitExecution(executionArn);
  if (ended.status !== 'SUCCEEDED') return error(`execution ${ended.status}`);
  const events = await readEvents(dynamo, tables.events, executionArn);
  const started = new Map<string, number>();
  for (const event of events) {
    if (!event.task_id) continue;
    const at = Date.parse(event.timestamp);
    if (event.event === 'TASK_STARTED') {
      if (started.size === 0) decisionToFirstStepMs.push(Math.max(0, at - decidedAt));
      started.set(event.task_id, at);
    } else if (event.event === 'TASK_COMPLETED') {
      const from = started.get(event.task_id);
      if (from !== undefined) stepMs.push(at - from);
    }
  }
  succeeded++;
}

const began = performance.now();
await Promise.all(
  Array.from({ length: PLANS }, async (_, i) => {
    await new Promise((r) => setTimeout(r, (RAMP_MS * i) / PLANS));
    inFlight++;
    peakInFlight = Math.max(peakInFlight, inFlight);
    try {
      await onePlan(i);
    } catch (failure) {
      error((failure as Error).message);
    } finally {
      inFlight--;
      ended++;
      if (ended % 50 === 0) process.stderr.write(`${ended}/${PLANS} plans ended\n`);
    }
  }),
);
const seconds = (performance.now() - began) / 1000;
clearInterval(rssTimer);
peakRss = Math.max(peakRss, process.memoryUsage().rss);
await platform.close();
await rm(dir, { recursive: true, force: true });

function percentiles(samples: readonly number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
  return { n: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: Math.round(sorted.at(-1) ?? 0) };
}
const MB = 1024 * 1024;
const output = {
  generatedAt: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
  plans: PLANS,
  stepsPerPlan: STEPS.length,
  rampSeconds: RAMP_MS / 1000,
  admission,
  peakConcurrentPlans: peakInFlight,
  succeeded,
  seconds: Math.round(seconds * 10) / 10,
  plansPerSecond: Math.round((succeeded / seconds) * 100) / 100,
  latency: {
    submit: percentiles(submitMs),
    decisionToFirstStep: percentiles(decisionToFirstStepMs),
    step: percentiles(stepMs),
  },
  errors: Object.fromEntries(errors),
  errorCount: [...errors.values()].reduce((a, b) => a + b, 0),
  busyRetries,
  rssMiB: { atStart: Math.round(rssAtStart / MB), peak: Math.round(peakRss / MB) },
};
mkdirSync(path.dirname(OUT), { recursive: true });
writeFileSync(OUT, `${JSON.stringify(output, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
process.exitCode = output.errorCount === 0 && succeeded === PLANS ? 0 : 1;

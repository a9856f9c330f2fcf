/**
 * Random kill -9 under load: `plangate serve` (the real CLI, bundled as `npm run build` does) is
 * given `plans` plans at once, each submitted, gated, approved by a person through its emailed
 * link and run (two shell steps that log every run of their command with the time it ran), and is
 * killed with SIGKILL at seeded random moments while that goes on, then started again on the same
 * store each time. Clients behave as a person's would: a request the kill cut off is tried again
 * (a vote, a read) once a server answers; a submission that got no answer is not, since nothing
 * was acknowledged. At the end, the invariants of issue 33, judged from outside:
 * - nothing acknowledged is lost: every plan answered 201 ends SUCCEEDED;
 * - no step whose TASK_COMPLETED was journaled runs again (its command's log has no run after it),
 *   and each step is completed exactly once;
 * - every gate ends decided, exactly once (one GATE_APPROVED);
 * - `plangate audit verify --all` finds every chain intact.
 * A command the kill cut off mid-run may run again (it never finished); that is counted apart.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { bundleCli } from '../../scripts/bundle-cli.ts';
import { prng } from '../dag.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const STEPS = ['fetch', 'apply'] as const;
/** A new plan arrives this often. */
const SUBMIT_EVERY_MS = 1_500;
const WHO = { submitter: 'carol', approver: 'dana' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Event = { event: string; timestamp: string; task_id?: string; planDigest?: string; details?: unknown };

export interface KillsUnderLoad {
  readonly plans: number;
  readonly kills: number;
  /** Submissions answered 201: what was acknowledged. */
  readonly acknowledged: number;
  /** Submissions a kill cut off before any answer (not acknowledged, not retried). */
  readonly unanswered: number;
  /** Submissions answered otherwise than 201, with the answer (must be none). */
  readonly refused: readonly string[];
  /** Acknowledged plans that did not end SUCCEEDED within the time allowed. */
  readonly lost: readonly string[];
  /** Steps that ran after their TASK_COMPLETED was journaled (must be none). */
  readonly ranAfterCompleted: readonly string[];
  /** Steps completed other than exactly once (must be none). */
  readonly completedOtherThanOnce: readonly string[];
  /** Gates decided other than exactly once (must be none). */
  readonly decidedOtherThanOnce: readonly string[];
  /** Commands a kill cut off mid-run and that ran again, never completed twice (allowed). */
  readonly commandsRunAgainAfterACutOffRun: number;
  /** Votes and reads a kill cut off that the client sent again. */
  readonly requestsRetried: number;
  readonly auditVerify: { readonly exitCode: number | null; readonly summary: string };
  readonly restartSeconds: { readonly p50: number; readonly max: number };
  readonly held: boolean;
}

interface Serve {
  readonly child: ChildProcess;
  readonly url: Promise<string>;
  readonly exited: Promise<void>;
}

export async function killsUnderLoad(options: {
  readonly seed: number;
  readonly plans?: number;
  readonly kills?: number;
}): Promise<KillsUnderLoad> {
  const plans = options.plans ?? 40;
  const kills = options.kills ?? 10;
  // seeded, so a seed replays the same kill moments
  const next = prng(options.seed);
  const dir = await mkdtemp(path.join(tmpdir(), 'plangate-kills-'));
  const store = path.join(dir, 'store');
  const cwd = path.join(dir, 'work');
  spawnSync('mkdir', ['-p', cwd]);
  const cli = path.join(REPO, `.bench-cli-${randomUUID()}`);
  await bundleCli(cli);
  // Gone however this ends (a bench interrupted, a throw): it is a copy of the whole CLI.
  process.once('exit', () => rmSync(cli, { recursive: true, force: true }));
  const bin = path.join(cli, 'bin/plangate.js');
  /** Each plan's approval link, as any server printed it (links outlive a restart: the key is the store's). */
  const links = new Map<string, string>();
  let current: Serve | undefined;
  const restartMs: number[] = [];

  const start = (): Serve => {
    const child = spawn(process.execPath, [bin, 'serve', '--identity', 'header', '--store', store], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    child.stderr?.resume();
    let resolveUrl: (url: string) => void = () => {};
    const url = new Promise<string>((r) => {
      resolveUrl = r;
    });
    let first = true;
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      // serve's first line is its URL
      if (first) resolveUrl(line);
      first = false;
      const gate = /^gate plan of (\S+) v1 waits: (\S+)$/.exec(line);
      if (gate?.[1] && gate[2]) links.set(gate[1], new URL(gate[2]).pathname);
    });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    return { child, url, exited };
  };
  /** The URL of the server that is up now (waiting out a restart). */
  const up = async (): Promise<string> => {
    for (;;) {
      const serve = current;
      if (serve) {
        const url = await Promise.race([serve.url, serve.exited.then(() => undefined)]);
        if (url) return url;
      }
      await sleep(100);
    }
  };

  let requestsRetried = 0;
  /** A request sent again while a kill cuts it off or the server is busy, until it is answered. */
  const send = async (pathname: string, init: RequestInit = {}): Promise<Response> => {
    for (;;) {
      const url = await up();
      try {
        const response = await fetch(`${url}${pathname}`, init);
        if (response.status !== 503) return response;
        await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
      } catch {
        requestsRetried++;
        await sleep(200);
      }
    }
  };
  const as = (who: string, body?: unknown): RequestInit => ({
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-plangate-user': who },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const eventsOf = async (executionArn: string): Promise<Event[]> => {
    for (;;) {
      const response = await send(
        `/executions/${encodeURIComponent(executionArn)}/events`,
        as(WHO.submitter),
      );
      if (response.ok) return ((await response.json()) as { events: Event[] }).events;
      await sleep(200);
    }
  };

  current = start();
  await current.url;
  let acknowledged = 0;
  let unanswered = 0;
  /** Submissions answered otherwise than 201 (must be none: these plans are valid). */
  const refused: string[] = [];
  const deadline = Date.now() + 8 * 60_000;
  const outcomes = new Map<string, { executionArn: string; events: Event[] }>();

  const onePlan = async (i: number): Promise<void> => {
    const id = `kill-${i}`;
    const plan = {
      id,
      version: 1,
      objective: 'Log every run of two commands, each proven by its log',
      sizePolicy: { minSteps: 1, maxSteps: 10 },
      approval: { approvers: [WHO.approver], quorum: 1, allowAutoApprove: false, timeoutSeconds: 3600 },
      steps: STEPS.map((step, n) => ({
        id: step,
        description: `Log a run of ${step}`,
        dependsOn: n === 0 ? [] : [STEPS[n - 1]],
        tool: 'shell',
        args: { command: `date +%s%3N >> ran-${id}-${step}.log; echo logged` },
        contract: { kind: 'command', command: `test -s ran-${id}-${step}.log` },
      })),
    };
    // Submissions arrive one after another through the run, so the kills meet every stage.
    await sleep(i * SUBMIT_EVERY_MS);
    // One try: a submission a kill cut off was never acknowledged.
    const url = await up();
    let executionArn: string;
    try {
      const submitted = await fetch(`${url}/plans`, as(WHO.submitter, plan));
      if (submitted.status !== 201) {
        refused.push(`${submitted.status} ${await submitted.text()}`);
        return;
      }
      executionArn = ((await submitted.json()) as { executionArn: string }).executionArn;
      acknowledged++;
    } catch {
      unanswered++;
      return;
    }
    const digest = (await eventsOf(executionArn))[0]?.planDigest;
    // The person answers once the link reaches them, again if the kill cut the answer off.
    for (;;) {
      if (Date.now() > deadline) break;
      const link = links.get(id);
      if (!link) {
        await sleep(250);
        continue;
      }
      const answer = await send(link, as(WHO.approver, { digest, decision: 'APPROVE' }));
      if (answer.ok || answer.status === 409) break;
      await sleep(250);
    }
    for (;;) {
      const events = await eventsOf(executionArn);
      if (events.some((e) => e.event === 'EXECUTION_COMPLETE') || Date.now() > deadline) {
        outcomes.set(id, { executionArn, events });
        return;
      }
      await sleep(500);
    }
  };

  const killer = (async () => {
    for (let k = 0; k < kills; k++) {
      await sleep(3_000 + next() * 6_000);
      const serve = current;
      if (!serve) continue;
      await serve.url;
      serve.child.kill('SIGKILL');
      await serve.exited;
      const t = performance.now();
      current = start();
      await current.url;
      restartMs.push(performance.now() - t);
    }
  })();
  await Promise.all([...Array.from({ length: plans }, (_, i) => onePlan(i)), killer]);

  const lost: string[] = [];
  const ranAfterCompleted: string[] = [];
  const completedOtherThanOnce: string[] = [];
  const decidedOtherThanOnce: string[] = [];
  let commandsRunAgain = 0;
  for (const [id, { events }] of outcomes) {
    const complete = events.find((e) => e.event === 'EXECUTION_COMPLETE');
    if ((complete?.details as { succeeded?: boolean } | undefined)?.succeeded !== true) {
      lost.push(id);
      // KILLS_LOG=<file>: each lost plan's journal, to read why
      if (process.env.KILLS_LOG) appendFileSync(process.env.KILLS_LOG, `${JSON.stringify({ id, events })}\n`);
    }
    if (events.filter((e) => e.event === 'GATE_APPROVED').length !== 1) decidedOtherThanOnce.push(id);
    for (const step of STEPS) {
      const completed = events.filter((e) => e.event === 'TASK_COMPLETED' && e.task_id === step);
      if (completed.length !== 1) completedOtherThanOnce.push(`${id}/${step}`);
      const logFile = path.join(cwd, `ran-${id}-${step}.log`);
      const runs = existsSync(logFile)
        ? readFileSync(logFile, 'utf8').trim().split('\n').filter(Boolean).map(Number)
        : [];
      const completedAt = completed[0] ? Date.parse(completed[0].timestamp) : Number.POSITIVE_INFINITY;
      if (runs.some((ranAt) => ranAt > completedAt)) ranAfterCompleted.push(`${id}/${step}`);
      commandsRunAgain += Math.max(0, runs.length - 1);
    }
  }
  current?.child.kill('SIGTERM');
  await current?.exited;
  const verify = spawnSync(process.execPath, [bin, 'audit', 'verify', '--all', '--store', store], {
    cwd,
    encoding: 'utf8',
  });
  rmSync(cli, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
  const sorted = [...restartMs].sort((a, b) => a - b);
  const seconds = (ms: number | undefined) => Math.round((ms ?? 0) / 100) / 10;
  const result = {
    plans,
    kills: restartMs.length,
    acknowledged,
    unanswered,
    refused: [...new Set(refused)],
    lost: [...new Set(lost)],
    ranAfterCompleted,
    completedOtherThanOnce,
    decidedOtherThanOnce,
    commandsRunAgainAfterACutOffRun: commandsRunAgain,
    requestsRetried,
    auditVerify: {
      exitCode: verify.status,
      summary: (verify.stdout || verify.stderr).trim().split('\n').at(-1) ?? '',
    },
    restartSeconds: { p50: seconds(sorted[Math.floor(sorted.length / 2)]), max: seconds(sorted.at(-1)) },
  };
  return {
    ...result,
    held:
      result.lost.length === 0 &&
      ranAfterCompleted.length === 0 &&
      completedOtherThanOnce.length === 0 &&
      decidedOtherThanOnce.length === 0 &&
      verify.status === 0 &&
      refused.length === 0 &&
      acknowledged > 0,
  };
}

// `tsx bench/reliability/kills-under-load.ts [seed]`: this section alone.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const seed = Number(process.argv[2] ?? Date.now() % 1_000_000);
  process.stdout.write(`${JSON.stringify({ seed, ...(await killsUnderLoad({ seed })) }, null, 2)}\n`);
}

/**
 * kill -9 at random moments (seeded; the seed is printed, PLANGATE_KILL_SEED replays it,
 * PLANGATE_KILL_POINTS sets how many kills): a child process runs the engine on a durable store
 * with the crash workloads, the test kills it, starts it again (a new batch of executions each
 * life), and finally lets everything finish. Then every execution must have succeeded with its
 * expected output and a history that is the reference history (the same workload run without a
 * kill) plus, for each attempt a kill cut short, that attempt recorded as failed and retried:
 * nothing lost, nothing duplicated, and every task call the child made is in the history.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { HistoryEvent } from '@aws-sdk/client-sfn';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prng } from '../../../bench/dag.ts';
import { INTERRUPTED } from '../../../lib/engine/core/task-state.ts';
import { createEngine, type Engine } from '../../../lib/engine/engine.ts';
import type { TaskInvocation } from '../../../lib/engine/types.ts';
import { CRASH_WORKLOADS, type CrashWorkload, callKey, workResult } from './crash-workloads.ts';

// 30 kills keep the suite quick; every run draws a new seed, and PLANGATE_KILL_POINTS hunts longer.
const KILLS = Number(process.env.PLANGATE_KILL_POINTS ?? 30);
const SEED = Number(process.env.PLANGATE_KILL_SEED ?? Math.floor(Math.random() * 2 ** 31));

let dir: string;
let child: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-crash-'));
  // one bundle: the child starts in tens of milliseconds instead of compiling TypeScript each life
  child = path.join(dir, 'crash-child.mjs');
  await build({
    entryPoints: [path.join(import.meta.dirname, 'crash-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: child,
    logLevel: 'error',
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Life {
  readonly process: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  stderr: string;
}

function startLife(store: string, work: string, batch: string): Life {
  const proc = spawn(process.execPath, [child, store, work, batch], { stdio: ['ignore', 'pipe', 'pipe'] });
  const life: Life = {
    process: proc,
    stderr: '',
    exited: new Promise((resolve) => proc.on('exit', (code) => resolve(code))),
    ready: new Promise((resolve) => {
      let out = '';
      proc.stdout?.on('data', (d) => {
        out += d;
        if (out.includes('READY')) resolve();
      });
    }),
  };
  proc.stderr?.on('data', (d) => {
    life.stderr += d;
  });
  return life;
}

async function allHistory(engine: Engine, executionArn: string): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let nextToken: string | undefined;
  do {
    const page = await engine.getExecutionHistory({
      executionArn,
      maxResults: 1000,
      ...(nextToken ? { nextToken } : {}),
    });
    events.push(...(page.events ?? []));
    nextToken = page.nextToken;
  } while (nextToken);
  return events;
}

/** The details object of an event, whatever its type. */
function detailsOf(e: HistoryEvent): Record<string, unknown> {
  for (const [k, v] of Object.entries(e)) if (k.endsWith('EventDetails')) return v as Record<string, unknown>;
  return {};
}

const isScheduled = (t: string) => t === 'LambdaFunctionScheduled' || t === 'TaskScheduled';
const isOutcome = (t: string) => /^(LambdaFunction|Task)(Succeeded|Failed|TimedOut)$/.test(t);

/** The state (name) each event belongs to: the nearest `*StateEntered` up its previousEventId chain. */
function stateOf(events: HistoryEvent[]): Map<number, string> {
  const byId = new Map(events.map((e) => [Number(e.id), e]));
  const out = new Map<number, string>();
  for (const e of events) {
    let at: HistoryEvent | undefined = e;
    while (at && !String(at.type).endsWith('StateEntered')) at = byId.get(Number(at.previousEventId));
    if (at) out.set(Number(e.id), String(detailsOf(at).name));
  }
  return out;
}

/** The call identity of a Scheduled event (state name and the parameters it shows). */
function scheduledKey(e: HistoryEvent, state: string): string {
  const d = detailsOf(e);
  const parameters = JSON.parse(String(d.input ?? d.parameters));
  return callKey(state, parameters);
}

/** The history without the attempts a kill cut short (Scheduled ... Failed with the interruption cause). */
function withoutInterrupted(events: HistoryEvent[]): { kept: HistoryEvent[]; interrupted: number } {
  const byId = new Map(events.map((e) => [Number(e.id), e]));
  const dropped = new Set<number>();
  let interrupted = 0;
  for (const e of events) {
    if (!isOutcome(String(e.type)) || detailsOf(e).cause !== INTERRUPTED.cause) continue;
    interrupted++;
    let at: HistoryEvent | undefined = e;
    for (;;) {
      if (!at) throw new Error(`interrupted attempt #${e.id} has no Scheduled event`);
      dropped.add(Number(at.id));
      if (isScheduled(String(at.type))) break;
      at = byId.get(Number(at.previousEventId));
    }
  }
  return { kept: events.filter((e) => !dropped.has(Number(e.id))), interrupted };
}

/** The history of each workload run once without a kill, on an in-memory engine. */
async function referenceHistories(): Promise<Map<string, { types: string[]; output: unknown }>> {
  const engine = createEngine({
    storeDir: undefined,
    timeScale: 0,
    invokeResource: async (invocation: TaskInvocation) => {
      if (!invocation.taskToken) return workResult(invocation.parameters);
      const output = JSON.stringify(workResult((invocation.parameters as { Payload: unknown }).Payload));
      setImmediate(() => engine.sendTaskSuccess({ taskToken: String(invocation.taskToken), output }));
      return { StatusCode: 200 };
    },
  });
  const out = new Map<string, { types: string[]; output: unknown }>();
  for (const w of CRASH_WORKLOADS) {
    const { stateMachineArn } = await engine.createStateMachine({
      name: w.name,
      definition: JSON.stringify(w.definition),
      roleArn: 'arn:aws:iam::123456789012:role/crash',
    });
    const { executionArn } = await engine.startExecution({
      stateMachineArn,
      input: JSON.stringify(w.input),
    });
    const done = await engine.awaitExecution(String(executionArn));
    expect(done.status).toBe('SUCCEEDED');
    const events = await allHistory(engine, String(executionArn));
    out.set(w.name, { types: events.map((e) => String(e.type)), output: JSON.parse(String(done.output)) });
  }
  await engine.close();
  return out;
}

function sortedTypes(events: readonly HistoryEvent[] | readonly string[]): string[] {
  return events.map((e) => (typeof e === 'string' ? e : String(e.type))).sort();
}

describe('kill -9 at random moments', () => {
  it(`loses and duplicates nothing across ${KILLS} kills`, { timeout: 240_000 }, async () => {
    process.stdout.write(`kill -9 test: seed ${SEED} (replay with PLANGATE_KILL_SEED=${SEED})\n`);
    const random = prng(SEED); // seeded, so a failing run can be replayed by its seed
    const store = path.join(dir, 'store');
    const work = path.join(dir, 'work');
    fs.mkdirSync(work, { recursive: true });
    let kills = 0;
    let killedBeforeReady = 0;
    let lives = 0;
    let readyMs = 150;
    while (kills < KILLS) {
      const started = Date.now();
      const life = startLife(store, work, `b${lives++}`);
      // one kill in five lands while the engine starts (recovery, resuming), the rest while it runs
      const early = random() < 0.2;
      const wait = early ? random() * readyMs : random() * 60;
      if (!early) await Promise.race([life.ready, life.exited]);
      else killedBeforeReady++;
      await new Promise((r) => setTimeout(r, wait));
      if (life.process.exitCode === null) {
        life.process.kill('SIGKILL');
        kills++;
      }
      const code = await life.exited;
      if (!early) readyMs = Math.max(readyMs * 0.8 + (Date.now() - started - wait) * 0.2, 20);
      if (code !== null && code !== 0) throw new Error(`life ${lives} failed (${code}): ${life.stderr}`);
    }
    const last = startLife(store, work, 'finish');
    expect(await last.exited, last.stderr).toBe(0);

    const reference = await referenceHistories();
    const calls = fs.readFileSync(path.join(work, 'calls.log'), 'utf8').trim().split('\n');
    const tokens = fs
      .readFileSync(path.join(work, 'tokens.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split('\t')[0])
      .filter((token): token is string => token !== undefined && token !== '');
    const engine = createEngine({
      storeDir: store,
      timeScale: 0,
      invokeResource: async () => {
        throw new Error('nothing may run: every execution has finished');
      },
    });
    let executions = 0;
    let interruptedAttempts = 0;
    let callbacksSucceeded = 0;
    try {
      for (const w of CRASH_WORKLOADS) {
        const machineArn = `arn:aws:states:us-east-1:123456789012:stateMachine:${w.name}`;
        const listed = await engine.listExecutions({ stateMachineArn: machineArn, maxResults: 1000 });
        // every life started one execution of each workload, even those killed while starting
        // (a start the kill came before never happened: no execution, no history)
        expect(listed.executions?.length ?? 0).toBeGreaterThan(0);
        for (const summary of listed.executions ?? []) {
          executions++;
          interruptedAttempts += await checkExecution(engine, w, String(summary.executionArn));
        }
      }
    } finally {
      await engine.close();
    }

    async function checkExecution(e: Engine, w: CrashWorkload, executionArn: string): Promise<number> {
      const described = await e.describeExecution({ executionArn });
      const where = `${executionArn} (seed ${SEED})`;
      expect(described.status, where).toBe('SUCCEEDED');
      const ref = reference.get(w.name);
      expect(JSON.parse(String(described.output)), where).toEqual(ref?.output);
      const events = await allHistory(e, executionArn);
      // ids 1..n, each event after the one it follows
      expect(
        events.map((ev) => ev.id),
        where,
      ).toEqual(events.map((_, i) => i + 1));
      for (const ev of events) expect(Number(ev.previousEventId), where).toBeLessThan(Number(ev.id));
      // the reference history plus the interrupted attempts: nothing lost, nothing twice
      const { kept, interrupted } = withoutInterrupted(events);
      if (w.sequential)
        expect(
          kept.map((ev) => ev.type),
          where,
        ).toEqual(ref?.types);
      else expect(sortedTypes(kept), where).toEqual(sortedTypes(ref?.types ?? []));
      // every call the child made is in the history as a scheduled attempt, and each attempt
      // that succeeded was a call the child made
      const states = stateOf(events);
      const scheduled = new Map<string, number>();
      const succeeded = new Map<string, number>();
      let lastKey = '';
      for (const ev of events) {
        const type = String(ev.type);
        if (isScheduled(type)) {
          lastKey = scheduledKey(ev, String(states.get(Number(ev.id))));
          scheduled.set(lastKey, (scheduled.get(lastKey) ?? 0) + 1);
        }
        if (type === 'LambdaFunctionSucceeded' || type === 'TaskSucceeded') {
          // the attempt this outcome ends: the Scheduled event up its chain
          const byId = new Map(events.map((x) => [Number(x.id), x]));
          let at: HistoryEvent | undefined = ev;
          while (at && !isScheduled(String(at.type))) at = byId.get(Number(at.previousEventId));
          const key = at ? scheduledKey(at, String(states.get(Number(at.id)))) : lastKey;
          succeeded.set(key, (succeeded.get(key) ?? 0) + 1);
          if (at && String(detailsOf(at).resource).endsWith('.waitForTaskToken')) callbacksSucceeded++;
        }
      }
      const name = executionArn.slice(executionArn.lastIndexOf(':') + 1);
      const made = new Map<string, number>();
      for (const line of calls) {
        const [execution, key] = line.split('\t');
        if (execution === name && key) made.set(key, (made.get(key) ?? 0) + 1);
      }
      for (const [key, count] of made)
        expect(count, `${where}: calls of ${key}`).toBeLessThanOrEqual(scheduled.get(key) ?? 0);
      for (const [key, count] of succeeded) {
        expect(count, `${where}: ${key} succeeded once`).toBe(1);
        expect(made.get(key) ?? 0, `${where}: ${key} was called`).toBeGreaterThanOrEqual(1);
      }
      return interrupted;
    }

    // task tokens never reach the store; every callback that succeeded was answered with a token
    // the child logged first, so there are at least that many to look for (never vacuous)
    const stored = fs
      .readdirSync(store, { recursive: true })
      .map((f) => path.join(store, String(f)))
      .filter((f) => fs.statSync(f).isFile())
      .map((f) => fs.readFileSync(f, 'latin1'))
      .join('');
    expect(callbacksSucceeded).toBeGreaterThan(0);
    expect(tokens.length).toBeGreaterThanOrEqual(callbacksSucceeded);
    for (const token of tokens) expect(stored.includes(token)).toBe(false);
    process.stdout.write(
      `kill -9 test: ${kills} kills (${killedBeforeReady} while starting), ${lives + 1} lives, ${executions} executions checked, ${interruptedAttempts} interrupted attempts retried, ${calls.length} task calls\n`,
    );
    expect(executions).toBeGreaterThanOrEqual(CRASH_WORKLOADS.length);
  });
});

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Durability, type Engine } from '../../../lib/engine/engine.ts';
import { peekStoreHistories } from '../../../lib/engine/persistence/store.ts';
import type { TaskInvocation } from '../../../lib/engine/types.ts';

const ROLE = 'arn:aws:iam::123456789012:role/test';
const dirs: string[] = [];
const engines: Engine[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function storeDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-restart-'));
  dirs.push(dir);
  return dir;
}

function engineOn(
  dir: string,
  invoke: (i: TaskInvocation) => Promise<unknown>,
  durability?: Durability,
  syncWindowMs?: number,
) {
  const engine = createEngine({
    storeDir: dir,
    timeScale: 0,
    invokeResource: invoke,
    ...(durability ? { durability } : {}),
    ...(syncWindowMs === undefined ? {} : { syncWindowMs }),
  });
  engines.push(engine);
  return engine;
}

function passChain(length: number): string {
  const States: Record<string, unknown> = {};
  for (let i = 0; i < length; i++)
    States[`P${i}`] = {
      Type: 'Pass',
      Result: { i, text: 'x'.repeat(40) },
      ResultPath: `$.p${i % 5}`,
      ...(i === length - 1 ? { End: true } : { Next: `P${i + 1}` }),
    };
  return JSON.stringify({ StartAt: 'P0', States });
}

function bytesUnder(dir: string): number {
  return fs
    .readdirSync(dir, { recursive: true })
    .map((f) => path.join(dir, String(f)))
    .filter((f) => fs.statSync(f).isFile())
    .reduce((sum, f) => sum + fs.statSync(f).size, 0);
}

describe('restarting a durable engine', () => {
  it('reads only summaries of finished executions and the histories of running ones, however long the histories', async () => {
    const dir = storeDir();
    let release: (() => void) | undefined;
    const first = engineOn(dir, async () => {
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { ok: true };
    });
    const { stateMachineArn } = await first.createStateMachine({
      name: 'Long',
      definition: passChain(150),
      roleArn: ROLE,
    });
    const finished: string[] = [];
    for (let i = 0; i < 200; i++) {
      const { executionArn } = await first.startExecution({ stateMachineArn, input: `{"n":${i}}` });
      expect((await first.awaitExecution(String(executionArn))).status).toBe('SUCCEEDED');
      finished.push(String(executionArn));
    }
    const waiting = await first.createStateMachine({
      name: 'Waits',
      definition: JSON.stringify({
        StartAt: 'Call',
        States: {
          Call: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:123456789012:function:f', End: true },
        },
      }),
      roleArn: ROLE,
    });
    const running = await first.startExecution({ stateMachineArn: waiting.stateMachineArn, input: '{}' });
    const historyBefore = await first.getExecutionHistory({ executionArn: finished[7], maxResults: 1000 });
    await first.close();
    release?.();
    const historyBytes = bytesUnder(path.join(dir, 'executions'));

    const second = engineOn(dir, async () => ({ ok: 'again' }));
    const read = second.storeStats().bytesRead;
    // 200 finished histories of ~150 states are not read: only their summaries and the running one
    expect(historyBytes).toBeGreaterThan(1_000_000);
    expect(read).toBeLessThan(200 * 400 + 10_000);
    expect(read).toBeLessThan(historyBytes / 20);
    // what the summaries stand for is all there, read when asked for
    const described = await second.describeExecution({ executionArn: finished[7] });
    expect(described.status).toBe('SUCCEEDED');
    expect(JSON.parse(String(described.input))).toEqual({ n: 7 });
    expect(JSON.parse(String(described.output)).p4).toEqual({ i: 149, text: 'x'.repeat(40) });
    expect(await second.getExecutionHistory({ executionArn: finished[7], maxResults: 1000 })).toEqual(
      historyBefore,
    );
    const listed = await second.listExecutions({ stateMachineArn, maxResults: 1000 });
    expect(listed.executions?.map((e) => e.status)).toEqual(Array(200).fill('SUCCEEDED'));
    // the running one resumed: its call was under way at the close, so it failed (no Retry)
    const resumed = await second.awaitExecution(String(running.executionArn));
    expect(resumed.status).toBe('FAILED');
    expect(resumed.error).toBe('States.TaskFailed');
  });
});

describe('durability modes', () => {
  async function syncsFor(durability: Durability): Promise<number> {
    const dir = storeDir();
    // a long group window: whatever group syncs happen are not per call
    const engine = engineOn(dir, async () => ({ ok: true }), durability, 10_000);
    const States: Record<string, unknown> = {};
    for (let i = 0; i < 20; i++)
      States[`T${i}`] = {
        Type: 'Task',
        Resource: 'arn:aws:lambda:us-east-1:123456789012:function:f',
        ...(i === 19 ? { End: true } : { Next: `T${i + 1}` }),
      };
    const { stateMachineArn } = await engine.createStateMachine({
      name: 'Chain',
      definition: JSON.stringify({ StartAt: 'T0', States }),
      roleArn: ROLE,
    });
    const { executionArn } = await engine.startExecution({ stateMachineArn, input: '{}' });
    expect((await engine.awaitExecution(String(executionArn))).status).toBe('SUCCEEDED');
    return engine.storeStats().walSyncs;
  }

  it('strict syncs the log before every task call; group syncs in groups', async () => {
    // strict: one fdatasync before each of the 20 calls (and for the API answers)
    expect(await syncsFor('strict')).toBeGreaterThanOrEqual(20);
    // group: the calls wait for a write only; the sync comes with the window (here 10 s)
    expect(await syncsFor('group')).toBe(0);
  });

  it('refuses an unknown durability', () => {
    expect(() =>
      createEngine({
        storeDir: storeDir(),
        invokeResource: async () => ({}),
        durability: 'sometimes' as Durability,
      }),
    ).toThrow(/durability must be 'group' or 'strict'/);
  });
});

describe('answers wait for what they report', () => {
  /** Types of the stored events of the one history in the store, as a restart would read them. */
  function storedTypes(dir: string): string[] {
    return [...peekStoreHistories(dir).values()].flat().map((e) => e.type);
  }

  it('SendTaskSuccess answers once the outcome it acknowledges is written; DescribeExecution once the status it reports is', async () => {
    const dir = storeDir();
    let token = '';
    // a long window: nothing reaches the log unless an answer or a call writes it
    const engine = createEngine({
      storeDir: dir,
      timeScale: 0,
      syncWindowMs: 60_000,
      invokeResource: async (i: TaskInvocation) => {
        token = String(i.taskToken);
        return {};
      },
    });
    engines.push(engine);
    const { stateMachineArn } = await engine.createStateMachine({
      name: 'Gate',
      definition: JSON.stringify({
        StartAt: 'Wait',
        States: {
          Wait: {
            Type: 'Task',
            Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
            Parameters: { FunctionName: 'f', Payload: { 'token.$': '$$.Task.Token' } },
            Next: 'After',
          },
          After: { Type: 'Pass', End: true },
        },
      }),
      roleArn: ROLE,
    });
    const { executionArn } = await engine.startExecution({ stateMachineArn, input: '{}' });
    expect(storedTypes(dir)[0]).toBe('ExecutionStarted');
    while (!token) await new Promise((r) => setTimeout(r, 1));
    // the dispatch was a task call: its Scheduled and Started were written before it
    expect(storedTypes(dir)).toContain('TaskStarted');
    await engine.sendTaskSuccess({ taskToken: token, output: '{"ok":true}' });
    expect(storedTypes(dir)).toContain('TaskSucceeded');
    const described = await engine.describeExecution({ executionArn });
    expect(described.status).toBe('SUCCEEDED');
    expect(storedTypes(dir).at(-1)).toBe('ExecutionSucceeded');
  });

  it('SendTaskSuccess writes the outcome itself unless the next task call already took it to the log', async () => {
    const dir = storeDir();
    const tokens: string[] = [];
    const engine = createEngine({
      storeDir: dir,
      timeScale: 1,
      syncWindowMs: 60_000,
      invokeResource: async (i: TaskInvocation) => {
        tokens.push(String(i.taskToken));
        return {};
      },
    });
    engines.push(engine);
    const callback = (next: string) => ({
      Type: 'Task',
      Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
      Parameters: { FunctionName: 'f', Payload: { 'token.$': '$$.Task.Token' } },
      Next: next,
    });
    const { stateMachineArn } = await engine.createStateMachine({
      name: 'Chain',
      definition: JSON.stringify({
        StartAt: 'First',
        States: {
          // the second task call writes the first task's outcome before SendTaskSuccess answers
          First: callback('Second'),
          // nothing but pure transitions follow: only SendTaskSuccess's own write stores the outcome
          Second: callback('Later'),
          Later: { Type: 'Wait', Seconds: 3600, End: true },
        },
      }),
      roleArn: ROLE,
    });
    const { executionArn } = await engine.startExecution({ stateMachineArn, input: '{}' });
    const succeeded = () => storedTypes(dir).filter((t) => t === 'TaskSucceeded').length;
    while (tokens.length < 1) await new Promise((r) => setTimeout(r, 1));
    await engine.sendTaskSuccess({ taskToken: tokens[0] as string, output: '{}' });
    expect(succeeded()).toBe(1);
    while (tokens.length < 2) await new Promise((r) => setTimeout(r, 1));
    await engine.sendTaskSuccess({ taskToken: tokens[1] as string, output: '{}' });
    expect(succeeded()).toBe(2);
    expect(storedTypes(dir).at(-1)).toBe('WaitStateEntered');
    await engine.stopExecution({ executionArn });
  });
});

/**
 * The drain before a clean stop (Engine.drain, then close): the call under way ends and its
 * outcome is recorded, the next task does not begin, and the restarted engine goes on from there:
 * no attempt is found interrupted, none is made twice.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../lib/engine/engine.ts';
import type { TaskInvocation } from '../../../lib/engine/types.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const DEFINITION = JSON.stringify({
  StartAt: 'First',
  States: {
    First: { Type: 'Task', Resource: 'arn:aws:states:::aws-sdk:local:first', Next: 'Second' },
    Second: { Type: 'Task', Resource: 'arn:aws:states:::aws-sdk:local:second', End: true },
  },
});

function engineOn(storeDir: string, invoke: (invocation: TaskInvocation) => Promise<unknown>): Engine {
  return createEngine({ storeDir, invokeResource: invoke });
}

async function until(check: () => boolean): Promise<void> {
  const end = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

it('lets the call under way end and record its outcome, begins no other, and resumes from there', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-drain-'));
  dirs.push(dir);
  const store = path.join(dir, 'store');
  const calls: string[] = [];
  let release: () => void = () => {};
  const first = engineOn(store, async (invocation) => {
    calls.push(invocation.stateName);
    if (invocation.stateName === 'First') await new Promise<void>((resolve) => (release = resolve));
    return { from: invocation.stateName };
  });
  const { stateMachineArn } = await first.createStateMachine({
    name: 'drained',
    definition: DEFINITION,
    roleArn: 'arn:aws:iam::123456789012:role/r',
  });
  const { executionArn } = await first.startExecution({ stateMachineArn, input: '{}' });
  await until(() => calls.length === 1);
  const draining = first.drain({ timeoutMs: 5_000 });
  release();
  expect(await draining).toBe(0);
  await first.close();
  expect(calls).toEqual(['First']);

  const again: string[] = [];
  const second = engineOn(store, async (invocation) => {
    again.push(invocation.stateName);
    return { from: invocation.stateName };
  });
  try {
    const ended = await second.awaitExecution(executionArn as string);
    expect(ended.status).toBe('SUCCEEDED');
    expect(again).toEqual(['Second']);
    const { events } = await second.getExecutionHistory({ executionArn: executionArn as string });
    expect(events?.filter((e) => e.type === 'TaskFailed')).toEqual([]);
  } finally {
    await second.close();
  }
});

it('gives up after its timeout, answering how many calls are still under way', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-drain-'));
  dirs.push(dir);
  let called = false;
  const engine = engineOn(path.join(dir, 'store'), () => {
    called = true;
    return new Promise(() => {});
  });
  try {
    const { stateMachineArn } = await engine.createStateMachine({
      name: 'hung',
      definition: DEFINITION,
      roleArn: 'arn:aws:iam::123456789012:role/r',
    });
    await engine.startExecution({ stateMachineArn, input: '{}' });
    await until(() => called);
    const started = Date.now();
    expect(await engine.drain({ timeoutMs: 200 })).toBe(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  } finally {
    await engine.close();
  }
});

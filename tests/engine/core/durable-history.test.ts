import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../lib/engine/engine.ts';
import { StatesError, type TaskInvocation } from '../../../lib/engine/types.ts';

const ROLE = 'arn:aws:iam::123456789012:role/test';
const engines: Engine[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function durableEngine(storeDir: string, invokeResource: (i: TaskInvocation) => Promise<unknown>): Engine {
  const e = createEngine({ storeDir, timeScale: 0, invokeResource });
  engines.push(e);
  return e;
}

async function fullHistory(e: Engine, executionArn: string) {
  const events = [];
  let nextToken: string | undefined;
  do {
    const page = await e.getExecutionHistory({
      executionArn,
      maxResults: 3,
      ...(nextToken ? { nextToken } : {}),
    });
    events.push(...(page.events ?? []));
    nextToken = page.nextToken;
  } while (nextToken);
  return events;
}

/** A Map over three items whose Task fails for item 1 until `healthy` is set. */
const definition = {
  StartAt: 'Each',
  States: {
    Each: {
      Type: 'Map',
      ItemsPath: '$.items',
      ItemProcessor: {
        StartAt: 'Work',
        States: {
          Work: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:123456789012:function:work', End: true },
        },
      },
      End: true,
    },
  },
};

describe('histories of finished durable executions', () => {
  it('are the same after a restart (reread from the store) and still redrive', async () => {
    const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-history-'));
    dirs.push(storeDir);
    let healthy = false;
    const calls: unknown[] = [];
    const invoke = async (i: TaskInvocation) => {
      calls.push(i.parameters);
      if (!healthy && (i.parameters as { n: number }).n === 1) throw new StatesError('Flaky', 'not yet');
      return { done: (i.parameters as { n: number }).n };
    };
    const first = durableEngine(storeDir, invoke);
    const { stateMachineArn } = await first.createStateMachine({
      name: 'M',
      definition: JSON.stringify(definition),
      roleArn: ROLE,
    });
    const { executionArn } = await first.startExecution({
      stateMachineArn: String(stateMachineArn),
      input: JSON.stringify({ items: [{ n: 0 }, { n: 1 }, { n: 2 }] }),
    });
    const failed = await first.awaitExecution(String(executionArn));
    expect(failed.status).toBe('FAILED');
    const before = await fullHistory(first, String(executionArn));
    await first.close();

    const second = durableEngine(storeDir, invoke);
    expect(await fullHistory(second, String(executionArn))).toEqual(before);
    expect(await second.describeExecution({ executionArn })).toMatchObject({
      status: 'FAILED',
      error: 'Flaky',
    });

    healthy = true;
    calls.length = 0;
    await second.redriveExecution({ executionArn });
    const redriven = await second.awaitExecution(String(executionArn));
    expect(redriven.status).toBe('SUCCEEDED');
    expect(JSON.parse(String(redriven.output))).toEqual([{ done: 0 }, { done: 1 }, { done: 2 }]);
    // finished iterations are not run again
    expect(calls).toEqual([{ n: 1 }]);
    const after = await fullHistory(second, String(executionArn));
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.map((e) => e.type)).toContain('ExecutionRedriven');
    expect(after.at(-1)?.type).toBe('ExecutionSucceeded');
  });
});

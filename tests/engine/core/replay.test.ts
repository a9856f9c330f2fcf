import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../../lib/engine/engine.ts';
import { NOT_TRUNCATED, type StoredEvent } from '../../../lib/engine/persistence/history.ts';
import { FileEngineStore } from '../../../lib/engine/persistence/store.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const MACHINE_ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:Machine';
const EXECUTION_ARN = 'arn:aws:states:us-east-1:123456789012:execution:Machine:run-1';

/**
 * A store holding one running execution whose history says its first state was entered as a
 * Pass state, while its definition makes that state a Wait: replay cannot match the two.
 */
async function storeWithForeignHistory(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-replay-'));
  dirs.push(dir);
  const store = new FileEngineStore({ dir });
  const definition = JSON.stringify({
    StartAt: 'First',
    States: { First: { Type: 'Wait', Seconds: 1, Next: 'Done' }, Done: { Type: 'Succeed' } },
  });
  const ts = 1_700_000_000_000;
  const history: StoredEvent[] = [
    {
      id: 1,
      prev: 0,
      ts,
      type: 'ExecutionStarted',
      key: '.0',
      details: { input: '{}', inputDetails: NOT_TRUNCATED, roleArn: 'arn:aws:iam::123456789012:role/r' },
      internal: {
        definitionRef: store.putDefinition(definition),
        stateMachineArn: MACHINE_ARN,
        express: false,
      },
    },
    {
      id: 2,
      prev: 1,
      ts: ts + 1,
      type: 'PassStateEntered',
      key: '.1',
      details: { name: 'First', input: '{}', inputDetails: NOT_TRUNCATED },
    },
  ];
  store.openLog('Machine', 'run-1').append(history);
  await store.close();
  return dir;
}

describe('replay', () => {
  it('fails the execution, naming it, the position and both event types, when the history records another event than replay emits', async () => {
    const storeDir = await storeWithForeignHistory();
    const engine = createEngine({
      storeDir,
      timeScale: 0,
      invokeResource: async () => {
        throw new Error('no task runs here');
      },
    });
    try {
      const ended = await engine.awaitExecution(EXECUTION_ARN);
      expect(ended.status).toBe('FAILED');
      expect(ended.error).toBe('States.Runtime');
      expect(ended.cause).toContain(EXECUTION_ARN);
      expect(ended.cause).toContain("event #2 (key '.1')");
      expect(ended.cause).toContain('records PassStateEntered');
      expect(ended.cause).toContain('emits WaitStateEntered');
      // nothing was run past the mismatch: no second event at the same position
      const { events = [] } = await engine.getExecutionHistory({ executionArn: EXECUTION_ARN });
      expect(events.map((e) => e.type)).toEqual(['ExecutionStarted', 'PassStateEntered', 'ExecutionFailed']);
    } finally {
      await engine.close();
    }
  });
});

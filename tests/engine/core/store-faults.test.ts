/**
 * A store whose file system refuses writes (disk full, read-only), injected where the
 * write-ahead log writes: the engine neither crashes nor fails executions; it refuses new work
 * with the cause, waits, and goes on once a write succeeds, with nothing lost or duplicated.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine, StoreUnavailableError } from '../../../lib/engine/engine.ts';
import type { WriteSync } from '../../../lib/engine/persistence/byte-writer.ts';
import { FileEngineStore, peekStoreHistories } from '../../../lib/engine/persistence/store.ts';
import { describeStoreError } from '../../../lib/engine/persistence/store-faults.ts';
import type { TaskInvocation } from '../../../lib/engine/types.ts';

const ROLE = 'arn:aws:iam::123456789012:role/test';
const dirs: string[] = [];
const engines: Engine[] = [];

afterEach(async () => {
  for (const e of engines.splice(0)) await e.close().catch(() => undefined);
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** fs.writeSync, or while `refusing` is set: half of the first write taken, then that error (as a disk that fills up mid-write). */
function refusableWrites(): { writeSync: WriteSync; refuse(code: string | undefined): void } {
  let refusing: string | undefined;
  let tookPart = false;
  return {
    refuse(code) {
      refusing = code;
      tookPart = false;
    },
    writeSync(fd, buffer, offset, length, position) {
      if (refusing === undefined) return fs.writeSync(fd, buffer, offset, length, position);
      if (!tookPart && length > 1) {
        tookPart = true;
        return fs.writeSync(fd, buffer, offset, Math.floor(length / 2), position);
      }
      throw Object.assign(new Error(`${refusing}: refused by the test, write`), { code: refusing });
    },
  };
}

const TWO_TASKS = JSON.stringify({
  StartAt: 'A',
  States: {
    A: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:123456789012:function:a', Next: 'B' },
    B: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:123456789012:function:b', End: true },
  },
});

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.each(['ENOSPC', 'EROFS'])('a store that refuses writes (%s)', (code) => {
  it('pauses the execution at its next task, refuses new starts with the cause, and goes on once writes succeed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-faults-'));
    dirs.push(dir);
    const disk = refusableWrites();
    const calls: string[] = [];
    const invoke = async (i: TaskInvocation) => {
      const name = String(i.resource).split(':').at(-1) ?? '';
      calls.push(name);
      // the disk fills while A runs: A's outcome and B's start cannot be written
      if (name === 'a') disk.refuse(code);
      return { done: name };
    };
    const engine = createEngine({
      storeDir: dir,
      timeScale: 0,
      invokeResource: invoke,
      storeWriteSync: disk.writeSync,
      syncWindowMs: 5,
    });
    engines.push(engine);
    const { stateMachineArn } = await engine.createStateMachine({
      name: 'M',
      definition: TWO_TASKS,
      roleArn: ROLE,
    });
    const { executionArn } = await engine.startExecution({
      stateMachineArn: String(stateMachineArn),
      input: '{}',
    });
    await until(() => engine.storeFault() !== undefined);
    // B waits for its events to be written: it is not called on a store that cannot keep them
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toEqual(['a']);
    expect(engine.storeFault()).toMatchObject({ code, transient: true });
    const refused = engine.startExecution({ stateMachineArn: String(stateMachineArn), input: '{}' });
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(refused).rejects.toThrow(
      code === 'ENOSPC' ? /ENOSPC: no space left.*free space/ : /EROFS: .*remount it read-write/,
    );
    // an answer reports only what is written: while nothing can be, it says why instead
    await expect(engine.describeExecution({ executionArn })).rejects.toBeInstanceOf(StoreUnavailableError);

    disk.refuse(undefined);
    const done = await engine.awaitExecution(String(executionArn));
    // the refused start was never taken
    expect(
      (await engine.listExecutions({ stateMachineArn: String(stateMachineArn) })).executions,
    ).toHaveLength(1);
    expect(done.status).toBe('SUCCEEDED');
    expect(calls).toEqual(['a', 'b']);
    expect(engine.storeFault()).toBeUndefined();
    await engine.close();
    engines.length = 0;

    // the half a refused write took was cut off: the history reads back whole, once each
    const [history] = [...peekStoreHistories(dir).values()];
    const types = (history ?? []).map((e) => e.type);
    expect(types.filter((t) => t === 'LambdaFunctionSucceeded')).toHaveLength(2);
    expect(types.at(-1)).toBe('ExecutionSucceeded');
    expect(new Set((history ?? []).map((e) => e.id)).size).toBe(types.length);
  });
});

describe('a torn last record of the write-ahead log', () => {
  it('is found at start-up, dropped with a note, and what was written before it is intact', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-torn-'));
    dirs.push(dir);
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    const event = (id: number) => ({
      id,
      prev: id - 1,
      ts: id,
      type: 'PassStateEntered',
      key: `.${id}`,
      details: { id },
    });
    log.append([event(1), event(2)]);
    const generation = path.join(dir, 'wal', '0.log');
    const acknowledged = fs.statSync(generation).size;
    log.append([event(3)]);
    // cut the last record in the middle (a disk that filled, a write cut short)
    fs.truncateSync(generation, acknowledged + Math.floor((fs.statSync(generation).size - acknowledged) / 2));

    const restarted = new FileEngineStore({ dir });
    expect(restarted.recoveryNotes).toEqual([
      expect.stringMatching(
        /0\.log ended in a torn record \(\d+ bytes after its last complete line\): dropped; the 1 complete record\(s\) before it are applied/,
      ),
    ]);
    expect(restarted.openLog('m', 'e').readAll()).toEqual([event(1), event(2)]);
    // the next start finds nothing to note
    expect(new FileEngineStore({ dir }).recoveryNotes).toEqual([]);
  });
});

describe('what a start-up refusal says', () => {
  it('names the cause and the fix of a file-system error in one line, and leaves other errors as they are', () => {
    const readOnly = Object.assign(new Error("EROFS: read-only file system, open '/store/LOCK.tmp'"), {
      code: 'EROFS',
    });
    expect(describeStoreError(readOnly)).toBe(
      "EROFS: read-only file system, open '/store/LOCK.tmp' (EROFS: the file system is read-only: remount it read-write)",
    );
    expect(describeStoreError(new Error('two\nlines'))).toBe('two lines');
  });
});

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../lib/engine/core/history.ts';
import { FileStore } from '../../../lib/engine/core/store.ts';
import { createEngine } from '../../../lib/engine/engine.ts';

const dirs: string[] = [];
function storeDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-store-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function event(id: number, extra: Partial<StoredEvent> = {}): StoredEvent {
  return { id, prev: id - 1, ts: 1_700_000_000_000 + id, type: 'PassStateEntered', key: `.${id}`, ...extra };
}

function logFile(dir: string): string {
  const machines = path.join(dir, 'executions');
  const [machine] = fs.readdirSync(machines);
  const [file] = fs.readdirSync(path.join(machines, String(machine)));
  return path.join(machines, String(machine), String(file));
}

describe('FileStore execution logs', () => {
  it('reads back every appended event in order, whatever the batches', () => {
    const events = fc.array(
      fc.record({
        details: fc.dictionary(fc.string(), fc.jsonValue()),
        type: fc.string({ minLength: 1 }),
      }),
      { maxLength: 40 },
    );
    fc.assert(
      fc.property(events, fc.array(fc.nat({ max: 5 }), { maxLength: 40 }), (specs, cuts) => {
        const dir = storeDir();
        const log = new FileStore({ dir }).openLog('m', 'e');
        const all = specs.map((s, i) => event(i + 1, { type: s.type, details: s.details }));
        let at = 0;
        for (const cut of cuts) {
          log.append(all.slice(at, at + cut));
          at = Math.min(all.length, at + cut);
        }
        log.append(all.slice(at));
        log.close();
        expect(new FileStore({ dir }).openLog('m', 'e').readAll()).toEqual(JSON.parse(JSON.stringify(all)));
      }),
      { numRuns: 50 },
    );
  });

  it('writes one line per batch and still reads one-event-per-line files', () => {
    const dir = storeDir();
    const log = new FileStore({ dir }).openLog('m', 'e');
    log.append([event(1), event(2), event(3)]);
    log.append([event(4)]);
    log.close();
    const file = logFile(dir);
    expect(fs.readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(2);
    fs.appendFileSync(file, `${JSON.stringify(event(5))}\n${JSON.stringify(event(6))}\n`);
    expect(log.readAll().map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('cuts a torn last line (a write cut short by a kill) before appending again', () => {
    const dir = storeDir();
    const log = new FileStore({ dir }).openLog('m', 'e');
    log.append([event(1), event(2)]);
    log.close();
    const file = logFile(dir);
    fs.appendFileSync(file, JSON.stringify([event(3), event(4)]).slice(0, 30));
    const reopened = new FileStore({ dir }).openLog('m', 'e');
    expect(reopened.readAll().map((e) => e.id)).toEqual([1, 2]);
    reopened.append([event(3)]);
    reopened.close();
    expect(reopened.readAll().map((e) => e.id)).toEqual([1, 2, 3]);
    expect(fs.readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
  });

  it('cuts a torn first line too', () => {
    const dir = storeDir();
    const log = new FileStore({ dir }).openLog('m', 'e');
    log.append([event(1)]);
    log.close();
    fs.writeFileSync(logFile(dir), '{"id":1,"pr');
    const reopened = new FileStore({ dir }).openLog('m', 'e');
    reopened.append([event(1)]);
    reopened.close();
    expect(reopened.readAll()).toEqual([event(1)]);
  });
});

describe('FileStore definitions', () => {
  it('keeps each definition once, by content, across reopening', () => {
    const dir = storeDir();
    const store = new FileStore({ dir });
    const text = JSON.stringify({ StartAt: 'A', States: { A: { Type: 'Pass', End: true } } });
    const ref = store.putDefinition(text);
    expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(store.putDefinition(text)).toBe(ref);
    expect(store.putDefinition(`${text} `)).not.toBe(ref);
    expect(fs.readdirSync(path.join(dir, 'definitions'))).toHaveLength(2);
    expect(new FileStore({ dir }).getDefinition(ref)).toBe(text);
  });

  it('answers undefined for unknown or malformed references, never reading outside the store', () => {
    const store = new FileStore({ dir: storeDir() });
    expect(store.getDefinition(`sha256:${'0'.repeat(64)}`)).toBeUndefined();
    expect(store.getDefinition('sha256:../../etc/passwd')).toBeUndefined();
    expect(store.getDefinition('')).toBeUndefined();
  });
});

describe('durable executions', () => {
  it('refer to their definition instead of copying it into every history', async () => {
    const dir = storeDir();
    const engine = createEngine({ storeDir: dir, timeScale: 0, invokeResource: async () => ({}) });
    const definition = JSON.stringify({
      StartAt: 'A',
      States: { A: { Type: 'Pass', Comment: 'a-marker-only-the-definition-has', End: true } },
    });
    const { stateMachineArn } = await engine.createStateMachine({
      name: 'M',
      definition,
      roleArn: 'arn:aws:iam::123456789012:role/r',
    });
    for (let i = 0; i < 2; i++) {
      const { executionArn } = await engine.startExecution({ stateMachineArn: String(stateMachineArn) });
      expect((await engine.awaitExecution(String(executionArn))).status).toBe('SUCCEEDED');
    }
    await engine.close();
    const machines = path.join(dir, 'executions');
    const histories = fs
      .readdirSync(machines)
      .flatMap((m) =>
        fs.readdirSync(path.join(machines, m)).map((f) => fs.readFileSync(path.join(machines, m, f), 'utf8')),
      );
    expect(histories).toHaveLength(2);
    for (const h of histories) expect(h).not.toContain('a-marker-only-the-definition-has');
    expect(fs.readdirSync(path.join(dir, 'definitions'))).toHaveLength(1);
  });
});

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../lib/engine/core/history.ts';
import { FileStore } from '../../../lib/engine/core/store.ts';

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

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { NOT_TRUNCATED, type StoredEvent } from '../../../lib/engine/core/history.ts';
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

describe('FileStore history format 2 (compact records, payloads by reference)', () => {
  const names = fc.constantFrom('A', 'Pass 1', 'ünï"code\\', '');
  const payloads = fc.constantFrom('{"n":1}', '{}', '"x"', 'null', '[1,2]', '{"s":"a\\nb"}');
  const scopes = fc.constantFrom('', '/0', '/1/2', '!redrive');
  /** Events as the interpreter writes them: state entered/exited pairs, tasks, and odd ones. */
  const historyEvents = fc.array(
    fc.record({
      kind: fc.constantFrom('entered', 'exited', 'task', 'bare', 'generic', 'oddKey'),
      name: names,
      payload: payloads,
      scope: scopes,
      seqJump: fc.constantFrom(0, 0, 0, 1, -1),
      dt: fc.constantFrom(0, 0, 1, 5, -3, 0.5),
      next: fc.option(names, { nil: undefined }),
      assigned: fc.option(fc.dictionary(fc.string(), fc.jsonValue()), { nil: undefined }),
    }),
    { maxLength: 60 },
  );

  function build(specs: typeof historyEvents extends fc.Arbitrary<infer T> ? T : never): StoredEvent[] {
    const seqs = new Map<string, number>();
    let ts = 1_700_000_000_000;
    return specs.map((s, i) => {
      const id = i + 1;
      const seq = Math.max(0, (seqs.get(s.scope) ?? -1) + 1 + s.seqJump);
      seqs.set(s.scope, seq);
      ts += s.dt;
      const base = {
        id,
        prev: Math.max(0, id - 1 - (i % 3)),
        ts,
        key: s.kind === 'oddKey' ? `x${s.scope}` : `${s.scope}.${seq}`,
      };
      switch (s.kind) {
        case 'entered':
          return {
            ...base,
            type: 'PassStateEntered',
            details: { name: s.name, input: s.payload, inputDetails: NOT_TRUNCATED },
          };
        case 'exited': {
          const internal: Record<string, unknown> = { entered: Math.max(1, id - 1) };
          if (s.next !== undefined) internal.next = s.next;
          if (s.assigned !== undefined) internal.assigned = s.assigned;
          return {
            ...base,
            type: 'TaskStateExited',
            details: { name: s.name, output: s.payload, outputDetails: NOT_TRUNCATED },
            internal,
          };
        }
        case 'task':
          return {
            ...base,
            type: 'LambdaFunctionScheduled',
            details: { resource: s.name, input: s.payload, inputDetails: NOT_TRUNCATED, timeoutInSeconds: 3 },
          };
        case 'bare':
          return { ...base, type: 'LambdaFunctionStarted' };
        default:
          return {
            ...base,
            type: `Custom${s.name}`,
            details: { output: s.payload, outputDetails: { truncated: true }, parameters: 7 },
            internal: { tokenHash: s.name },
          };
      }
    });
  }

  it('reads back exactly the events written, whatever the batches and reopenings', () => {
    fc.assert(
      fc.property(historyEvents, fc.array(fc.nat({ max: 7 }), { maxLength: 20 }), (specs, cuts) => {
        const dir = storeDir();
        const all = build(specs);
        let log = new FileStore({ dir }).openLog('m', 'e');
        let at = 0;
        for (const cut of cuts) {
          log.append(all.slice(at, at + cut));
          at = Math.min(all.length, at + cut);
          if (cut % 3 === 0) {
            log.close();
            log = new FileStore({ dir }).openLog('m', 'e'); // a restart: encoding goes on from the file
          }
        }
        log.append(all.slice(at));
        log.close();
        expect(new FileStore({ dir }).openLog('m', 'e').readAll()).toEqual(JSON.parse(JSON.stringify(all)));
      }),
      { numRuns: 100 },
    );
  });

  it('writes each payload text once per history', () => {
    const dir = storeDir();
    const log = new FileStore({ dir }).openLog('m', 'e');
    const payload = JSON.stringify({ marker: 'only-once', items: [1, 2, 3] });
    const events: StoredEvent[] = [];
    for (let i = 0; i < 10; i++) {
      const id = events.length + 1;
      events.push({
        id,
        prev: id - 1,
        ts: 1,
        type: 'PassStateEntered',
        key: `.${i * 2}`,
        details: { name: 'P', input: payload, inputDetails: NOT_TRUNCATED },
      });
      events.push({
        id: id + 1,
        prev: id,
        ts: 1,
        type: 'PassStateExited',
        key: `.${i * 2 + 1}`,
        details: { name: 'P', output: payload, outputDetails: NOT_TRUNCATED },
        internal: { entered: id, next: 'P' },
      });
    }
    log.append(events.slice(0, 7));
    log.append(events.slice(7));
    log.close();
    expect(fs.readFileSync(logFile(dir), 'utf8').split('only-once')).toHaveLength(2);
    expect(log.readAll()).toEqual(events);
  });

  it('appends format-2 lines to a history of the older format and reads both', () => {
    const dir = storeDir();
    fs.mkdirSync(path.join(dir, 'executions', '_m'), { recursive: true });
    const file = path.join(dir, 'executions', '_m', '_e.jsonl');
    fs.writeFileSync(file, `${JSON.stringify(event(1))}\n${JSON.stringify([event(2), event(3)])}\n`);
    const log = new FileStore({ dir }).openLog('m', 'e');
    log.append([event(4), event(5, { ts: 1_700_000_000_000 })]);
    log.close();
    expect(fs.readFileSync(file, 'utf8').trim().split('\n').at(-1)).toMatch(/^\[2,/);
    expect(new FileStore({ dir }).openLog('m', 'e').readAll()).toEqual([
      event(1),
      event(2),
      event(3),
      event(4),
      event(5, { ts: 1_700_000_000_000 }),
    ]);
  });

  it('cuts a torn format-2 line and goes on encoding from the lines before it', () => {
    const dir = storeDir();
    const log = new FileStore({ dir }).openLog('m', 'e');
    log.append([event(1), event(2)]);
    log.close();
    const file = logFile(dir);
    const whole = fs.readFileSync(file, 'utf8');
    log.append([event(3), event(4)]);
    log.close();
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').slice(0, whole.length + 9));
    expect(
      new FileStore({ dir })
        .openLog('m', 'e')
        .readAll()
        .map((e) => e.id),
    ).toEqual([1, 2]);
    const reopened = new FileStore({ dir }).openLog('m', 'e');
    reopened.append([event(3)]);
    reopened.close();
    expect(reopened.readAll()).toEqual([event(1), event(2), event(3)]);
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

describe('spare history files', () => {
  it('histories opened from spares stay writable after the helper thread has gone', async () => {
    const dir = storeDir();
    const store = new FileStore({ dir });
    const logs = [];
    // the helper thread starts with the fourth history; give it time to make spares, then take them
    for (let i = 0; i < 4; i++) {
      const log = store.openLog('m', `warm${i}`);
      log.append([event(1)]);
      logs.push(log);
    }
    const spareDir = path.join(dir, 'spares');
    for (let waited = 0; fs.readdirSync(spareDir).length < 4 && waited < 200; waited++)
      await new Promise((r) => setTimeout(r, 10));
    expect(fs.readdirSync(spareDir).length).toBe(4);
    for (let i = 0; i < 4; i++) {
      const log = store.openLog('m', `spare${i}`);
      log.append([event(1)]);
      logs.push(log);
    }
    store.close(); // the helper thread exits
    await new Promise((r) => setTimeout(r, 100));
    for (const log of logs) log.append([event(2)]);
    for (const log of logs) log.close();
    const reread = new FileStore({ dir });
    for (const name of [0, 1, 2, 3].flatMap((i) => [`warm${i}`, `spare${i}`])) {
      expect(
        reread
          .openLog('m', name)
          .readAll()
          .map((e) => e.id),
      ).toEqual([1, 2]);
    }
    reread.close();
  });
});

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../../lib/engine/engine.ts';
import { NOT_TRUNCATED, type StoredEvent } from '../../../lib/engine/persistence/history.ts';
import { FileEngineStore } from '../../../lib/engine/persistence/store.ts';

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

function entered(
  id: number,
  prev: number,
  ts: number,
  state: string,
  key: string,
  name: string,
  input: string,
): StoredEvent {
  return {
    id,
    prev,
    ts,
    type: `${state}StateEntered`,
    key,
    details: { name, input, inputDetails: NOT_TRUNCATED },
  };
}

function exited(
  id: number,
  prev: number,
  ts: number,
  state: string,
  key: string,
  name: string,
  output: string,
  internal: Record<string, unknown>,
): StoredEvent {
  return {
    id,
    prev,
    ts,
    type: `${state}StateExited`,
    key,
    details: { name, output, outputDetails: NOT_TRUNCATED },
    internal,
  };
}

/** Iteration `index` of the Map state `C`, keyed by its scope. */
function iterationStarted(id: number, prev: number, ts: number, index: number): StoredEvent {
  return {
    id,
    prev,
    ts,
    type: 'MapIterationStarted',
    key: `/m9r0i${index}.0`,
    details: { name: 'C', index },
  };
}

function logFile(dir: string): string {
  const machines = path.join(dir, 'executions');
  const [machine] = fs.readdirSync(machines);
  const [file] = fs.readdirSync(path.join(machines, String(machine)));
  return path.join(machines, String(machine), String(file));
}

describe('FileEngineStore execution logs', () => {
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
        const log = new FileEngineStore({ dir }).openLog('m', 'e');
        const all = specs.map((s, i) => event(i + 1, { type: s.type, details: s.details }));
        let at = 0;
        for (const cut of cuts) {
          log.append(all.slice(at, at + cut));
          at = Math.min(all.length, at + cut);
        }
        log.append(all.slice(at));
        log.close();
        expect(new FileEngineStore({ dir }).openLog('m', 'e').readAll()).toEqual(
          JSON.parse(JSON.stringify(all)),
        );
      }),
      { numRuns: 50 },
    );
  });

  it('writes one line per batch and still reads one-event-per-line files', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    log.append([event(1), event(2), event(3)]);
    log.append([event(4)]);
    log.close();
    await store.close(); // the checkpoint moves the lines from the write-ahead log to the history file
    const file = logFile(dir);
    expect(fs.readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(2);
    fs.appendFileSync(file, `${JSON.stringify(event(5))}\n${JSON.stringify(event(6))}\n`);
    expect(
      new FileEngineStore({ dir })
        .openLog('m', 'e')
        .readAll()
        .map((e) => e.id),
    ).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('cuts a torn last line (a write cut short by a kill) before appending again', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    log.append([event(1), event(2)]);
    log.close();
    await store.close();
    const file = logFile(dir);
    fs.appendFileSync(file, JSON.stringify([event(3), event(4)]).slice(0, 30));
    const reopened = new FileEngineStore({ dir }).openLog('m', 'e');
    expect(reopened.readAll().map((e) => e.id)).toEqual([1, 2]);
    reopened.append([event(3)]);
    reopened.close();
    expect(reopened.readAll().map((e) => e.id)).toEqual([1, 2, 3]);
    expect(fs.readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
  });

  it('cuts a torn first line too', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    log.append([event(1)]);
    log.close();
    await store.close();
    fs.writeFileSync(logFile(dir), '{"id":1,"pr');
    const reopened = new FileEngineStore({ dir }).openLog('m', 'e');
    reopened.append([event(1)]);
    reopened.close();
    expect(reopened.readAll()).toEqual([event(1)]);
  });
});

describe('FileEngineStore history format 3 (compact records, implied fields, payloads by reference)', () => {
  const names = fc.constantFrom('A', 'Pass 1', 'ünï"code\\', '', 'B9', 'B10');
  const payloads = fc.constantFrom(
    '{"n":1}',
    '{}',
    '"x"',
    'null',
    '[1,2]',
    '{"s":"a\\nb"}',
    '{\n\t"pretty": true\n}', // a raw newline: escaped in the line
    '{\t"tab": "ü€𝄞"}', // a tab and non-ASCII text: raw after the line
    '"\ud800"', // a lone surrogate (UTF-8 cannot keep it): escaped
    '',
  );
  const scopes = fc.constantFrom(
    '',
    '/0',
    '/1/2',
    '!redrive',
    '/m1r0i0',
    '/m1r0i1',
    '/m1r0i2',
    '/b09',
    '/b10',
  );
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
      shape: fc.constantFrom(0, 0, 1, 2, 3),
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
        case 'task': {
          // the same members mostly (written by shape), sometimes fewer, undefined or in another order
          const details: Record<string, unknown> =
            s.shape === 3
              ? { input: s.payload, resource: s.name, inputDetails: NOT_TRUNCATED }
              : { resource: s.name, input: s.payload, inputDetails: NOT_TRUNCATED };
          if (s.shape === 0) details.timeoutInSeconds = 3;
          if (s.shape === 2) details.timeoutInSeconds = undefined;
          return { ...base, type: 'LambdaFunctionScheduled', details };
        }
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
        let log = new FileEngineStore({ dir }).openLog('m', 'e');
        let at = 0;
        for (const cut of cuts) {
          log.append(all.slice(at, at + cut));
          at = Math.min(all.length, at + cut);
          if (cut % 3 === 0) {
            log.close();
            log = new FileEngineStore({ dir }).openLog('m', 'e'); // a restart: encoding goes on from the file
          }
        }
        log.append(all.slice(at));
        log.close();
        expect(new FileEngineStore({ dir }).openLog('m', 'e').readAll()).toEqual(
          JSON.parse(JSON.stringify(all)),
        );
      }),
      { numRuns: 100 },
    );
  });

  it('writes each payload text once per history', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
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
    await store.close();
    expect(fs.readFileSync(logFile(dir), 'utf8').split('only-once')).toHaveLength(2);
    expect(log.readAll()).toEqual(events);
  });

  it('a group window whose next generation cannot be opened fails the next write, not the process', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir, syncWindowMs: 5 });
    const log = store.openLog('m', 'e');
    log.append([event(1)]);
    fs.rmSync(dir, { recursive: true, force: true }); // the window's timer seals: the new generation has no directory
    // Well past the 5 ms window, also on a busy machine whose timers run late.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(() => log.append([event(2)])).toThrow(/ENOENT/);
  });

  it('appends format-3 lines to a history of the oldest format and reads both', async () => {
    const dir = storeDir();
    fs.mkdirSync(path.join(dir, 'executions', '_m'), { recursive: true });
    const file = path.join(dir, 'executions', '_m', '_e.jsonl');
    fs.writeFileSync(file, `${JSON.stringify(event(1))}\n${JSON.stringify([event(2), event(3)])}\n`);
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    log.append([event(4), event(5, { ts: 1_700_000_000_000 })]);
    log.close();
    await store.close();
    expect(fs.readFileSync(file, 'utf8').trim().split('\n').at(-1)).toMatch(/^\[3,/);
    expect(new FileEngineStore({ dir }).openLog('m', 'e').readAll()).toEqual([
      event(1),
      event(2),
      event(3),
      event(4),
      event(5, { ts: 1_700_000_000_000 }),
    ]);
  });

  it('reads a history of store format 2 (the previous engine) and goes on in format 3', async () => {
    const t = 1_700_000_000_000;
    const events: StoredEvent[] = [
      {
        id: 1,
        prev: 0,
        ts: t,
        type: 'ExecutionStarted',
        key: '.0',
        details: {
          input: '{"n":1}',
          inputDetails: { truncated: false },
          roleArn: 'arn:aws:iam::123456789012:role/r',
        },
        internal: { definitionRef: 'sha256:00', express: false },
      },
      entered(2, 1, t + 1, 'Pass', '.1', 'A', '{"n":1}'),
      exited(3, 2, t + 1, 'Pass', '.2', 'A', '{"n":1}', { entered: 2, next: 'B' }),
      entered(4, 3, t + 1, 'Task', '.3', 'B', '{"n":1}'),
      {
        id: 5,
        prev: 4,
        ts: t + 2,
        type: 'LambdaFunctionScheduled',
        key: '.4',
        details: {
          resource: 'arn:aws:lambda:us-east-1:123456789012:function:f',
          input: '{"n":1}',
          inputDetails: NOT_TRUNCATED,
        },
      },
      { id: 6, prev: 5, ts: t + 2, type: 'LambdaFunctionStarted', key: '.5' },
      {
        id: 7,
        prev: 6,
        ts: t + 3,
        type: 'LambdaFunctionSucceeded',
        key: '.6',
        details: { output: '{"n":2}', outputDetails: NOT_TRUNCATED },
      },
      exited(8, 7, t + 3, 'Task', '.7', 'B', '{"n":2}', { entered: 4, next: 'C', assigned: { x: 1 } }),
      entered(9, 8, t + 3, 'Map', '.8', 'C', '{"n":2}'),
      { id: 10, prev: 9, ts: t + 3, type: 'MapStateStarted', key: '.9', details: { length: 2 } },
      iterationStarted(11, 10, t + 4, 0),
      entered(12, 11, t + 4, 'Pass', '/m9r0i0.1', 'I', '"a\\tb"'),
      iterationStarted(13, 10, t + 4, 1),
      exited(14, 12, t + 4.5, 'Pass', '/m9r0i0.2', 'I', '"a\\tb"', { entered: 12 }),
      {
        id: 15,
        prev: 13,
        ts: t + 5,
        type: 'Custom',
        key: 'odd',
        details: { output: 'ü\n', outputDetails: { truncated: true } },
        internal: { tokenHash: 'h' },
      },
    ];
    // written by the engine before format 3 (event-codec.ts of commit 4f663e6), in two batches
    const format2 =
      '[2,[[16,"",0,1700000000000,0,1],{"input":"{\\"n\\":1}","inputDetails":{"truncated":false},"roleArn":"arn:aws:iam::123456789012:role/r"},{"definitionRef":"sha256:00","express":false}],[[0,0,0,1,0,1],"A",0],[1,"A",0,1,"B"],[10,"B",0],[[22,0,0,1,0,1],{"resource":"arn:aws:lambda:us-east-1:123456789012:function:f","input":0,"inputDetails":0}],[23],[[24,0,0,1,0,1],{"output":"{\\"n\\":2}","outputDetails":0}]]\n' +
      '[2,[11,"B",1,4,"C",{"x":1}],[12,"C",1],[40,{"length":2}],[[44,"/m9r0i0",0,1,0,1],{"name":"C","index":0}],[0,"I","\\"a\\\\tb\\""],[[44,"/m9r0i1",0,0,0,3],{"name":"C","index":1}],[[1,1,0,[1700000000004.5],0,2],"I",2,2,0],[["Custom",["odd"],0,1,0,2],{"output":"ü\\n","outputDetails":{"truncated":true}},{"tokenHash":"h"}]]\n';
    const dir = storeDir();
    fs.mkdirSync(path.join(dir, 'executions', '_m'), { recursive: true });
    const file = path.join(dir, 'executions', '_m', '_e.jsonl');
    fs.writeFileSync(file, format2);
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    expect(log.readAll()).toEqual(events);
    // the iteration goes on, a sibling iteration begins, the Map state ends
    const more: StoredEvent[] = [
      entered(16, 13, t + 6, 'Pass', '/m9r0i1.1', 'I', '"a\\tb"'),
      exited(17, 16, t + 6, 'Pass', '/m9r0i1.2', 'I', '"a\\tb"', { entered: 16 }),
      iterationStarted(18, 10, t + 6, 2),
      entered(19, 18, t + 6, 'Pass', '/m9r0i2.1', 'I', '{"n":1}'),
      exited(20, 19, t + 6, 'Pass', '/m9r0i2.2', 'I', '{"n":1}', { entered: 19 }),
      exited(21, 10, t + 7, 'Map', '.10', 'C', '{"n":2}', { entered: 9 }),
    ];
    log.append(more);
    log.close();
    await store.close();
    expect(fs.readFileSync(file, 'utf8').startsWith(format2)).toBe(true);
    expect(fs.readFileSync(file, 'utf8').slice(format2.length)).toMatch(/^\[3,/);
    expect(new FileEngineStore({ dir }).openLog('m', 'e').readAll()).toEqual([...events, ...more]);
  });

  it('writes new payload texts raw after the line, and escapes only those UTF-8 or a line cannot hold', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    const plain = '{"marker":"raw\ttext ü"}';
    const multiline = '{\n"marker":"escaped"\n}';
    const events = [
      entered(1, 0, 1, 'Pass', '.0', 'A', plain),
      exited(2, 1, 1, 'Pass', '.1', 'A', multiline, { entered: 1 }),
    ];
    log.append(events);
    log.close();
    await store.close();
    const text = fs.readFileSync(logFile(dir), 'utf8');
    expect(text.split('\n')).toHaveLength(2); // one line
    expect(text).toContain(`\t${plain}`);
    expect(text).toContain(JSON.stringify(multiline));
    expect(new FileEngineStore({ dir }).openLog('m', 'e').readAll()).toEqual(events);
  });

  it('takes a format-3 line whose raw texts were cut short as torn, even when its JSON is whole', async () => {
    const dir = storeDir();
    let store = new FileEngineStore({ dir });
    let log = store.openLog('m', 'e');
    log.append([entered(1, 0, 1, 'Pass', '.0', 'A', '{"first":1}')]);
    log.close();
    await store.close();
    const file = logFile(dir);
    const whole = fs.readFileSync(file, 'utf8');
    store = new FileEngineStore({ dir });
    log = store.openLog('m', 'e');
    log.append([entered(2, 1, 1, 'Pass', '.1', 'B', '{"second":2}')]);
    log.close();
    await store.close();
    const both = fs.readFileSync(file, 'utf8');
    const tab = both.indexOf('\t', whole.length);
    // cut inside the raw texts, right after the tab, right before it (the JSON whole), before the newline
    for (const cut of [tab + 4, tab + 1, tab, both.length - 1]) {
      fs.writeFileSync(file, both.slice(0, cut));
      expect(
        new FileEngineStore({ dir })
          .openLog('m', 'e')
          .readAll()
          .map((e) => e.id),
      ).toEqual([1]);
    }
  });

  it('a batch that cannot be encoded throws and leaves the log and the history as they were', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    const other = store.openLog('m', 'other');
    log.append([entered(1, 0, 1, 'Pass', '.0', 'A', '{"n":1}')]);
    other.stage([entered(1, 0, 1, 'Pass', '.0', 'X', '{"x":1}')]); // staged, not yet written
    const bad = { id: 2, prev: 1, ts: 1, type: 'Custom', key: '.1', details: { big: 1n } } as StoredEvent;
    const fresh = store.openLog('m', 'fresh'); // its first line would declare it in the log
    expect(() => fresh.append([{ ...bad, id: 1, prev: 0, key: '.0' }])).toThrow(/BigInt/);
    expect(() => log.append([exited(2, 1, 1, 'Pass', '.1', 'A', '{"n":1}', { entered: 1 }), bad])).toThrow(
      /BigInt/,
    );
    const next = exited(2, 1, 2, 'Pass', '.1', 'A', '{"n":2}', { entered: 1, next: 'B' });
    log.append([next]);
    fresh.append([entered(1, 0, 1, 'Pass', '.0', 'F', '{}')]);
    const expected = [entered(1, 0, 1, 'Pass', '.0', 'A', '{"n":1}'), next];
    expect(log.readAll()).toEqual(expected);
    // a restart (kill -9: the log is applied as it is) reads the same
    const restarted = new FileEngineStore({ dir });
    expect(restarted.openLog('m', 'e').readAll()).toEqual(expected);
    expect(restarted.openLog('m', 'other').readAll()).toEqual([
      entered(1, 0, 1, 'Pass', '.0', 'X', '{"x":1}'),
    ]);
    expect(restarted.openLog('m', 'fresh').readAll()).toEqual([entered(1, 0, 1, 'Pass', '.0', 'F', '{}')]);
  });

  it('cuts a torn format-3 line and goes on encoding from the lines before it', async () => {
    const dir = storeDir();
    let store = new FileEngineStore({ dir });
    let log = store.openLog('m', 'e');
    log.append([event(1), event(2)]);
    log.close();
    await store.close();
    const file = logFile(dir);
    const whole = fs.readFileSync(file, 'utf8');
    store = new FileEngineStore({ dir });
    log = store.openLog('m', 'e');
    log.append([event(3), event(4)]);
    log.close();
    await store.close();
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').slice(0, whole.length + 9));
    expect(
      new FileEngineStore({ dir })
        .openLog('m', 'e')
        .readAll()
        .map((e) => e.id),
    ).toEqual([1, 2]);
    const reopened = new FileEngineStore({ dir }).openLog('m', 'e');
    reopened.append([event(3)]);
    reopened.close();
    expect(reopened.readAll()).toEqual([event(1), event(2), event(3)]);
  });
});

describe('FileEngineStore definitions', () => {
  it('keeps each definition once, by content, across reopening', () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const text = JSON.stringify({ StartAt: 'A', States: { A: { Type: 'Pass', End: true } } });
    const ref = store.putDefinition(text);
    expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(store.putDefinition(text)).toBe(ref);
    expect(store.putDefinition(`${text} `)).not.toBe(ref);
    expect(fs.readdirSync(path.join(dir, 'definitions'))).toHaveLength(2);
    expect(new FileEngineStore({ dir }).getDefinition(ref)).toBe(text);
  });

  it('answers undefined for unknown or malformed references, never reading outside the store', () => {
    const store = new FileEngineStore({ dir: storeDir() });
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

describe('the write-ahead log', () => {
  /** Bytes of every log generation left in the store. */
  function walBytes(dir: string): string {
    const wal = path.join(dir, 'wal');
    return fs
      .readdirSync(wal)
      .map((f) => fs.readFileSync(path.join(wal, f), 'latin1'))
      .join('');
  }

  it('writes the batches of many histories with one write and applies them after a stop without close', () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const logs = [0, 1, 2].map((i) => store.openLog('m', `e${i}`));
    for (const log of logs) log.stage([event(1), event(2)]);
    expect(walBytes(dir)).toBe(''); // staged: nothing written yet
    store.write();
    const written = walBytes(dir);
    for (const i of [0, 1, 2]) expect(written).toContain(`["m","e${i}"]`);
    // no history file yet: the lines are only in the log
    expect(fs.readdirSync(path.join(dir, 'executions', '_m'))).toEqual([]);
    // a new store on the directory (as after kill -9) applies the log to the histories
    const restarted = new FileEngineStore({ dir });
    for (const i of [0, 1, 2])
      expect(restarted.openLog('m', `e${i}`).readAll()).toEqual([event(1), event(2)]);
    expect(fs.readdirSync(path.join(dir, 'wal'))).toEqual(['1.log']); // the next generation, empty
    expect(walBytes(dir)).toBe('');
  });

  it('applying a log twice changes nothing, and a torn last line of the log is dropped', () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    const log = store.openLog('m', 'e');
    log.append([event(1)]);
    log.append([event(2)]);
    const generation = path.join(dir, 'wal', '0.log');
    const bytes = fs.readFileSync(generation);
    // a restart that applied the log and was killed before deleting it: applied again
    new FileEngineStore({ dir });
    fs.writeFileSync(generation, bytes);
    // plus a line cut short by a kill
    fs.appendFileSync(generation, '0\t999\t[2,[');
    const restarted = new FileEngineStore({ dir });
    expect(restarted.openLog('m', 'e').readAll()).toEqual([event(1), event(2)]);
  });

  it('refuses a log that continues a history beyond its end (a damaged store), naming the history', () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    store.openLog('m', 'e').append([event(1)]);
    const generation = path.join(dir, 'wal', '0.log');
    fs.writeFileSync(generation, fs.readFileSync(generation, 'latin1').replace('0\t0\t', '0\t50\t'));
    expect(() => new FileEngineStore({ dir })).toThrow(/_e\.jsonl ends at byte 0.*at byte 50/);
  });

  it('checkpoints full generations into the histories while executions go on writing', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir, checkpointBytes: 2048 });
    const all: StoredEvent[] = [];
    const log = store.openLog('m', 'e');
    for (let i = 1; i <= 400; i++) {
      const e = event(i, { details: { text: `payload ${i}` } });
      all.push(e);
      log.append([e]);
      if (i % 50 === 0) await new Promise((r) => setTimeout(r, 5)); // let checkpoints run
      if (i % 97 === 0) expect(log.readAll()).toEqual(JSON.parse(JSON.stringify(all)));
    }
    // Checkpoints run in the background: a busy machine may finish them after the last write.
    for (let waited = 0; store.stats().checkpoints < 2 && waited < 10_000; waited += 20)
      await new Promise((r) => setTimeout(r, 20));
    expect(store.stats().checkpoints).toBeGreaterThanOrEqual(2);
    await store.close();
    expect(fs.readdirSync(path.join(dir, 'wal'))).toEqual([]);
    expect(new FileEngineStore({ dir }).openLog('m', 'e').readAll()).toEqual(JSON.parse(JSON.stringify(all)));
  });

  it('once histories are listed, finds the listed ones and those a checkpoint created since', async () => {
    const dir = storeDir();
    const first = new FileEngineStore({ dir });
    first.openLog('m', 'old').append([event(1)]);
    await first.close();
    const store = new FileEngineStore({ dir, checkpointBytes: 1 }); // every write starts a checkpoint
    expect(store.listLogs()).toEqual([{ machineName: 'm', executionName: 'old' }]);
    store.openLog('m', 'new').append([event(1)]); // not listed: taken as new without looking
    const old = store.openLog('m', 'old'); // listed: read and appended to
    old.append([event(2)]);
    expect(old.readAll()).toEqual([event(1), event(2)]);
    // the checkpoint creates new's file (in the background: waited for, up to 10 s on a busy machine)
    const created = path.join(dir, 'executions', '_m', '_new.jsonl');
    for (let waited = 0; !fs.existsSync(created) && waited < 10_000; waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fs.existsSync(created)).toBe(true);
    const again = store.openLog('m', 'new'); // all applied: a new handle, which must find the file
    again.append([event(2)]);
    expect(again.readAll()).toEqual([event(1), event(2)]);
    await store.close();
    expect(new FileEngineStore({ dir }).openLog('m', 'new').readAll()).toEqual([event(1), event(2)]);
    expect(new FileEngineStore({ dir }).openLog('m', 'old').readAll()).toEqual([event(1), event(2)]);
  });

  it('keeps summaries of finished executions and forgets one whose history grows again', async () => {
    const dir = storeDir();
    const store = new FileEngineStore({ dir });
    store.openLog('m', 'a').append([event(1)]);
    store.noteFinished('m', 'a', { status: 'SUCCEEDED' });
    store.openLog('m', 'b').append([event(1)]);
    store.noteFinished('m', 'b', { status: 'FAILED' });
    await store.close();
    const second = new FileEngineStore({ dir });
    expect(second.readSummaries()).toEqual(
      new Map([
        ['m\ta', { status: 'SUCCEEDED' }],
        ['m\tb', { status: 'FAILED' }],
      ]),
    );
    // b runs again (a redrive) and the engine is killed: its summary no longer holds
    second.openLog('m', 'b').append([event(2)]);
    expect(new FileEngineStore({ dir }).readSummaries()).toEqual(
      new Map([['m\ta', { status: 'SUCCEEDED' }]]),
    );
    // a history that grows again after its summary was noted (a redrive in the same window)
    // keeps no summary once the store closes
    const third = new FileEngineStore({ dir });
    third.openLog('m', 'c').append([event(1)]);
    third.noteFinished('m', 'c', { status: 'FAILED' });
    third.openLog('m', 'c').append([event(2)]);
    await third.close();
    expect(new FileEngineStore({ dir }).readSummaries().has('m\tc')).toBe(false);
  });
});

describe('one engine per store directory', () => {
  it('refuses a store another live process holds, and takes over one whose process was killed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plangate-store-lock-'));
    const holderScript = path.join(dir, 'hold.ts');
    fs.writeFileSync(
      holderScript,
      `import { FileEngineStore } from ${JSON.stringify(path.resolve('lib/engine/persistence/store.ts'))};\n` +
        `new FileEngineStore({ dir: ${JSON.stringify(path.join(dir, 'store'))} });\n` +
        `process.stdout.write('held\\n');\nsetInterval(() => undefined, 1000);\n`,
    );
    const { spawn } = await import('node:child_process');
    const holder = spawn(
      process.execPath,
      ['--import', path.resolve('node_modules/tsx/dist/loader.mjs'), holderScript],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve());
        holder.once('exit', (code) => reject(new Error(`the holder exited ${code}`)));
      });
      expect(() => new FileEngineStore({ dir: path.join(dir, 'store') })).toThrow(
        `is in use by process ${holder.pid}`,
      );
    } finally {
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    const store = new FileEngineStore({ dir: path.join(dir, 'store') });
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'store', 'LOCK'), 'utf8'))).toMatchObject({
      pid: process.pid,
    });
    await store.close();
    expect(fs.existsSync(path.join(dir, 'store', 'LOCK'))).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

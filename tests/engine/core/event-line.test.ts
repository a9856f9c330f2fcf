import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventLine } from '../../../lib/engine/core/event-line.ts';
import type { StoredEvent } from '../../../lib/engine/core/history.ts';

const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.json());
const payloadDetails = fc.constantFrom('input', 'output').chain((field) =>
  fc.record({
    name: fc.oneof(text, fc.integer()),
    [field]: fc.oneof(
      text,
      fc.constant(undefined),
      fc.json().map((t) => JSON.parse(t) as unknown),
    ),
    [`${field}Details`]: fc.oneof(
      fc.constant({ truncated: false }),
      fc.constant({ truncated: true }),
      fc.constant({ truncated: false, extra: 1 }),
      fc.constant([]),
      fc.constant(null),
    ),
  }),
);
const internal = fc.oneof(
  fc.record({ entered: fc.oneof(fc.integer(), fc.double()) }),
  fc.record({ entered: fc.integer(), next: fc.oneof(text, fc.constant(undefined), fc.integer()) }),
  fc.record({ next: text, entered: fc.integer() }),
  fc.record({ entered: fc.integer(), next: text, assigned: fc.dictionary(fc.string(), fc.jsonValue()) }),
  fc.dictionary(fc.string(), fc.jsonValue()),
);
const event: fc.Arbitrary<StoredEvent> = fc.record(
  {
    id: fc.oneof(fc.nat(), fc.double()),
    prev: fc.nat(),
    ts: fc.oneof(fc.nat(), fc.double()),
    type: text,
    key: text,
    details: fc.oneof(payloadDetails, fc.dictionary(fc.string(), fc.jsonValue())),
    internal,
  },
  { requiredKeys: ['id', 'prev', 'ts', 'type', 'key'] },
);

describe('eventLine', () => {
  it('writes exactly what JSON.stringify writes, for every event shape', () => {
    fc.assert(
      fc.property(event, (e) => {
        expect(eventLine(e)).toBe(`${JSON.stringify(e)}\n`);
      }),
      { numRuns: 3000 },
    );
  });

  it('writes the frequent state events field by field with the same text', () => {
    const entered: StoredEvent = {
      id: 2,
      prev: 1,
      ts: 1_700_000_000_000,
      type: 'PassStateEntered',
      key: '.0',
      details: { name: 'A "quoted" \u2028 name', input: '{"n":1}', inputDetails: { truncated: false } },
    };
    const exited: StoredEvent = {
      id: 3,
      prev: 2,
      ts: 1_700_000_000_001,
      type: 'PassStateExited',
      key: '.1',
      details: { name: 'A', output: '{"n":1}', outputDetails: { truncated: false } },
      internal: { entered: 2, next: 'B' },
    };
    for (const e of [entered, exited]) expect(JSON.parse(eventLine(e))).toEqual(e);
    expect(eventLine(exited)).toBe(`${JSON.stringify(exited)}\n`);
  });
});

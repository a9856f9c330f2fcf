import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyInputPath,
  applyOutputPath,
  applyResultPath,
  canonicalJsonSize,
  resolvePayloadTemplate,
  selectPath,
} from '../../../lib/engine/dataflow/index.ts';
import { StatesError } from '../../../lib/engine/types.ts';

describe('InputPath / OutputPath', () => {
  it('default to the whole value and turn null into {}', () => {
    const input = { a: 1 };
    expect(applyInputPath(input, undefined, {}, {})).toBe(input);
    expect(applyInputPath(input, '$', {}, {})).toBe(input);
    expect(applyInputPath(input, null, {}, {})).toEqual({});
    expect(applyOutputPath(input, null, {}, {})).toEqual({});
    expect(applyOutputPath(input, '$.a', {}, {})).toBe(1);
  });

  it('reports a missing InputPath as AWS does', () => {
    expect(() => applyInputPath({ 'int-literal': 0 }, '$.NoSuchInputPath', {}, {})).toThrow(
      new StatesError(
        'States.Runtime',
        "Invalid path '$.NoSuchInputPath' : No results for path: $['NoSuchInputPath']",
      ),
    );
  });
});

describe('ResultPath', () => {
  it('replaces, discards or places the result', () => {
    expect(applyResultPath({ a: 1 }, 'r', undefined)).toBe('r');
    expect(applyResultPath({ a: 1 }, 'r', '$')).toBe('r');
    expect(applyResultPath({ a: 1 }, 'r', null)).toEqual({ a: 1 });
    expect(applyResultPath({ a: 1 }, 'r', '$.b.c')).toEqual({ a: 1, b: { c: 'r' } });
    expect(applyResultPath({ a: { x: 1 } }, 'r', '$.a.y')).toEqual({ a: { x: 1, y: 'r' } });
    expect(applyResultPath({ a: [1, 2] }, 'r', '$.a[1]')).toEqual({ a: [1, 'r'] });
  });

  it('never mutates the input', () => {
    const input = { a: { x: 1 } };
    applyResultPath(input, 2, '$.a.x');
    expect(input).toEqual({ a: { x: 1 } });
  });

  it('places "__proto__" as an own key without touching prototypes', () => {
    const out = applyResultPath({}, { polluted: true }, "$['__proto__'].x") as Record<string, unknown>;
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('rejects non-reference paths and non-object targets with States.Runtime', () => {
    expect(() => applyResultPath({}, 1, '$.a[*]')).toThrow(StatesError);
    expect(() => applyResultPath({ a: 'text' }, 1, '$.a.b')).toThrow(StatesError);
    expect(() => applyResultPath({}, 1, '$$.Execution')).toThrow(StatesError);
  });

  it('round-trips: what ResultPath places, the same path selects', () => {
    const key = fc.string({ maxLength: 8 });
    const step = (k: string) => `['${k.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}']`;
    fc.assert(
      fc.property(
        fc.dictionary(key, fc.jsonValue()),
        fc.array(key, { minLength: 1, maxLength: 4 }),
        fc.jsonValue(),
        (input, keys, result) => {
          const path = `$${keys.map(step).join('')}`;
          const objectsAlongPath = keys.slice(0, -1).every((_, i) => {
            const v = selectOrUndefined(
              input,
              `$${keys
                .slice(0, i + 1)
                .map(step)
                .join('')}`,
            );
            return v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v));
          });
          fc.pre(objectsAlongPath);
          const out = applyResultPath(input, result, path);
          expect(selectPath(out, path, {}, {}, 'value.$')).toEqual(result);
        },
      ),
    );
  });
});

function selectOrUndefined(data: unknown, path: string): unknown {
  try {
    return selectPath(data, path, {}, {}, 'value.$');
  } catch {
    return undefined;
  }
}

describe('payload templates', () => {
  it('resolves .$ keys recursively, inside arrays too, and keeps other values', () => {
    const template = {
      static: 'x',
      'fromInput.$': '$.a',
      'fromContext.$': '$$.Execution.Name',
      'fromVariable.$': '$v',
      nested: [{ 'n.$': "States.Format('{}-{}', $.a, $v)" }, 3],
    };
    expect(
      resolvePayloadTemplate(template, { a: 1 }, { Execution: { Name: 'e' } }, { v: 'V' }, 'Parameters'),
    ).toEqual({
      static: 'x',
      fromInput: 1,
      fromContext: 'e',
      fromVariable: 'V',
      nested: [{ n: '1-V' }, 3],
    });
  });

  it('names the failing field the way AWS does', () => {
    expect(() => resolvePayloadTemplate({ 'value.$': '$.missing' }, { b: 1 }, {}, {}, 'Parameters')).toThrow(
      new StatesError(
        'States.Runtime',
        `The JSONPath '$.missing' specified for the field 'value.$' could not be found in the input '{"b":1}'`,
      ),
    );
  });
});

describe('canonicalJsonSize', () => {
  it('counts UTF-8 bytes of the JSON text', () => {
    expect(canonicalJsonSize({ a: 'é' })).toBe(Buffer.byteLength('{"a":"é"}'));
    expect(canonicalJsonSize('😀')).toBe(6);
    fc.assert(
      fc.property(
        fc.jsonValue(),
        (v) => canonicalJsonSize(v) === Buffer.byteLength(JSON.stringify(v) ?? 'null'),
      ),
    );
  });
});

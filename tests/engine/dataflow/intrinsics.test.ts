import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluateIntrinsic } from '../../../lib/engine/dataflow/index.ts';
import { StatesError } from '../../../lib/engine/types.ts';

const run = (expression: string, input: unknown = {}, variables: Record<string, unknown> = {}) =>
  evaluateIntrinsic(expression, input, { Execution: { Name: 'exec' } }, variables, 'value.$');

function failure(expression: string, input: unknown = {}): StatesError {
  try {
    run(expression, input);
  } catch (error) {
    expect(error).toBeInstanceOf(StatesError);
    return error as StatesError;
  }
  throw new Error(`${expression} did not fail`);
}

describe('intrinsic functions', () => {
  it('States.Format interpolates values as AWS prints them, honouring escapes', () => {
    expect(run("States.Format('a={}, b={}', $.a, $.b)", { a: 1.5, b: null })).toBe('a=1.5, b=null');
    expect(run("States.Format('{}', $.o)", { o: { x: 1, y: [1, 'z'] } })).toBe('{x=1, y=[1, z]}');
    expect(run("States.Format('\\{\\} {} it\\'s', 'x')")).toBe("{} x it's");
    expect(failure("States.Format('{} {}', 'x')").error).toBe('States.IntrinsicFailure');
  });

  it('JSON conversions and merging', () => {
    expect(run('States.StringToJson($.s)', { s: '{"a": [1]}' })).toEqual({ a: [1] });
    expect(run('States.JsonToString($.o)', { o: { a: [1, 'x'] } })).toBe('{"a":[1,"x"]}');
    expect(
      run('States.JsonMerge($.a, $.b, false)', { a: { x: 1, y: { p: 1 } }, b: { y: { q: 2 } } }),
    ).toEqual({
      x: 1,
      y: { q: 2 },
    });
    expect(failure('States.StringToJson($.s)', { s: '{' }).error).toBe('States.IntrinsicFailure');
    expect(failure('States.JsonMerge($.a, $.a, true)', { a: {} }).error).toBe('States.IntrinsicFailure');
  });

  it('array functions', () => {
    expect(run("States.Array(1, 'two', $.x, true, null)", { x: [3] })).toEqual([1, 'two', [3], true, null]);
    expect(run('States.ArrayPartition($.a, 2)', { a: [1, 2, 3, 4, 5] })).toEqual([[1, 2], [3, 4], [5]]);
    expect(run('States.ArrayContains($.a, $.v)', { a: [{ k: 1 }], v: { k: 1 } })).toBe(true);
    expect(run('States.ArrayRange(1, 9, 2)')).toEqual([1, 3, 5, 7, 9]);
    expect(run('States.ArrayRange(9, 1, -4)')).toEqual([9, 5, 1]);
    expect(run('States.ArrayGetItem($.a, 1)', { a: ['x', 'y'] })).toBe('y');
    expect(run('States.ArrayLength($.a)', { a: [1, 2] })).toBe(2);
    expect(run('States.ArrayUnique($.a)', { a: [1, 1, { a: 1 }, { a: 1 }, '1'] })).toEqual([
      1,
      { a: 1 },
      '1',
    ]);
    expect(failure('States.ArrayRange(0, 2000, 1)').error).toBe('States.IntrinsicFailure');
    expect(failure('States.ArrayPartition($.a, 0)', { a: [] }).error).toBe('States.IntrinsicFailure');
    expect(failure('States.ArrayGetItem($.a, 5)', { a: [] }).error).toBe('States.IntrinsicFailure');
  });

  it('encoding, hashing, math, strings, ids', () => {
    expect(run("States.Base64Encode('Data to encode')")).toBe('RGF0YSB0byBlbmNvZGU=');
    expect(run("States.Base64Decode('RGF0YSB0byBlbmNvZGU=')")).toBe('Data to encode');
    expect(run("States.Hash('input data', 'SHA-1')")).toBe('aaff4a450a104cd177d28d18d74485e8cae074b7');
    expect(run('States.MathAdd($.a, $.b)', { a: 1.49, b: 1.5 })).toBe(3);
    expect(run('States.MathAdd(-2.5, 0)')).toBe(-2);
    expect(run("States.StringSplit('a.b+c', '.+')")).toEqual(['a', 'b', 'c']);
    expect(run('States.UUID()')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    const r = run('States.MathRandom(5, 10)') as number;
    expect(Number.isInteger(r) && r >= 5 && r < 10).toBe(true);
    expect(run('States.MathRandom(0, 1000, 42)')).toBe(run('States.MathRandom(0, 1000, 42)'));
    expect(failure("States.Hash('x', 'SHA-3')").error).toBe('States.IntrinsicFailure');
  });

  it('States.MathAdd rounds each operand half up (Java Math.round) before adding, as AWS recorded', () => {
    // AWS's recorded results (test_math_add): summing first and rounding once gives 3, -3 and 0 here
    const recorded: Array<[number, number, number]> = [
      [1.5, 1.51, 4],
      [-1.49, -1.5, -2],
      [-0.5, 0.5, 1],
      [-1.5, -1.51, -3],
      [2.5, 0, 3],
      [-2.5, 0, -2],
      [-0.5, 0, 0],
      [-3.5, 0, -3],
    ];
    for (const [a, b, sum] of recorded) {
      expect(run('States.MathAdd($.a, $.b)', { a, b }), `MathAdd(${a}, ${b})`).toBe(sum);
    }
    expect(Object.is(run('States.MathAdd(-0.4, 0)'), -0)).toBe(false);
  });

  it('States.StringToJson of an empty or blank string is null, as on AWS', () => {
    expect(run('States.StringToJson($.s)', { s: '' })).toBeNull();
    expect(run('States.StringToJson($.s)', { s: ' \t\n' })).toBeNull();
    expect(run('States.StringToJson($.s)', { s: '-0' })).toBe(0);
    expect(failure('States.StringToJson($.s)', { s: ' {' }).error).toBe('States.IntrinsicFailure');
  });

  it('nests calls and reads context and variables', () => {
    expect(
      run(
        "States.ArrayGetItem(States.StringSplit($$.Execution.Name, '-'), States.MathAdd(States.ArrayLength(States.StringSplit($$.Execution.Name, '-')), -1))",
      ),
    ).toBe('exec');
    expect(run("States.Format('{}', $v.x)", {}, { v: { x: 'var' } })).toBe('var');
    expect(run('States.ArrayLength($.a[?(@.n > 1)])', { a: [{ n: 1 }, { n: 2 }, { n: 3 }] })).toBe(2);
  });

  it('reports missing path arguments as States.Runtime and unknown functions as States.IntrinsicFailure', () => {
    expect(failure('States.ArrayLength($.nope)').error).toBe('States.Runtime');
    expect(failure('States.Nope(1)').error).toBe('States.IntrinsicFailure');
    expect(failure('States.Array(1').error).toBe('States.IntrinsicFailure');
  });

  it('never throws anything but a StatesError, whatever the expression', () => {
    const pieces = fc.constantFrom(
      'States.Format(',
      'States.ArrayRange(',
      'States.Array(',
      'States.Hash(',
      'States.MathAdd(',
      'States.JsonMerge(',
      "'",
      "'{}'",
      ',',
      ')',
      '$.a',
      '$$.x',
      '1',
      '-2.5',
      'true',
      'null',
      '\\',
      ' ',
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 12 }), fc.jsonValue(), (parts, a) => {
        try {
          run(`States.${parts.join('').replace(/^States\./, '')}`, { a });
        } catch (error) {
          expect(error).toBeInstanceOf(StatesError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

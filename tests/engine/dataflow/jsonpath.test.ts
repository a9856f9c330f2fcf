import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { selectPath } from '../../../lib/engine/dataflow/index.ts';
import { StatesError } from '../../../lib/engine/types.ts';

const store = {
  book: [
    { title: 'A', price: 8, tags: ['x'] },
    { title: 'B', price: 12, isbn: '1' },
    { title: 'C', price: 30, isbn: '2' },
  ],
  'odd key': { "it's": 1 },
  n: null,
};

const select = (path: string, data: unknown = store, variables: Record<string, unknown> = {}) =>
  selectPath(data, path, { Execution: { Name: 'run-1' } }, variables, 'value.$');

function causeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(StatesError);
    return (error as StatesError).cause;
  }
  throw new Error('expected a StatesError');
}

describe('selectPath', () => {
  it('reads definite paths in dot and bracket notation', () => {
    expect(select('$.book[1].title')).toBe('B');
    expect(select("$['book'][0]['price']")).toBe(8);
    expect(select('$.book[-1].title')).toBe('C');
    expect(select("$['odd key']['it\\'s']")).toBe(1);
    expect(select('$')).toBe(store);
    expect(select('$.n')).toBeNull();
  });

  it('reads the context object and variables', () => {
    expect(select('$$.Execution.Name')).toBe('run-1');
    expect(select('$myVar.a[0]', {}, { myVar: { a: [7] } })).toBe(7);
    expect(select('$myVar', {}, { myVar: 'v' })).toBe('v');
  });

  it('returns every match of indefinite paths as an array', () => {
    expect(select('$.book[*].title')).toEqual(['A', 'B', 'C']);
    expect(select('$.book[0:2].title')).toEqual(['A', 'B']);
    expect(select('$.book[::-1].title')).toEqual(['C', 'B', 'A']);
    expect(select('$.book[0,2].title')).toEqual(['A', 'C']);
    expect(select("$.book[0]['title','price']")).toEqual(['A', 8]);
    expect(select('$..price')).toEqual([8, 12, 30]);
    expect(select('$.book[?(@.price > 10)].title')).toEqual(['B', 'C']);
    expect(select('$.book[?(@.isbn)].title')).toEqual(['B', 'C']);
    expect(select("$.book[?(@.title == 'A' || @.price >= 30)].title")).toEqual(['A', 'C']);
    expect(select('$.book[?(@.title =~ /[AB]/)].title')).toEqual(['A', 'B']);
    expect(select("$.book[?(@.title in ['B'])].price")).toEqual([12]);
    expect(select('$.missing[*]')).toEqual([]);
    expect(select('$.book.length()')).toBe(3);
  });

  it('words definite-path misses the way AWS does, per field', () => {
    expect(causeOf(() => select('$.nope'))).toBe(
      `The JSONPath '$.nope' specified for the field 'value.$' could not be found in the input '${JSON.stringify(store)}'`,
    );
    expect(causeOf(() => selectPath({}, '$.a.b', {}, {}, 'InputPath'))).toBe(
      "Invalid path '$.a.b' : Missing property in path $['a']",
    );
    expect(causeOf(() => selectPath({ a: {} }, '$.a.b', {}, {}, 'OutputPath'))).toBe(
      "Invalid path '$.a.b' : No results for path: $['a']['b']",
    );
    expect(causeOf(() => selectPath({ a: [1] }, '$.a[3]', {}, {}, 'ItemsPath'))).toBe(
      "Invalid path '$.a[3]' : No results for path: $['a'][3]",
    );
  });

  it('never reaches the prototype chain', () => {
    expect(causeOf(() => select('$.__proto__', {}))).toContain('could not be found');
    expect(causeOf(() => select('$.constructor', {}))).toContain('could not be found');
    expect(causeOf(() => select('$.toString', {}))).toContain('could not be found');
    expect(select('$.__proto__', JSON.parse('{"__proto__": 5}'))).toBe(5);
  });

  it('reads back any key of any object', () => {
    fc.assert(
      fc.property(fc.string(), fc.jsonValue(), (key, value) => {
        const data: Record<string, unknown> = {};
        Object.defineProperty(data, key, { value, enumerable: true });
        const quoted = key.replaceAll('\\', '\\\\').replaceAll("'", "\\'");
        expect(selectPath(data, `$['${quoted}']`, {}, {}, 'value.$')).toEqual(value);
      }),
    );
  });

  it('fails with a StatesError and nothing else on any path text', () => {
    fc.assert(
      fc.property(fc.string(), (path) => {
        try {
          selectPath(store, `$${path}`, {}, {}, 'value.$');
        } catch (error) {
          expect(error).toBeInstanceOf(StatesError);
          expect((error as StatesError).error).toBe('States.Runtime');
        }
      }),
    );
  });
});

import { describe, expect, it } from 'vitest';
import { evaluateChoiceRule, stringMatches } from '../../../lib/engine/dataflow/index.ts';
import { StatesError } from '../../../lib/engine/types.ts';

const input = {
  s: 'abc',
  n: 5,
  b: true,
  t: '2024-01-01T00:00:00Z',
  t2: '2024-01-01T01:00:00+01:00',
  z: null,
  other: 5,
};
const rule = (r: Record<string, unknown>) => evaluateChoiceRule(r, input, {}, { v: 5 });

describe('Choice rules', () => {
  it('compares strings, numbers, booleans and timestamps, with *Path variants', () => {
    expect(rule({ Variable: '$.s', StringEquals: 'abc' })).toBe(true);
    expect(rule({ Variable: '$.s', StringLessThan: 'abd' })).toBe(true);
    expect(rule({ Variable: '$.s', StringGreaterThanEquals: 'abc' })).toBe(true);
    expect(rule({ Variable: '$.n', NumericEquals: 5 })).toBe(true);
    expect(rule({ Variable: '$.n', NumericLessThanEqualsPath: '$.other' })).toBe(true);
    expect(rule({ Variable: '$.n', NumericGreaterThanPath: '$v' })).toBe(false);
    expect(rule({ Variable: '$.b', BooleanEquals: true })).toBe(true);
    expect(rule({ Variable: '$.t', TimestampEquals: '2024-01-01T00:00:00.000Z' })).toBe(true);
    expect(rule({ Variable: '$.t', TimestampEqualsPath: '$.t2' })).toBe(true);
    expect(rule({ Variable: '$.t', TimestampLessThan: '2024-01-01T00:00:00.000000001Z' })).toBe(true);
  });

  it('is false, not an error, when the types differ', () => {
    expect(rule({ Variable: '$.n', StringEquals: '5' })).toBe(false);
    expect(rule({ Variable: '$.s', NumericEquals: 5 })).toBe(false);
    expect(rule({ Variable: '$.s', TimestampEquals: '2024-01-01T00:00:00Z' })).toBe(false);
    expect(rule({ Variable: '$.s', BooleanEquals: true })).toBe(false);
  });

  it('type tests', () => {
    expect(rule({ Variable: '$.z', IsNull: true })).toBe(true);
    expect(rule({ Variable: '$.missing', IsPresent: false })).toBe(true);
    expect(rule({ Variable: '$.missing', IsNull: false })).toBe(false);
    expect(rule({ Variable: '$.n', IsNumeric: true })).toBe(true);
    expect(rule({ Variable: '$.s', IsString: true })).toBe(true);
    expect(rule({ Variable: '$.b', IsBoolean: true })).toBe(true);
    expect(rule({ Variable: '$.t', IsTimestamp: true })).toBe(true);
    expect(rule({ Variable: '$.s', IsTimestamp: true })).toBe(false);
  });

  it('combines with And, Or, Not', () => {
    expect(
      rule({
        And: [{ Variable: '$.n', NumericGreaterThan: 1 }, { Not: { Variable: '$.s', StringEquals: 'x' } }],
      }),
    ).toBe(true);
    expect(
      rule({
        Or: [
          { Variable: '$.n', NumericEquals: 1 },
          { Variable: '$.b', BooleanEquals: false },
        ],
      }),
    ).toBe(false);
  });

  it('fails with States.Runtime when a compared Variable is missing', () => {
    expect(() => rule({ Variable: '$.missing', StringEquals: 'x' })).toThrow(
      new StatesError('States.Runtime', "Invalid path '$.missing' : No results for path: $['missing']"),
    );
  });

  it('StringMatches supports * wildcards and \\* \\\\ escapes', () => {
    expect(stringMatches('log-2024.txt', 'log-*.txt')).toBe(true);
    expect(stringMatches('a*b', 'a\\*b')).toBe(true);
    expect(stringMatches('axb', 'a\\*b')).toBe(false);
    expect(stringMatches('a\\b', 'a\\\\b')).toBe(true);
    expect(stringMatches('a.b(c', 'a.b(*')).toBe(true);
    expect(rule({ Variable: '$.s', StringMatches: '*c' })).toBe(true);
    expect(rule({ Variable: '$.n', StringMatches: '*' })).toBe(false);
  });
});

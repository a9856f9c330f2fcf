/** JSONPath Choice rules: every comparison operator, the type tests, and And/Or/Not. */
import { runtimeError } from './errors.ts';
import type { ExpressionCache } from './expression-cache.ts';
import { selectPath, type Variables } from './paths.ts';
import { compareInstants, parseTimestamp } from './timestamp.ts';

type Comparison = 'Equals' | 'LessThan' | 'GreaterThan' | 'LessThanEquals' | 'GreaterThanEquals';
type Kind = 'String' | 'Numeric' | 'Boolean' | 'Timestamp';

interface ComparisonOperator {
  readonly kind: Kind;
  readonly comparison: Comparison;
  readonly path: boolean;
}

/** Every comparison operator (`StringEquals`, `NumericLessThanPath`, ...), in AWS's order. */
const COMPARISON_OPERATORS: ReadonlyMap<string, ComparisonOperator> = comparisonOperators();

function comparisonOperators(): Map<string, ComparisonOperator> {
  const operators = new Map<string, ComparisonOperator>();
  for (const kind of ['String', 'Numeric', 'Boolean', 'Timestamp'] as const) {
    for (const comparison of [
      'Equals',
      'LessThan',
      'GreaterThan',
      'LessThanEquals',
      'GreaterThanEquals',
    ] as const) {
      if (kind === 'Boolean' && comparison !== 'Equals') continue;
      operators.set(`${kind}${comparison}`, { kind, comparison, path: false });
      operators.set(`${kind}${comparison}Path`, { kind, comparison, path: true });
    }
  }
  return operators;
}
const TYPE_TESTS = ['IsNull', 'IsPresent', 'IsNumeric', 'IsString', 'IsBoolean', 'IsTimestamp'] as const;

/** Evaluates one Choice rule (or a nested And/Or/Not rule) against the state's input. */
export function evaluateChoiceRule(
  rule: Record<string, unknown>,
  input: unknown,
  context: unknown,
  variables: Variables,
  cache?: ExpressionCache,
): boolean {
  if (Array.isArray(rule.And))
    return rule.And.every((r) => evaluateChoiceRule(asRule(r), input, context, variables, cache));
  if (Array.isArray(rule.Or))
    return rule.Or.some((r) => evaluateChoiceRule(asRule(r), input, context, variables, cache));
  if (rule.Not !== undefined) return !evaluateChoiceRule(asRule(rule.Not), input, context, variables, cache);
  const variable = rule.Variable;
  if (typeof variable !== 'string')
    throw runtimeError(`A Choice rule needs a 'Variable' field, got ${JSON.stringify(rule)}`);

  for (const test of TYPE_TESTS) {
    if (!(test in rule)) continue;
    const expected = rule[test];
    if (typeof expected !== 'boolean') throw runtimeError(`The value of '${test}' must be a boolean`);
    if (test === 'IsPresent') return isPresent(variable, input, context, variables, cache) === expected;
    if (!isPresent(variable, input, context, variables, cache)) return false;
    return typeTest(test, selectPath(input, variable, context, variables, 'Variable', cache)) === expected;
  }

  if ('StringMatches' in rule) {
    const value = selectPath(input, variable, context, variables, 'Variable', cache);
    const pattern = rule.StringMatches;
    if (typeof pattern !== 'string') throw runtimeError(`The value of 'StringMatches' must be a string`);
    return typeof value === 'string' && stringMatches(value, pattern);
  }
  for (const [operator, spec] of COMPARISON_OPERATORS) {
    if (!(operator in rule)) continue;
    const value = selectPath(input, variable, context, variables, 'Variable', cache);
    const operand = spec.path
      ? selectPath(input, String(rule[operator]), context, variables, operator, cache)
      : rule[operator];
    return compare(spec.kind, spec.comparison, value, operand);
  }
  throw runtimeError(`The Choice rule has no comparison operator: ${JSON.stringify(rule)}`);
}

function asRule(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw runtimeError(`A Choice rule must be an object, got ${JSON.stringify(value)}`);
  }
  return value as Record<string, unknown>;
}

function isPresent(
  variable: string,
  input: unknown,
  context: unknown,
  variables: Variables,
  cache: ExpressionCache | undefined,
): boolean {
  try {
    selectPath(input, variable, context, variables, 'Variable', cache);
    return true;
  } catch {
    return false;
  }
}

function typeTest(test: (typeof TYPE_TESTS)[number], value: unknown): boolean {
  switch (test) {
    case 'IsNull':
      return value === null;
    case 'IsNumeric':
      return typeof value === 'number';
    case 'IsString':
      return typeof value === 'string';
    case 'IsBoolean':
      return typeof value === 'boolean';
    case 'IsTimestamp':
      return parseTimestamp(value) !== undefined;
    case 'IsPresent':
      return true;
  }
}

function ordered(comparison: Comparison, order: number): boolean {
  switch (comparison) {
    case 'Equals':
      return order === 0;
    case 'LessThan':
      return order < 0;
    case 'GreaterThan':
      return order > 0;
    case 'LessThanEquals':
      return order <= 0;
    case 'GreaterThanEquals':
      return order >= 0;
  }
}

function compare(kind: Kind, comparison: Comparison, value: unknown, operand: unknown): boolean {
  switch (kind) {
    case 'String':
      if (typeof value !== 'string' || typeof operand !== 'string') return false;
      return ordered(comparison, value < operand ? -1 : value > operand ? 1 : 0);
    case 'Numeric':
      if (typeof value !== 'number' || typeof operand !== 'number') return false;
      return ordered(comparison, value - operand);
    case 'Boolean':
      return typeof value === 'boolean' && value === operand;
    case 'Timestamp': {
      const a = parseTimestamp(value);
      const b = parseTimestamp(operand);
      if (!a || !b) return false;
      return ordered(comparison, compareInstants(a, b));
    }
  }
}

/** StringMatches: `*` matches any run of characters; `\*` and `\\` are a literal star and backslash. */
export function stringMatches(value: string, pattern: string): boolean {
  let regex = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\' && i + 1 < pattern.length) {
      regex += escapeRegex(pattern[i + 1] as string);
      i++;
    } else if (c === '*') {
      regex += '[\\s\\S]*';
    } else {
      regex += escapeRegex(c);
    }
  }
  return new RegExp(`${regex}$`).test(value);
}

function escapeRegex(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

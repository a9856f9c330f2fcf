import { isJsonObject, type JsonObject, type QueryLanguage } from '../types.ts';
import { type CheckContext, describe } from './context.ts';
import { jsonataExpression } from './jsonata-syntax.ts';
import { pathSyntaxError } from './paths.ts';
import { checkAssign, checkJsonataValue } from './payload.ts';
import { pointer } from './problems.ts';

type Operand = 'string' | 'number' | 'boolean' | 'timestamp' | 'path';

/** Comparison operators of JSONPath Choice rules and the operand each takes. */
const COMPARATORS: Record<string, Operand> = {};
for (const op of ['Equals', 'LessThan', 'GreaterThan', 'LessThanEquals', 'GreaterThanEquals']) {
  COMPARATORS[`String${op}`] = 'string';
  COMPARATORS[`Numeric${op}`] = 'number';
  COMPARATORS[`Timestamp${op}`] = 'timestamp';
  COMPARATORS[`String${op}Path`] = 'path';
  COMPARATORS[`Numeric${op}Path`] = 'path';
  COMPARATORS[`Timestamp${op}Path`] = 'path';
}
Object.assign(COMPARATORS, {
  StringMatches: 'string',
  BooleanEquals: 'boolean',
  BooleanEqualsPath: 'path',
  IsNull: 'boolean',
  IsPresent: 'boolean',
  IsNumeric: 'boolean',
  IsString: 'boolean',
  IsBoolean: 'boolean',
  IsTimestamp: 'boolean',
});

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Checks a Choice state's `Choices` and `Default`. */
export function checkChoices(
  ctx: CheckContext,
  state: JsonObject,
  location: string,
  language: QueryLanguage,
): void {
  const choices = state.Choices;
  if (!Array.isArray(choices) || choices.length === 0) {
    ctx.problems.schema(pointer(location, 'Choices'), 'A Choice state must have a non-empty "Choices" array');
    return;
  }
  choices.forEach((rule, index) => {
    const at = pointer(location, 'Choices', index);
    if (!isJsonObject(rule)) {
      ctx.problems.schema(at, `A choice rule must be an object, not ${describe(rule)}`);
      return;
    }
    if (typeof rule.Next !== 'string')
      ctx.problems.schema(pointer(at, 'Next'), 'A top-level choice rule must have a string "Next"');
    if (rule.Assign !== undefined)
      checkAssign(ctx, rule.Assign, pointer(at, 'Assign'), language === 'JSONata');
    if (language === 'JSONata') checkJsonataRule(ctx, rule, at);
    else checkJsonPathRule(ctx, rule, at, true);
  });
  if (state.Default !== undefined && typeof state.Default !== 'string') {
    ctx.problems.schema(
      pointer(location, 'Default'),
      `"Default" must be a state name, not ${describe(state.Default)}`,
    );
  }
}

function checkJsonataRule(ctx: CheckContext, rule: JsonObject, at: string): void {
  for (const key of Object.keys(rule)) {
    if (!['Condition', 'Next', 'Comment', 'Assign', 'Output'].includes(key)) {
      ctx.problems.schema(pointer(at, key), `The field "${key}" is not supported in a JSONata choice rule`);
    }
  }
  const condition = rule.Condition;
  if (condition === undefined)
    ctx.problems.schema(pointer(at, 'Condition'), 'A JSONata choice rule must have a "Condition"');
  else if (typeof condition !== 'boolean' && jsonataExpression(condition) === undefined) {
    ctx.problems.schema(
      pointer(at, 'Condition'),
      `"Condition" must be a boolean or a JSONata expression "{% ... %}", not ${describe(condition)}`,
    );
  } else checkJsonataValue(ctx, condition, pointer(at, 'Condition'));
  if (rule.Output !== undefined) checkJsonataValue(ctx, rule.Output, pointer(at, 'Output'));
}

function checkJsonPathRule(ctx: CheckContext, rule: JsonObject, at: string, topLevel: boolean): void {
  const allowed = new Set(['Variable', 'And', 'Or', 'Not', 'Comment', ...Object.keys(COMPARATORS)]);
  if (topLevel) {
    allowed.add('Next');
    allowed.add('Assign');
  }
  for (const key of Object.keys(rule)) {
    if (!allowed.has(key)) {
      const why =
        key === 'Next'
          ? 'only a top-level choice rule has "Next"'
          : key === 'Condition'
            ? '"Condition" is for JSONata states'
            : 'not a choice rule field';
      ctx.problems.schema(pointer(at, key), `The field "${key}" is not supported here: ${why}`);
    }
  }
  const combinators = ['And', 'Or', 'Not'].filter((key) => rule[key] !== undefined);
  const comparators = Object.keys(rule).filter((key) => key in COMPARATORS);
  if (combinators.length + comparators.length !== 1) {
    ctx.problems.schema(
      at,
      combinators.length + comparators.length === 0
        ? 'A choice rule must have one comparison operator (with "Variable") or one of "And", "Or", "Not"'
        : `A choice rule must have exactly one operator, found ${[...combinators, ...comparators].join(', ')}`,
    );
  }
  for (const key of combinators) {
    const nested = rule[key];
    if (key === 'Not') {
      if (isJsonObject(nested)) checkJsonPathRule(ctx, nested, pointer(at, 'Not'), false);
      else
        ctx.problems.schema(
          pointer(at, 'Not'),
          `"Not" must hold one choice rule object, not ${describe(nested)}`,
        );
      continue;
    }
    if (!Array.isArray(nested) || nested.length === 0) {
      ctx.problems.schema(pointer(at, key), `"${key}" must be a non-empty array of choice rules`);
      continue;
    }
    nested.forEach((inner, index) => {
      if (isJsonObject(inner)) checkJsonPathRule(ctx, inner, pointer(at, key, index), false);
      else
        ctx.problems.schema(
          pointer(at, key, index),
          `A choice rule must be an object, not ${describe(inner)}`,
        );
    });
  }
  if (combinators.length > 0 && rule.Variable !== undefined) {
    ctx.problems.schema(pointer(at, 'Variable'), '"Variable" cannot be combined with "And", "Or" or "Not"');
  }
  if (comparators.length === 0) return;
  if (typeof rule.Variable !== 'string') {
    ctx.problems.schema(
      pointer(at, 'Variable'),
      'A comparison must have a string "Variable" (a reference path)',
    );
  } else {
    const problem = pathSyntaxError(rule.Variable, { reference: true });
    if (problem) ctx.problems.schema(pointer(at, 'Variable'), problem);
  }
  for (const op of comparators) checkOperand(ctx, op, rule[op], pointer(at, op));
}

function checkOperand(ctx: CheckContext, op: string, value: unknown, at: string): void {
  const operand = COMPARATORS[op];
  if (operand === 'path') {
    const problem =
      typeof value === 'string'
        ? pathSyntaxError(value, { reference: true })
        : `must be a reference path, not ${describe(value)}`;
    if (problem) ctx.problems.schema(at, `${op}: ${problem}`);
    return;
  }
  const ok =
    operand === 'number'
      ? typeof value === 'number'
      : operand === 'boolean'
        ? typeof value === 'boolean'
        : operand === 'timestamp'
          ? typeof value === 'string' && RFC3339.test(value)
          : typeof value === 'string';
  if (!ok) {
    const expected = operand === 'timestamp' ? 'an ISO-8601 timestamp string' : `a ${operand}`;
    ctx.problems.schema(at, `${op} must be ${expected}, not ${describe(value)}`);
  }
}

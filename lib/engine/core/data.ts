/**
 * The one place where the interpreter calls the data-flow functions of lib/engine/dataflow,
 * so each state handler reads as AWS's processing order and nothing else.
 */

import type { ExpressionCache } from '../dataflow/expression-cache.ts';
import {
  applyInputPath,
  applyOutputPath,
  applyResultPath,
  evaluateAssign,
  evaluateChoiceRule,
  evaluateJsonataCondition,
  evaluateJsonataTemplate,
  jsonText,
  parseTimestamp,
  resolveDynamicValue,
  resolvePayloadTemplate,
  selectPath,
  type Variables,
} from '../dataflow/index.ts';
import { type QueryLanguage, StatesError } from '../types.ts';

export type { Variables };

/** `$states` and the variables a JSONata expression sees. */
export interface JsonataScope {
  readonly input: unknown;
  readonly context: unknown;
  readonly result?: unknown;
  readonly errorOutput?: unknown;
  readonly variables: Variables;
  /** The engine's parsed and compiled expressions. */
  readonly expressions?: ExpressionCache;
}

export {
  applyInputPath,
  applyOutputPath,
  applyResultPath,
  resolveDynamicValue,
  resolvePayloadTemplate,
  selectPath,
};

/** Evaluates a JSONata field value (a `{% %}` string, or an object/array holding them) . */
export async function jsonataValue(template: unknown, scope: JsonataScope, field: string): Promise<unknown> {
  return evaluateJsonataTemplate(template, scope, field);
}

export async function jsonataCondition(condition: unknown, scope: JsonataScope): Promise<boolean> {
  return evaluateJsonataCondition(condition as string, scope);
}

/** A JSONPath Choice rule. */
export function choiceRuleMatches(
  rule: Record<string, unknown>,
  input: unknown,
  context: unknown,
  variables: Variables,
  expressions: ExpressionCache,
): boolean {
  return evaluateChoiceRule(rule, input, context, variables, expressions);
}

/**
 * Evaluates an Assign block against the variables as they were before the state, returning the
 * new variable bindings (the caller merges them). For JSONPath `$` is the error output, else the
 * result, else the input of `scope`.
 */
export async function assignVariables(
  assign: unknown,
  language: QueryLanguage,
  scope: JsonataScope,
): Promise<Variables> {
  return evaluateAssign(assign as Record<string, unknown>, language, scope);
}

/** Epoch milliseconds of an ISO-8601 extended offset timestamp, or undefined if it is not one. */
export function timestampMillis(text: unknown): number | undefined {
  const instant = parseTimestamp(text);
  return instant === undefined ? undefined : instant.epochSeconds * 1000 + Math.floor(instant.nanos / 1e6);
}

/**
 * The number a *Path field (MaxConcurrencyPath, ToleratedFailureCountPath, TimeoutSecondsPath...)
 * refers to. AWS takes a numeric string ("1") as its number; any other value (or one below `min`)
 * fails with its text in quotes: `The MaxConcurrencyPath field refers to value "NoNumber" which is
 * not a valid integer: $.V` (a string as it is, anything else as JSON).
 */
export function pathNumber(
  field: string,
  value: unknown,
  kind: 'integer' | 'float',
  path: string,
  min = Number.NEGATIVE_INFINITY,
): number {
  const number = typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  if (typeof number === 'number' && (kind === 'float' || Number.isInteger(number)) && number >= min)
    return number;
  const shown = typeof value === 'string' ? value : jsonText(value);
  throw new StatesError(
    'States.Runtime',
    `The ${field} field refers to value "${shown}" which is not a valid ${kind}: ${path}`,
  );
}

/** JSONata query language: `{% expr %}` templates, Choice conditions, with `$states` and variables bound. */
import jsonata from 'jsonata';
import { isJsonObject, StatesError } from '../../types.ts';
import { queryEvaluationError } from '../errors.ts';
import type { CompiledJsonata, ExpressionCache } from '../expression-cache.ts';
import { jsonText, jsonTypeName, setOwn } from '../json.ts';
import type { FieldName, Variables } from '../paths.ts';
import { AWS_JSONATA_FUNCTIONS } from './functions.ts';

/** What a JSONata expression can see: `$states.input`, `$states.context`, `$states.result`, `$states.errorOutput`, variables. */
export interface JsonataBindings {
  input: unknown;
  context: unknown;
  result?: unknown;
  errorOutput?: unknown;
  variables: Variables;
  /** The engine's expressions compiled so far (without it, each evaluation compiles its expression). */
  expressions?: ExpressionCache;
}

const EXPRESSION = /^\{%([\s\S]*)%\}$/;

/** The JSONata text of a `{% expr %}` string, or undefined when the string is a plain value. */
export function jsonataExpressionOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = EXPRESSION.exec(value);
  return m ? (m[1] as string).trim() : undefined;
}

function compiledExpression(
  expression: string,
  field: FieldName,
  cache: ExpressionCache | undefined,
): CompiledJsonata {
  const kept = cache?.jsonata(expression);
  if (kept !== undefined) return kept;
  const compiled = compileExpression(expression, field);
  cache?.keepJsonata(expression, compiled);
  return compiled;
}

function compileExpression(expression: string, field: FieldName): CompiledJsonata {
  let expr: CompiledJsonata;
  try {
    expr = jsonata(expression);
  } catch (error) {
    throw queryEvaluationError(
      `The JSONata expression '${expression}' specified for the field '${field}' could not be parsed. ${jsonataErrorText(error)}`,
    );
  }
  if (/\$eval\s*\(/.test(expression)) {
    throw queryEvaluationError(
      `The JSONata expression '${expression}' specified for the field '${field}' uses the function '$eval', which is not supported.`,
    );
  }
  for (const fn of AWS_JSONATA_FUNCTIONS) expr.registerFunction(fn.name, fn.implementation, fn.signature);
  return expr;
}

function jsonataErrorText(error: unknown): string {
  const e = error as { code?: string; message?: string };
  return e.code ? `${e.code}: ${e.message}` : String(e.message ?? error);
}

function statesBinding(bindings: JsonataBindings): Record<string, unknown> {
  const states: Record<string, unknown> = { input: bindings.input, context: bindings.context };
  if (bindings.result !== undefined) states.result = bindings.result;
  if (bindings.errorOutput !== undefined) states.errorOutput = bindings.errorOutput;
  return states;
}

/** Evaluates one JSONata expression; `undefined` means it returned nothing. */
export async function evaluateJsonataExpression(
  expression: string,
  bindings: JsonataBindings,
  field: FieldName,
): Promise<unknown> {
  const expr = compiledExpression(expression, field, bindings.expressions);
  const scope: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(bindings.variables)) setOwn(scope, name, value);
  scope.states = statesBinding(bindings);
  let result: unknown;
  try {
    result = await expr.evaluate(undefined, scope);
  } catch (error) {
    if (error instanceof StatesError) throw error;
    throw queryEvaluationError(
      `The JSONata expression '${expression}' specified for the field '${field}' threw an error during evaluation. ${jsonataErrorText(error)}`,
    );
  }
  return toJson(result, expression, field);
}

/** Turns JSONata's result (sequences, functions, NaN) into plain JSON, as AWS serializes it. */
function toJson(value: unknown, expression: string, field: FieldName): unknown {
  if (value === undefined) return undefined;
  if (typeof value === 'function') {
    throw queryEvaluationError(
      `The JSONata expression '${expression}' specified for the field '${field}' returned an unsupported result type.`,
    );
  }
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw queryEvaluationError(
      `The JSONata expression '${expression}' specified for the field '${field}' returned a number that is not valid JSON.`,
    );
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      const json = toJson(item, expression, field);
      if (json !== undefined) out.push(json);
    }
    return out;
  }
  if (isJsonObject(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const json = toJson(value[key], expression, field);
      if (json !== undefined) setOwn(out, key, json);
    }
    return out;
  }
  return value;
}

/**
 * Walks a JSONata-state field (Arguments, Output, Items, ...): every string that is exactly
 * `{% expr %}` is evaluated; a nested field that returns nothing is AWS's "returned nothing (undefined)" error.
 */
export async function evaluateJsonataTemplate(
  value: unknown,
  bindings: JsonataBindings,
  field: FieldName,
): Promise<unknown> {
  const expression = jsonataExpressionOf(value);
  if (expression !== undefined) {
    const result = await evaluateJsonataExpression(expression, bindings, field);
    if (result === undefined) {
      throw queryEvaluationError(
        `The JSONata expression '${expression}' specified for the field '${field}' returned nothing (undefined).`,
      );
    }
    return result;
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++)
      out.push(await evaluateJsonataTemplate(value[i], bindings, `${field}[${i}]`));
    return out;
  }
  if (isJsonObject(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value))
      setOwn(out, key, await evaluateJsonataTemplate(value[key], bindings, `${field}/${key}`));
    return out;
  }
  return value;
}

/** A Choice rule's `Condition`: must evaluate to a boolean. */
export async function evaluateJsonataCondition(
  condition: unknown,
  bindings: JsonataBindings,
): Promise<boolean> {
  // A literal boolean Condition is allowed (AWS evaluates `"Condition": true` as is).
  if (typeof condition === 'boolean') return condition;
  const expression = jsonataExpressionOf(condition);
  if (expression === undefined) {
    throw queryEvaluationError(
      `The Condition field must be a JSONata expression enclosed in {% %}, but was ${jsonText(condition)}.`,
    );
  }
  const result = await evaluateJsonataExpression(expression, bindings, 'Condition');
  if (result === undefined) {
    throw queryEvaluationError(
      `The JSONata expression '${expression}' specified for the field 'Condition' returned nothing (undefined).`,
    );
  }
  if (typeof result !== 'boolean') {
    throw queryEvaluationError(
      `The JSONata expression '${expression}' specified for the field 'Condition' returned an unexpected result type. Expected 'boolean', but was '${jsonTypeName(result)}' for value: ${jsonText(result)}`,
    );
  }
  return result;
}

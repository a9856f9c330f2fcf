import { isJsonObject } from '../types.ts';
import { type CheckContext, describe } from './context.ts';
import { intrinsicSyntaxError, looksLikeIntrinsic } from './intrinsics.ts';
import { jsonataExpression, jsonataSyntaxError } from './jsonata-syntax.ts';
import { pathSyntaxError } from './paths.ts';
import { pointer } from './problems.ts';

/** Checks a JSONPath payload template (Parameters, ResultSelector, ItemSelector, Assign): every `.$` field. */
export function checkPayloadTemplate(ctx: CheckContext, value: unknown, location: string): void {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) checkPayloadTemplate(ctx, item, pointer(location, index));
    return;
  }
  if (!isJsonObject(value)) return;
  const plainNames = new Set<string>();
  for (const [key, field] of Object.entries(value)) {
    const at = pointer(location, key);
    const name = key.endsWith('.$') ? key.slice(0, -2) : key;
    if (plainNames.has(name))
      ctx.problems.schema(at, `The field "${name}" is given twice (with and without ".$")`);
    plainNames.add(name);
    if (!key.endsWith('.$')) {
      checkPayloadTemplate(ctx, field, at);
      continue;
    }
    const problem = dynamicValueError(field);
    if (problem) ctx.problems.schema(at, problem);
  }
}

/** Why the value of a `.$` field (a path or an intrinsic call) is invalid, or undefined. */
export function dynamicValueError(value: unknown): string | undefined {
  if (typeof value !== 'string') {
    return `A field ending in ".$" must be a string holding a path or an intrinsic function, not ${describe(value)}`;
  }
  if (looksLikeIntrinsic(value)) return intrinsicSyntaxError(value);
  if (value.startsWith('$')) return pathSyntaxError(value);
  return `The value for the field must be a valid JSONPath or a valid intrinsic function call, not ${describe(value)}`;
}

/** Checks every `{% ... %}` expression inside a JSONata-state field value. */
export function checkJsonataValue(ctx: CheckContext, value: unknown, location: string): void {
  const expression = jsonataExpression(value);
  if (expression !== undefined) {
    const problem = jsonataSyntaxError(expression);
    if (problem) ctx.problems.schema(location, problem);
    return;
  }
  if (Array.isArray(value))
    for (const [index, item] of value.entries()) checkJsonataValue(ctx, item, pointer(location, index));
  else if (isJsonObject(value)) {
    for (const [key, field] of Object.entries(value)) checkJsonataValue(ctx, field, pointer(location, key));
  }
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Checks an `Assign` block: an object whose keys are variable names. */
export function checkAssign(ctx: CheckContext, value: unknown, location: string, jsonata: boolean): void {
  if (!isJsonObject(value)) {
    ctx.problems.schema(location, `Assign must be an object, not ${describe(value)}`);
    return;
  }
  for (const key of Object.keys(value)) {
    const name = !jsonata && key.endsWith('.$') ? key.slice(0, -2) : key;
    if (!VARIABLE_NAME.test(name) || name.length > 80) {
      ctx.problems.schema(
        pointer(location, key),
        `"${name}" is not a valid variable name (a letter or "_", then letters, digits or "_", at most 80 characters)`,
      );
    }
  }
  if (jsonata) checkJsonataValue(ctx, value, location);
  else checkPayloadTemplate(ctx, value, location);
}

/** JSONPath payload templates: Parameters, ResultSelector, ItemSelector, Assign (JSONPath), Fail paths. */

import { isJsonObject } from '../types.ts';
import { runtimeError } from './errors.ts';
import type { ExpressionCache } from './expression-cache.ts';
import { evaluateIntrinsic } from './intrinsics/evaluate.ts';
import { isIntrinsicExpression } from './intrinsics/parse.ts';
import { setOwn } from './json.ts';
import { type FieldName, selectPath, type Variables } from './paths.ts';

/**
 * Resolves a payload template: every key ending in `.$` is replaced by a key without the suffix
 * whose value is the JSONPath (`$` input, `$$` context, `$name` variable) or intrinsic function
 * result; everything else is copied as is, recursively (also inside arrays).
 */
export function resolvePayloadTemplate(
  template: unknown,
  input: unknown,
  context: unknown,
  variables: Variables,
  field: FieldName,
  cache?: ExpressionCache,
): unknown {
  if (Array.isArray(template))
    return template.map((item) => resolvePayloadTemplate(item, input, context, variables, field, cache));
  if (!isJsonObject(template)) return template;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(template)) {
    const value = template[key];
    if (key.endsWith('.$')) {
      setOwn(out, key.slice(0, -2), resolveDynamicValue(value, input, context, variables, key, cache));
    } else {
      setOwn(out, key, resolvePayloadTemplate(value, input, context, variables, field, cache));
    }
  }
  return out;
}

/** The value of one `.$` field: a path or an intrinsic function call. */
export function resolveDynamicValue(
  expression: unknown,
  input: unknown,
  context: unknown,
  variables: Variables,
  field: FieldName,
  cache?: ExpressionCache,
): unknown {
  if (typeof expression !== 'string') {
    throw runtimeError(
      `The value for the field '${field}' must be a valid JSONPath or a valid intrinsic function call, but was ${JSON.stringify(expression)}`,
    );
  }
  if (isIntrinsicExpression(expression))
    return evaluateIntrinsic(expression, input, context, variables, field, cache);
  return selectPath(input, expression.trim(), context, variables, field, cache);
}

/** The Assign field: every value is computed from the state BEFORE any assignment, then all are stored. */

import { isJsonObject } from '../types.ts';
import { setOwn } from './json.ts';
import { evaluateJsonataTemplate, type JsonataBindings } from './jsonata/evaluate.ts';
import type { Variables } from './paths.ts';
import { resolveDynamicValue, resolvePayloadTemplate } from './payload-template.ts';

/**
 * Evaluates Assign and returns only the newly assigned variables (the caller merges them into
 * the scope). In JSONPath, `$` is the error output in a Catch (bindings.errorOutput), else the
 * state's result (bindings.result), else its input; in JSONata every value may use `{% %}`.
 */
export async function evaluateAssign(
  assign: Record<string, unknown>,
  language: 'JSONPath' | 'JSONata',
  bindings: JsonataBindings,
): Promise<Variables> {
  const assigned: Variables = {};
  if (language === 'JSONata') {
    for (const name of Object.keys(assign)) {
      setOwn(assigned, name, await evaluateJsonataTemplate(assign[name], bindings, `Assign/${name}`));
    }
    return assigned;
  }
  const data =
    bindings.errorOutput !== undefined
      ? bindings.errorOutput
      : bindings.result !== undefined
        ? bindings.result
        : bindings.input;
  for (const key of Object.keys(assign)) {
    const value = assign[key];
    if (key.endsWith('.$')) {
      setOwn(
        assigned,
        key.slice(0, -2),
        resolveDynamicValue(value, data, bindings.context, bindings.variables, key, bindings.expressions),
      );
    } else {
      setOwn(
        assigned,
        key,
        isJsonObject(value) || Array.isArray(value)
          ? resolvePayloadTemplate(
              value,
              data,
              bindings.context,
              bindings.variables,
              key,
              bindings.expressions,
            )
          : value,
      );
    }
  }
  return assigned;
}

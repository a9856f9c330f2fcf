/** JSONPath data-flow fields: InputPath, OutputPath, ResultPath, and path lookups with AWS's messages. */

import { isJsonObject } from '../types.ts';
import { runtimeError } from './errors.ts';
import type { ExpressionCache } from './expression-cache.ts';
import { getOwn, jsonText, setOwn } from './json.ts';
import { pathText } from './jsonpath/ast.ts';
import { evaluatePath, PathNotFoundError } from './jsonpath/evaluate.ts';
import { JsonPathSyntaxError, parsePath } from './jsonpath/parse.ts';

export type Variables = Record<string, unknown>;
/** Where a value came from, for AWS's messages, e.g. 'InputPath', 'Parameters', 'value.$'. */
export type FieldName = string;

/**
 * Fields whose failed lookups AWS reports in Jayway's words
 * ("Invalid path '$.x' : No results for path: $['x']"); other fields get
 * "The JSONPath '$.x' specified for the field 'F' could not be found in the input '...'".
 */
const JAYWAY_WORDED_FIELDS: ReadonlySet<string> = new Set([
  'InputPath',
  'OutputPath',
  'ItemsPath',
  'HeartbeatSecondsPath',
  'TimeoutSecondsPath',
  'SecondsPath',
  'TimestampPath',
  'MaxConcurrencyPath',
  'ToleratedFailureCountPath',
  'ToleratedFailurePercentagePath',
  'Variable',
]);

/**
 * Full JSONPath lookup (`$` = data, `$$` = context, `$name` = variable) with AWS's error for the
 * field; `cache` (the engine's) spares parsing the path again.
 */
export function selectPath(
  data: unknown,
  path: string,
  context: unknown,
  variables: Variables,
  field: FieldName,
  cache?: ExpressionCache,
): unknown {
  try {
    return evaluatePath(parsePath(path, cache), { input: data, context, variables });
  } catch (error) {
    if (error instanceof PathNotFoundError || error instanceof JsonPathSyntaxError) {
      const detail = error instanceof PathNotFoundError ? error.detail : error.reason;
      if (JAYWAY_WORDED_FIELDS.has(field)) throw runtimeError(`Invalid path '${path}' : ${detail}`);
      throw runtimeError(
        `The JSONPath '${path}' specified for the field '${field}' could not be found in the input '${jsonText(data)}'`,
      );
    }
    throw error;
  }
}

/** InputPath: null → {}; absent → the whole input. */
export function applyInputPath(
  input: unknown,
  inputPath: string | null | undefined,
  context: unknown,
  variables: Variables,
  cache?: ExpressionCache,
): unknown {
  if (inputPath === null) return {};
  if (inputPath === undefined || inputPath === '$') return input;
  return selectPath(input, inputPath, context, variables, 'InputPath', cache);
}

/** OutputPath: null → {}; absent → the whole output. */
export function applyOutputPath(
  output: unknown,
  outputPath: string | null | undefined,
  context: unknown,
  variables: Variables,
  cache?: ExpressionCache,
): unknown {
  if (outputPath === null) return {};
  if (outputPath === undefined || outputPath === '$') return output;
  return selectPath(output, outputPath, context, variables, 'OutputPath', cache);
}

/**
 * ResultPath: null → the input unchanged; absent or '$' → the result; a reference path →
 * a copy of the input with the result placed there, creating missing objects on the way.
 * The input is never mutated (only the objects along the path are copied).
 */
export function applyResultPath(
  input: unknown,
  result: unknown,
  resultPath: string | null | undefined,
  cache?: ExpressionCache,
): unknown {
  if (resultPath === null) return input;
  if (resultPath === undefined || resultPath === '$') return result;
  let parsed: ReturnType<typeof parsePath>;
  try {
    parsed = parsePath(resultPath, cache);
  } catch (error) {
    if (error instanceof JsonPathSyntaxError)
      throw runtimeError(`Invalid path '${resultPath}' : ${error.reason}`);
    throw error;
  }
  if (
    parsed.root.kind !== 'input' ||
    !parsed.definite ||
    parsed.segments.some((s) => s.kind === 'function')
  ) {
    throw runtimeError(`Invalid path '${resultPath}': ResultPath must be a reference path`);
  }
  return setAt(input, parsed.segments as readonly ReferenceStep[], 0, result, resultPath, '$');
}

type ReferenceStep =
  | { readonly kind: 'property'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number };

function setAt(
  target: unknown,
  steps: readonly ReferenceStep[],
  i: number,
  value: unknown,
  resultPath: string,
  at: string,
): unknown {
  const step = steps[i];
  if (!step) return value;
  if (step.kind === 'property') {
    const base = target === undefined ? {} : target;
    if (!isJsonObject(base)) {
      throw runtimeError(
        `Unable to apply ResultPath '${resultPath}': ${at} is ${jsonText(base)}, not an object with property '${step.name}'`,
      );
    }
    const copy: Record<string, unknown> = {};
    for (const k of Object.keys(base)) setOwn(copy, k, base[k]);
    const hit = getOwn(base, step.name);
    setOwn(
      copy,
      step.name,
      setAt(hit.found ? hit.value : undefined, steps, i + 1, value, resultPath, `${at}['${step.name}']`),
    );
    return copy;
  }
  const index = Array.isArray(target) && step.index < 0 ? target.length + step.index : step.index;
  if (!Array.isArray(target) || index < 0 || index >= target.length) {
    throw runtimeError(`Unable to apply ResultPath '${resultPath}': ${at}[${step.index}] does not exist`);
  }
  const copy = [...target];
  copy[index] = setAt(target[index], steps, i + 1, value, resultPath, `${at}[${index}]`);
  return copy;
}

/** Jayway's canonical text of a path (e.g. `$['a'][0]`), for messages that quote it. */
export function canonicalPathText(path: string): string {
  return pathText(parsePath(path));
}

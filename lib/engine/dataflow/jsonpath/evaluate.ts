/** Evaluates parsed JSONPath expressions with Jayway's semantics (the library AWS's messages come from). */

import { isJsonObject } from '../../types.ts';
import { getOwn, jsonEquals } from '../json.ts';
import {
  type FilterExpression,
  type ParsedPath,
  pathText,
  rootText,
  type Segment,
  segmentText,
} from './ast.ts';

/** A definite path that names nothing, with Jayway's explanation (e.g. `No results for path: $['x']`). */
export class PathNotFoundError extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'PathNotFoundError';
  }
}

/** The values a path can start from. */
export interface PathRoots {
  readonly input: unknown;
  readonly context: unknown;
  readonly variables: Record<string, unknown>;
  /** The current item inside a filter (`@`). */
  readonly current?: unknown;
}

interface PathNode {
  readonly value: unknown;
  /** Jayway's rendering of where the value sits, e.g. `$['a'][0]`. */
  readonly at: string;
}

/**
 * Evaluates a path: a definite path returns its single value or throws PathNotFoundError;
 * an indefinite path (wildcards, slices, unions, filters, `..`) returns the array of matches.
 */
export function evaluatePath(path: ParsedPath, roots: PathRoots): unknown {
  const start = rootValue(path, roots);
  let nodes: PathNode[] = [{ value: start, at: rootText(path.root) }];
  // Jayway only raises lookup errors on definite paths; an indefinite path just matches nothing.
  const upstreamDefinite = path.definite;
  const last = path.segments.length - 1;
  path.segments.forEach((segment, i) => {
    const next: PathNode[] = [];
    for (const node of nodes) applySegment(segment, node, i === last, upstreamDefinite, roots, next);
    nodes = next;
  });
  if (path.definite) {
    const first = nodes[0];
    if (!first) throw new PathNotFoundError(`No results for path: ${pathText(path)}`);
    return first.value;
  }
  return nodes.map((n) => n.value);
}

function rootValue(path: ParsedPath, roots: PathRoots): unknown {
  switch (path.root.kind) {
    case 'input':
      return roots.input;
    case 'context':
      return roots.context;
    case 'current':
      return roots.current;
    case 'variable': {
      const { name } = path.root;
      if (!Object.hasOwn(roots.variables, name))
        throw new PathNotFoundError(`No results for path: ${pathText(path)}`);
      return roots.variables[name];
    }
  }
}

function javaTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'java.util.ArrayList';
  if (typeof value === 'string') return 'java.lang.String';
  if (typeof value === 'boolean') return 'java.lang.Boolean';
  if (typeof value === 'number') return Number.isInteger(value) ? 'java.lang.Integer' : 'java.lang.Double';
  return 'java.util.LinkedHashMap';
}

function applySegment(
  segment: Segment,
  node: PathNode,
  leaf: boolean,
  upstreamDefinite: boolean,
  roots: PathRoots,
  out: PathNode[],
): void {
  const { value, at } = node;
  switch (segment.kind) {
    case 'property': {
      const fragment = segmentText(segment);
      if (!isJsonObject(value)) {
        if (!upstreamDefinite) return;
        throw new PathNotFoundError(
          `Expected to find an object with property ${fragment} in path ${at} but found '${javaTypeName(value)}'. ` +
            `This is not a json object according to the JsonProvider: 'com.jayway.jsonpath.spi.json.JacksonJsonProvider'.`,
        );
      }
      const hit = getOwn(value, segment.name);
      if (!hit.found) {
        if (!leaf && upstreamDefinite)
          throw new PathNotFoundError(`Missing property in path ${at}${fragment}`);
        return;
      }
      out.push({ value: hit.value, at: at + fragment });
      return;
    }
    case 'index': {
      if (!Array.isArray(value)) {
        if (!upstreamDefinite) return;
        if (value === null || value === undefined) throw new PathNotFoundError(`The path ${at} is null`);
        throw new PathNotFoundError(
          `Filter: ${segmentText(segment)} can only be applied to arrays. Current context is: ${JSON.stringify(value)}`,
        );
      }
      const i = segment.index < 0 ? value.length + segment.index : segment.index;
      if (i >= 0 && i < value.length) out.push({ value: value[i], at: `${at}[${i}]` });
      return;
    }
    case 'wildcard': {
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) out.push({ value: value[i], at: `${at}[${i}]` });
      } else if (isJsonObject(value)) {
        for (const k of Object.keys(value)) out.push({ value: value[k], at: `${at}['${k}']` });
      }
      return;
    }
    case 'slice': {
      if (!Array.isArray(value)) return;
      for (const i of sliceIndexes(value.length, segment)) out.push({ value: value[i], at: `${at}[${i}]` });
      return;
    }
    case 'union': {
      for (const key of segment.keys) {
        if (typeof key === 'number' && Array.isArray(value)) {
          const i = key < 0 ? value.length + key : key;
          if (i >= 0 && i < value.length) out.push({ value: value[i], at: `${at}[${i}]` });
        } else if (typeof key === 'string' && isJsonObject(value)) {
          const hit = getOwn(value, key);
          if (hit.found) out.push({ value: hit.value, at: `${at}['${key}']` });
        }
      }
      return;
    }
    case 'filter': {
      if (Array.isArray(value)) {
        value.forEach((item, i) => {
          if (testFilter(segment.predicate, item, roots)) out.push({ value: item, at: `${at}[${i}]` });
        });
      } else if (isJsonObject(value) && testFilter(segment.predicate, value, roots)) {
        out.push({ value, at });
      }
      return;
    }
    case 'descendants': {
      const stack: PathNode[] = [node];
      while (stack.length > 0) {
        const current = stack.pop() as PathNode;
        applySegment(segment.step, current, true, false, roots, out);
        const children: PathNode[] = [];
        if (Array.isArray(current.value)) {
          current.value.forEach((v, i) => {
            if (typeof v === 'object' && v !== null) children.push({ value: v, at: `${current.at}[${i}]` });
          });
        } else if (isJsonObject(current.value)) {
          for (const [k, v] of Object.entries(current.value)) {
            if (typeof v === 'object' && v !== null) children.push({ value: v, at: `${current.at}['${k}']` });
          }
        }
        for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as PathNode);
      }
      return;
    }
    case 'function': {
      out.push({ value: applyFunction(segment.name, value, at), at: `${at}.${segment.name}()` });
      return;
    }
  }
}

function applyFunction(name: string, value: unknown, at: string): unknown {
  if (name === 'length' || name === 'size') {
    if (Array.isArray(value) || typeof value === 'string') return value.length;
    if (isJsonObject(value)) return Object.keys(value).length;
    throw new PathNotFoundError(`Invalid function ${name}() applied to ${at}`);
  }
  if (name === 'keys') {
    if (isJsonObject(value)) return Object.keys(value);
    throw new PathNotFoundError(`Invalid function keys() applied to ${at}`);
  }
  const numbers = Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number') : [];
  if (numbers.length === 0)
    throw new PathNotFoundError(`Aggregation function attempted to calculate value using empty array`);
  if (name === 'min') return Math.min(...numbers);
  if (name === 'max') return Math.max(...numbers);
  const sum = numbers.reduce((a, b) => a + b, 0);
  return name === 'sum' ? sum : sum / numbers.length;
}

function sliceIndexes(length: number, slice: { start?: number; end?: number; step?: number }): number[] {
  const step = slice.step ?? 1;
  const clamp = (n: number, low: number, high: number) => Math.min(Math.max(n, low), high);
  const norm = (n: number) => (n < 0 ? n + length : n);
  const out: number[] = [];
  if (step > 0) {
    const from = clamp(norm(slice.start ?? 0), 0, length);
    const to = clamp(norm(slice.end ?? length), 0, length);
    for (let i = from; i < to; i += step) out.push(i);
  } else {
    const from = clamp(norm(slice.start ?? length - 1), -1, length - 1);
    const to = slice.end === undefined ? -1 : clamp(norm(slice.end), -1, length - 1);
    for (let i = from; i > to; i += step) out.push(i);
  }
  return out;
}

const MISSING = Symbol('missing');

function operand(expression: FilterExpression, item: unknown, roots: PathRoots): unknown {
  switch (expression.kind) {
    case 'literal':
      return expression.value;
    case 'regex':
      return expression.regex;
    case 'path':
      try {
        return evaluatePath(expression.path, { ...roots, current: item });
      } catch (error) {
        if (error instanceof PathNotFoundError) return MISSING;
        throw error;
      }
    default:
      return testFilter(expression, item, roots);
  }
}

function testFilter(expression: FilterExpression, item: unknown, roots: PathRoots): boolean {
  switch (expression.kind) {
    case 'and':
      return testFilter(expression.left, item, roots) && testFilter(expression.right, item, roots);
    case 'or':
      return testFilter(expression.left, item, roots) || testFilter(expression.right, item, roots);
    case 'not':
      return !testFilter(expression.operand, item, roots);
    case 'path': {
      const value = operand(expression, item, roots);
      if (value === MISSING) return false;
      return expression.path.definite ? true : Array.isArray(value) && value.length > 0;
    }
    case 'literal':
      return expression.value === true;
    case 'regex':
      return false;
    case 'compare':
      return compare(
        expression.operator,
        operand(expression.left, item, roots),
        operand(expression.right, item, roots),
      );
  }
}

function compare(operator: string, left: unknown, right: unknown): boolean {
  if (left === MISSING || right === MISSING)
    return operator === '!=' && (left === MISSING) !== (right === MISSING);
  switch (operator) {
    case '==':
      return jsonEquals(left, right);
    case '!=':
      return !jsonEquals(left, right);
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const bothNumbers = typeof left === 'number' && typeof right === 'number';
      const bothStrings = typeof left === 'string' && typeof right === 'string';
      if (!bothNumbers && !bothStrings) return false;
      const l = left as number | string;
      const r = right as number | string;
      if (operator === '<') return l < r;
      if (operator === '<=') return l <= r;
      if (operator === '>') return l > r;
      return l >= r;
    }
    case '=~':
      return (
        right instanceof RegExp &&
        typeof left === 'string' &&
        new RegExp(`^(?:${right.source})$`, right.flags).test(left)
      );
    case 'in':
      return Array.isArray(right) && right.some((r) => jsonEquals(left, r));
    case 'nin':
      return Array.isArray(right) && !right.some((r) => jsonEquals(left, r));
    default:
      return false;
  }
}

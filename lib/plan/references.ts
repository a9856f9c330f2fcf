/**
 * `${steps.<id>.<output>}`, `${context.<key>}` and `${secrets.<name>}` inside plan
 * strings. Other `${...}` (shell variables such as `${HOME}`) are not references.
 */
import { pointerOf } from './source-map.ts';

export type ReferenceNamespace = 'steps' | 'context' | 'secrets';

export interface Reference {
  readonly namespace: ReferenceNamespace;
  /** Step id, context key or secret name. */
  readonly name: string;
  /** The step output (steps) or nested key (context); absent for secrets. */
  readonly field: string | undefined;
  /** The reference as written, e.g. `${steps.build.image}`. */
  readonly raw: string;
  /** Pointer of the string holding it, relative to the walked value. */
  readonly pointer: string;
  /** True when the pointer's syntax is wrong (e.g. `${steps.build}` has no output). */
  readonly malformed: boolean;
}

const CANDIDATE = /\$\{(steps|context|secrets)\.([^}]*)\}/g;
const WELL_FORMED = /^([A-Za-z][A-Za-z0-9_-]*)(?:\.([A-Za-z][A-Za-z0-9_-]*))?$/;
const WHOLE = /^\$\{(?:steps|context|secrets)\.[^}]*\}$/;

/** True when the whole string is one reference, so its type is only known at run time. */
export function isWholeReference(value: unknown): boolean {
  return typeof value === 'string' && WHOLE.test(value);
}

/** References in one string. */
export function referencesIn(text: string, pointer = ''): Reference[] {
  const found: Reference[] = [];
  if (!text.includes('${')) return found;
  for (const m of text.matchAll(CANDIDATE)) {
    const namespace = m[1] as ReferenceNamespace;
    const parts = WELL_FORMED.exec(m[2] ?? '');
    const field = parts?.[2];
    const malformed =
      !parts ||
      (namespace === 'steps' && field === undefined) ||
      (namespace === 'secrets' && field !== undefined);
    found.push({ namespace, name: parts?.[1] ?? m[2] ?? '', field, raw: m[0], pointer, malformed });
  }
  return found;
}

/** References in every string of a JSON-like value, walked iteratively; pointers are relative to `value`. */
export function referencesInValue(value: unknown): Reference[] {
  const found: Reference[] = [];
  const stack: Array<{ value: unknown; path: Array<string | number> }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === 'string') found.push(...referencesIn(current, pointerOf(path)));
    else if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) stack.push({ value: current[i], path: [...path, i] });
    } else if (current !== null && typeof current === 'object')
      for (const [k, v] of Object.entries(current)) stack.push({ value: v, path: [...path, k] });
  }
  return found;
}

/** Pointers (relative to `value`) of strings that are whole references. */
export function wholeReferencePointers(value: unknown): Set<string> {
  const found = new Set<string>();
  const stack: Array<{ value: unknown; path: Array<string | number> }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (isWholeReference(current)) found.add(pointerOf(path));
    else if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) stack.push({ value: current[i], path: [...path, i] });
    } else if (current !== null && typeof current === 'object')
      for (const [k, v] of Object.entries(current)) stack.push({ value: v, path: [...path, k] });
  }
  return found;
}

/** A `${steps.x.y}` reference as the gate shows it: filled at run time from step x's output y. */
export interface StepOutputReference {
  readonly raw: string;
  readonly step: string;
  readonly output: string;
}

/** The well-formed `${steps.x.y}` references in `value`, each once, in the order written. */
export function stepOutputReferences(value: unknown): StepOutputReference[] {
  const seen = new Map<string, StepOutputReference>();
  // In the order written: by where each string sits, then by place in the string.
  const found = referencesInValue(value).sort((a, b) =>
    a.pointer < b.pointer ? -1 : a.pointer > b.pointer ? 1 : 0,
  );
  for (const ref of found) {
    if (ref.namespace !== 'steps' || ref.malformed || ref.field === undefined || seen.has(ref.raw)) continue;
    seen.set(ref.raw, { raw: ref.raw, step: ref.name, output: ref.field });
  }
  return [...seen.values()];
}

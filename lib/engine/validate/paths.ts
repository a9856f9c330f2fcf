/**
 * Syntax of the paths ASL fields take in JSONPath states: a Path (`InputPath`, `OutputPath`,
 * `.$` payload fields) may select many nodes; a Reference Path (`ResultPath`, `ItemsPath`,
 * `Variable`, `*Path` comparisons) may only name one node (no wildcards, filters, slices or `..`).
 * Both may start at the input (`$`), the Context object (`$$`) or a variable (`$name`).
 */

export interface PathRules {
  /** Only single-node segments. @default false */
  readonly reference?: boolean;
  /** Allow `$$` (Context object) and `$name` (variables). @default true */
  readonly allowContextAndVariables?: boolean;
}

const NAME_CHAR = /[^.[\]\s()'"?,*:$@]/u;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*/;

/** Returns why `path` is not a valid path under `rules`, or undefined when it is. */
export function pathSyntaxError(path: string, rules: PathRules = {}): string | undefined {
  const kind = rules.reference ? 'reference path' : 'JSONPath';
  if (!path.startsWith('$')) return `"${path}" is not a valid ${kind}: it must start with "$"`;
  let i = 1;
  if (path[1] === '$' || IDENT.test(path.slice(1))) {
    if (rules.allowContextAndVariables === false) {
      return `"${path}" is not a valid ${kind} here: only the state input ("$") may be referenced`;
    }
    i = path[1] === '$' ? 2 : 1 + (IDENT.exec(path.slice(1))?.[0].length ?? 0);
  }
  while (i < path.length) {
    const next = segmentEnd(path, i, rules.reference === true);
    if (typeof next === 'string') return `"${path}" is not a valid ${kind}: ${next}`;
    i = next;
  }
  return undefined;
}

/** Index after the segment that starts at `i`, or the reason it is malformed. */
function segmentEnd(path: string, i: number, reference: boolean): number | string {
  const c = path[i];
  if (c === '.') {
    if (path[i + 1] === '.') {
      if (reference) return 'descendant ("..") is not allowed in a reference path';
      const after = i + 2;
      if (path[after] === '[') return bracketEnd(path, after, reference);
      if (path[after] === '*') return after + 1;
      return nameEnd(path, after);
    }
    if (path[i + 1] === '*') return reference ? 'wildcards are not allowed in a reference path' : i + 2;
    return nameEnd(path, i + 1);
  }
  if (c === '[') return bracketEnd(path, i, reference);
  return `unexpected "${c}" at position ${i + 1}`;
}

function nameEnd(path: string, start: number): number | string {
  let i = start;
  while (i < path.length && NAME_CHAR.test(path[i] ?? '')) i++;
  if (i === start) return `missing field name at position ${start + 1}`;
  return i;
}

function bracketEnd(path: string, open: number, reference: boolean): number | string {
  const close = matchingBracket(path, open);
  if (close < 0) return `unclosed "[" at position ${open + 1}`;
  const inner = path.slice(open + 1, close).trim();
  if (/^\d+$/.test(inner) || /^'(?:[^'\\]|\\.)*'$/.test(inner) || /^"(?:[^"\\]|\\.)*"$/.test(inner)) {
    return close + 1;
  }
  if (reference) return `"[${inner}]" selects more than one node, which a reference path may not`;
  if (inner === '*') return close + 1;
  if (/^-?\d+(\s*,\s*-?\d+)+$/.test(inner)) return close + 1;
  if (/^'(?:[^'\\]|\\.)*'(\s*,\s*'(?:[^'\\]|\\.)*')+$/.test(inner)) return close + 1;
  if (/^(-?\d+)?\s*:\s*(-?\d+)?(\s*:\s*-?\d+)?$/.test(inner)) return close + 1;
  if (/^-\d+$/.test(inner)) return close + 1;
  if (/^\?\s*\(.*\)$/s.test(inner) || /^\(.*\)$/s.test(inner)) return close + 1;
  return `invalid subscript "[${inner}]"`;
}

/** Index of the `]` closing the `[` at `open`, skipping quoted text and nested brackets; -1 if none. */
function matchingBracket(path: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < path.length; i++) {
    const c = path[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if (c === '[') depth++;
    else if (c === ']' && --depth === 0) return i;
  }
  return -1;
}

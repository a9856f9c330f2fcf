/**
 * Guards against hostile structure before and after parsing: nesting so deep that a
 * recursive parser would overflow its stack, and `__proto__` keys. All loops here are
 * iterative so they cannot overflow themselves.
 */
import { type PendingProblem, pointerOf } from './source-map.ts';

/** @default 100 levels of arrays/objects, far beyond any real plan. */
export const MAX_NESTING = 100;

/**
 * Offset where YAML text may nest deeper than `maxDepth`, or -1. An upper-bound
 * estimate: indentation levels + compact `- `/`? ` indicators on the line + open flow
 * brackets. The `yaml` package recurses per level, so this runs before it.
 */
export function yamlTooDeepAt(text: string, maxDepth = MAX_NESTING): number {
  const indents: number[] = [];
  let flow = 0;
  let offset = 0;
  while (offset <= text.length) {
    let end = text.indexOf('\n', offset);
    if (end === -1) end = text.length;
    let i = offset;
    while (i < end && text.charCodeAt(i) === 0x20) i++;
    const indent = i - offset;
    const blank = i >= end || text[i] === '#' || text[i] === '\r';
    if (!blank) {
      while (indents.length > 0 && (indents[indents.length - 1] ?? 0) >= indent) indents.pop();
      indents.push(indent);
      let compact = 0;
      while (i + 1 < end && (text[i] === '-' || text[i] === '?') && text[i + 1] === ' ') {
        compact++;
        i += 2;
        while (i < end && text.charCodeAt(i) === 0x20) i++;
      }
      for (; i < end; i++) {
        const c = text[i];
        if (c === '"' || c === "'") {
          for (i++; i < end && text[i] !== c; i++) if (c === '"' && text[i] === '\\') i++;
        } else if (c === '#' && text[i - 1] === ' ') break;
        else if (c === '[' || c === '{') {
          if (indents.length + compact + ++flow > maxDepth) return i;
        } else if ((c === ']' || c === '}') && flow > 0) flow--;
      }
      if (indents.length + compact + flow > maxDepth) return offset + indent;
    }
    offset = end + 1;
  }
  return -1;
}

/**
 * Walks a parsed document (iteratively): reports `__proto__` keys, which could swap an
 * object's prototype downstream, NUL characters in keys and strings, and nesting deeper than
 * `maxDepth`.
 */
export function checkParsedStructure(value: unknown, maxDepth = MAX_NESTING): PendingProblem[] {
  const problems: PendingProblem[] = [];
  const stack: Array<{ value: unknown; path: Array<string | number> }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    // A NUL written as an escape (`\u0000` in JSON, `\0` in YAML) survives the file's own NUL
    // check; no shell, URL or file name can carry it, so it is refused here, where it stands.
    if (typeof current === 'string' && current.includes('\0')) {
      problems.push({
        severity: 'error',
        code: 'nul-character',
        message: `a NUL character (U+0000) at offset ${current.indexOf('\0')}; plans are text`,
        pointer: pointerOf(path),
      });
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (path.length >= maxDepth) {
      problems.push({
        severity: 'error',
        code: 'too-deep',
        message: `nesting deeper than ${maxDepth} levels`,
        pointer: pointerOf(path),
      });
      break;
    }
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: [...path, i] });
      continue;
    }
    for (const key of Object.keys(current)) {
      if (key.includes('\0')) {
        problems.push({
          severity: 'error',
          code: 'nul-character',
          message: 'a NUL character (U+0000) in a key; plans are text',
          pointer: pointerOf([...path, key]),
        });
        continue;
      }
      if (key === '__proto__') {
        problems.push({
          severity: 'error',
          code: 'forbidden-key',
          message: 'key "__proto__" is not allowed in a plan',
          pointer: pointerOf([...path, key]),
        });
        continue;
      }
      stack.push({ value: (current as Record<string, unknown>)[key], path: [...path, key] });
    }
  }
  return problems;
}

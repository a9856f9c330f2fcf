/**
 * JSON plans: a small iterative scanner finds syntax errors (with their line:column,
 * which `JSON.parse` does not give), duplicate keys and excessive nesting, and later
 * maps JSON pointers back to positions. Values themselves come from `JSON.parse`.
 */
import { MAX_NESTING } from './nesting.ts';
import { LineIndex, type Position, pointerAndAncestors, type SourceMap, segmentsOf } from './source-map.ts';

interface Trie {
  readonly children: Map<string, Trie>;
  wanted: boolean;
  offset: number;
}

interface Frame {
  readonly kind: 'object' | 'array';
  readonly trie: Trie | undefined;
  count: number;
  readonly keys: Set<string> | undefined;
}

export interface JsonSyntaxError {
  readonly offset: number;
  readonly code: 'json-syntax' | 'duplicate-key' | 'too-deep';
  readonly message: string;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Scans JSON text once. Reports the first syntax error, duplicate key or excessive
 * nesting; records the offset of each pointer in `trie` (a member's offset is its key's).
 */
function scan(text: string, root: Trie | undefined, maxDepth: number): JsonSyntaxError | undefined {
  const stack: Frame[] = [];
  let expect: 'value' | 'firstElement' | 'after' | 'key' | 'firstKey' | 'colon' = 'value';
  let pending: Trie | undefined = root;
  let memberOffset = -1;
  let i = 0;
  const n = text.length;
  const fail = (offset: number, message: string, code: JsonSyntaxError['code'] = 'json-syntax') => ({
    offset,
    code,
    message,
  });
  for (;;) {
    while (i < n) {
      const w = text.charCodeAt(i);
      if (w === 0x20 || w === 0x0a || w === 0x0d || w === 0x09) i++;
      else break;
    }
    if (i >= n) {
      if (stack.length === 0 && expect === 'after') return undefined;
      return fail(n, 'unexpected end of JSON (is the file truncated?)');
    }
    const c = text[i]!;
    const top = stack[stack.length - 1];
    if (expect === 'firstElement') {
      if (c === ']') {
        stack.pop();
        i++;
        expect = 'after';
        continue;
      }
      pending = top?.trie?.children.get('0');
      memberOffset = -1;
      if (top) top.count = 1;
      expect = 'value';
    }
    if (expect === 'value') {
      if (pending?.wanted && pending.offset < 0) pending.offset = memberOffset >= 0 ? memberOffset : i;
      if (c === '{' || c === '[') {
        if (stack.length >= maxDepth) return fail(i, `nesting deeper than ${maxDepth} levels`, 'too-deep');
        const object = c === '{';
        stack.push({
          kind: object ? 'object' : 'array',
          trie: pending,
          count: 0,
          keys: object ? new Set() : undefined,
        });
        expect = object ? 'firstKey' : 'firstElement';
        i++;
      } else if (c === '"') {
        const end = stringEnd(text, i);
        if (typeof end !== 'number') return fail(end.offset, end.message);
        i = end;
        expect = 'after';
      } else if (c === 't' || c === 'f' || c === 'n') {
        const word = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
        if (!text.startsWith(word, i)) return fail(i, `unexpected "${preview(text, i)}"; expected a value`);
        i += word.length;
        expect = 'after';
      } else {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) return fail(i, `unexpected "${preview(text, i)}"; expected a value`);
        i = NUMBER.lastIndex;
        expect = 'after';
      }
      continue;
    }
    if (expect === 'after') {
      if (!top) return fail(i, `unexpected "${preview(text, i)}" after the end of the document`);
      if (c === ',') {
        i++;
        if (top.kind === 'object') expect = 'key';
        else {
          pending = top.trie?.children.get(String(top.count));
          top.count++;
          memberOffset = -1;
          expect = 'value';
        }
      } else if ((c === '}' && top.kind === 'object') || (c === ']' && top.kind === 'array')) {
        stack.pop();
        i++;
      } else
        return fail(
          i,
          `expected "," or "${top.kind === 'object' ? '}' : ']'}" but found "${preview(text, i)}"`,
        );
      continue;
    }
    if (expect === 'key' || expect === 'firstKey') {
      if (c === '}' && expect === 'firstKey') {
        stack.pop();
        i++;
        expect = 'after';
        continue;
      }
      if (c !== '"')
        return fail(i, `expected a property name in double quotes but found "${preview(text, i)}"`);
      const end = stringEnd(text, i);
      if (typeof end !== 'number') return fail(end.offset, end.message);
      const raw = text.slice(i + 1, end - 1);
      const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end)) as string) : raw;
      if (top?.keys?.has(key)) return fail(i, `duplicate key "${key}"`, 'duplicate-key');
      top?.keys?.add(key);
      pending = top?.trie?.children.get(key);
      memberOffset = i;
      i = end;
      expect = 'colon';
      continue;
    }
    if (c !== ':') return fail(i, `expected ":" but found "${preview(text, i)}"`);
    i++;
    expect = 'value';
  }
}

/** Offset just past the string starting at `start`, or the error inside it. */
function stringEnd(text: string, start: number): number | { offset: number; message: string } {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c === 0x5c) {
      const e = text[i + 1];
      if (e === 'u') {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)))
          return { offset: i, message: 'bad \\u escape' };
        i += 5;
      } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
      else return { offset: i, message: `bad escape "\\${e ?? ''}"` };
    } else if (c < 0x20) return { offset: i, message: 'control character in string (escape it)' };
  }
  return { offset: text.length, message: 'unterminated string (is the file truncated?)' };
}

function preview(text: string, offset: number): string {
  return text.slice(offset, offset + 12).split('\n')[0] ?? '';
}

export type JsonParseResult =
  | { readonly ok: true; readonly value: unknown; readonly sourceMap: SourceMap }
  | { readonly ok: false; readonly error: JsonSyntaxError; readonly position: Position };

/** Parses JSON text, or returns the first located syntax error. */
export function parseJson(text: string, file: string, maxDepth = MAX_NESTING): JsonParseResult {
  const error = scan(text, undefined, maxDepth);
  if (error) return { ok: false, error, position: new LineIndex(text).position(error.offset) };
  return { ok: true, value: JSON.parse(text) as unknown, sourceMap: new JsonSourceMap(file, text) };
}

class JsonSourceMap implements SourceMap {
  constructor(
    readonly file: string,
    private readonly text: string,
  ) {}

  locate(pointers: readonly string[]): Array<Position | undefined> {
    const root: Trie = { children: new Map(), wanted: false, offset: -1 };
    const nodes = new Map<string, Trie>();
    for (const pointer of pointers) {
      for (const candidate of pointerAndAncestors(pointer)) {
        if (nodes.has(candidate)) break;
        let node = root;
        for (const segment of segmentsOf(candidate)) {
          let child = node.children.get(segment);
          if (!child) {
            child = { children: new Map(), wanted: false, offset: -1 };
            node.children.set(segment, child);
          }
          node = child;
        }
        node.wanted = true;
        nodes.set(candidate, node);
      }
    }
    scan(this.text, root, Number.POSITIVE_INFINITY);
    const lines = new LineIndex(this.text);
    return pointers.map((pointer) => {
      for (const candidate of pointerAndAncestors(pointer)) {
        const offset = nodes.get(candidate)?.offset ?? -1;
        if (offset >= 0) return lines.position(offset);
      }
      return undefined;
    });
  }
}

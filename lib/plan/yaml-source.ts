/**
 * YAML plans via the `yaml` package, keeping node ranges so JSON pointers map back to
 * line:column. Nesting is bounded before parsing because the parser recurses per level.
 */
import { isMap, isNode, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import { MAX_NESTING, yamlTooDeepAt } from './nesting.ts';
import { LineIndex, type Position, pointerAndAncestors, type SourceMap, segmentsOf } from './source-map.ts';

export interface YamlProblem {
  readonly code: string;
  readonly message: string;
  readonly position: Position;
}

export type YamlParseResult =
  | { readonly ok: true; readonly value: unknown; readonly sourceMap: SourceMap }
  | { readonly ok: false; readonly problems: YamlProblem[] };

/** @default 100 alias expansions, against "billion laughs" documents. */
const MAX_ALIAS_COUNT = 100;

export function parseYaml(text: string, file: string, maxDepth = MAX_NESTING): YamlParseResult {
  const deep = yamlTooDeepAt(text, maxDepth);
  if (deep >= 0) {
    return {
      ok: false,
      problems: [
        {
          code: 'too-deep',
          message: `nesting deeper than ${maxDepth} levels`,
          position: new LineIndex(text).position(deep),
        },
      ],
    };
  }
  const lineCounter = new LineCounter();
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  } catch (error) {
    return { ok: false, problems: [{ code: 'yaml-syntax', message: messageOf(error), position: at(0) }] };
  }
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((error) => ({
        code: error.code === 'DUPLICATE_KEY' ? 'duplicate-key' : 'yaml-syntax',
        message: firstLine(error.message),
        position: at(error.pos[0]),
      })),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    return { ok: false, problems: [{ code: 'yaml-syntax', message: messageOf(error), position: at(0) }] };
  }
  return { ok: true, value, sourceMap: new YamlSourceMap(file, doc.contents, lineCounter) };

  function at(offset: number): Position {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  }
}

function messageOf(error: unknown): string {
  return firstLine(error instanceof Error ? error.message : String(error));
}

function firstLine(message: string): string {
  return (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '');
}

class YamlSourceMap implements SourceMap {
  constructor(
    readonly file: string,
    private readonly root: unknown,
    private readonly lineCounter: LineCounter,
  ) {}

  locate(pointers: readonly string[]): Array<Position | undefined> {
    return pointers.map((pointer) => {
      const offsets = this.offsets(pointer);
      for (const candidate of pointerAndAncestors(pointer)) {
        const offset = offsets.get(candidate);
        if (offset !== undefined) {
          const { line, col } = this.lineCounter.linePos(offset);
          return { line, column: col };
        }
      }
      return undefined;
    });
  }

  /** Offsets of the pointer's path prefixes that exist; a map member is located at its key. */
  private offsets(pointer: string): Map<string, number> {
    const found = new Map<string, number>();
    let node: unknown = this.root;
    let current = '';
    if (isNode(node) && node.range) found.set('', node.range[0]);
    for (const segment of segmentsOf(pointer)) {
      current += `/${segment.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      if (isMap(node)) {
        const pair = node.items.find((item) => isPair(item) && keyText(item.key) === segment);
        if (!pair) break;
        const key = pair.key as Node | null;
        const offset = key?.range?.[0] ?? (pair.value as Node | null)?.range?.[0];
        if (offset !== undefined) found.set(current, offset);
        node = pair.value;
      } else if (isSeq(node)) {
        const item = node.items[Number(segment)] as Node | undefined;
        if (!item) break;
        if (item.range) found.set(current, item.range[0]);
        node = item;
      } else break;
    }
    return found;
  }
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return undefined;
}

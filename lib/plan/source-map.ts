/**
 * Where things are in a plan's source text. Parsers return a SourceMap; the validator
 * reports problems by JSON pointer and the SourceMap turns pointers into line:column.
 */
import type { Location, Problem, Severity } from './problems.ts';

export interface Position {
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
}

export interface SourceMap {
  readonly file: string;
  /**
   * Positions of the given pointers, in order. A pointer with no node of its own (a
   * missing field) gets its nearest existing ancestor's position.
   */
  locate(pointers: readonly string[]): Array<Position | undefined>;
}

/** A problem before it has a location: just a pointer into the plan. */
export interface PendingProblem {
  readonly severity: Severity;
  readonly code: string;
  readonly message: string;
  readonly pointer: string;
}

/** Maps pending problems to located ones in one pass over the source (locating is batched). */
export function locateProblems(
  pending: readonly PendingProblem[],
  file: string,
  sourceMap: SourceMap | undefined,
): Problem[] {
  const positions = sourceMap ? sourceMap.locate(pending.map((p) => p.pointer)) : [];
  return pending.map((p, index) => {
    const position = positions[index];
    const location: Location = position
      ? { file, line: position.line, column: position.column, pointer: p.pointer }
      : { file, pointer: p.pointer };
    return { severity: p.severity, code: p.code, message: p.message, location };
  });
}

/** RFC 6901: `~` → `~0`, `/` → `~1`. */
export function pointerOf(segments: ReadonlyArray<string | number>): string {
  let out = '';
  for (const segment of segments) out += `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`;
  return out;
}

export function segmentsOf(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The pointer itself, then each ancestor up to the root (`''`). */
export function* pointerAndAncestors(pointer: string): Generator<string> {
  let current = pointer;
  for (;;) {
    yield current;
    if (current === '') return;
    current = current.slice(0, current.lastIndexOf('/'));
  }
}

/** Offset → line:column over a text, by binary search on line starts. */
export class LineIndex {
  private readonly starts: number[] = [0];

  constructor(text: string) {
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) this.starts.push(i + 1);
  }

  position(offset: number): Position {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.starts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (this.starts[lo] ?? 0) + 1 };
  }
}

/** A SourceMap over a fixed pointer → position table (used by the Markdown parser). */
export class TableSourceMap implements SourceMap {
  constructor(
    readonly file: string,
    private readonly table: ReadonlyMap<string, Position>,
  ) {}

  locate(pointers: readonly string[]): Array<Position | undefined> {
    return pointers.map((pointer) => {
      for (const candidate of pointerAndAncestors(pointer)) {
        const position = this.table.get(candidate);
        if (position) return position;
      }
      return undefined;
    });
  }
}

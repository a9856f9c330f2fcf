/**
 * Parsed JSONPath and compiled JSONata expressions by their text, for one engine: its
 * definitions use the same few hundred expressions in every execution. Bounded: a plan's literal
 * data may hold expressions that run once. Every data-flow function that takes one works without
 * it too (and parses each time).
 */
import type jsonata from 'jsonata';
import type { ParsedPath } from './jsonpath/ast.ts';

/** A compiled JSONata expression, with AWS's functions registered. */
export type CompiledJsonata = ReturnType<typeof jsonata>;

/** Parsed paths kept; the cache starts over once it holds this many. */
const MAX_PATHS = 2000;
/**
 * Compiled expressions kept, least recently used first. A compiled expression costs tens of KiB
 * (its syntax tree, and the AWS functions registered on it): few enough are kept that those run
 * once cannot pile up, while the ones every execution of a machine evaluates stay.
 */
const MAX_JSONATA = 256;

export class ExpressionCache {
  private readonly paths = new Map<string, ParsedPath>();
  private readonly compiled = new Map<string, CompiledJsonata>();

  /** The path parsed from `source`, parsing it (`parse`) the first time. */
  path(source: string, parse: (source: string) => ParsedPath): ParsedPath {
    let parsed = this.paths.get(source);
    if (parsed === undefined) {
      parsed = parse(source);
      if (this.paths.size >= MAX_PATHS) this.paths.clear();
      this.paths.set(source, parsed);
    }
    return parsed;
  }

  /** The expression compiled from `source`, if it is kept (it is then the most recently used). */
  jsonata(source: string): CompiledJsonata | undefined {
    const kept = this.compiled.get(source);
    if (kept !== undefined) {
      this.compiled.delete(source);
      this.compiled.set(source, kept);
    }
    return kept;
  }

  /** Keeps an expression compiled from `source`, in place of the least recently used one when full. */
  keepJsonata(source: string, expression: CompiledJsonata): void {
    if (this.compiled.size >= MAX_JSONATA) this.compiled.delete(this.compiled.keys().next().value as string);
    this.compiled.set(source, expression);
  }
}

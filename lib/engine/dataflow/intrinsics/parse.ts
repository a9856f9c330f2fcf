/** Parser for ASL intrinsic function calls, e.g. `States.Format('{} items', States.ArrayLength($.list))`. */
import { intrinsicFailure } from '../errors.ts';

export type IntrinsicArgument =
  | { readonly kind: 'literal'; readonly value: string | number | boolean | null; readonly raw?: string }
  | { readonly kind: 'path'; readonly path: string }
  | IntrinsicCall;

export interface IntrinsicCall {
  readonly kind: 'call';
  /** e.g. `States.Format`. */
  readonly name: string;
  readonly args: readonly IntrinsicArgument[];
}

/** Whether a `.$` value is an intrinsic function call rather than a path. */
export function isIntrinsicExpression(expression: string): boolean {
  return /^\s*States\.[A-Za-z0-9]+\s*\(/.test(expression);
}

/** Parses one call; throws States.IntrinsicFailure (a StatesError) on any syntax problem. */
export function parseIntrinsic(expression: string): IntrinsicCall {
  const parser = new IntrinsicParser(expression);
  const call = parser.parseCall();
  parser.expectEnd();
  return call;
}

class IntrinsicParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  private fail(reason: string): never {
    throw intrinsicFailure(`Invalid intrinsic function expression '${this.text}': ${reason}`);
  }

  private skipSpaces(): void {
    while (/\s/.test(this.text[this.pos] ?? '')) this.pos++;
  }

  expectEnd(): void {
    this.skipSpaces();
    if (this.pos !== this.text.length)
      this.fail(`unexpected '${this.text[this.pos]}' at position ${this.pos}`);
  }

  parseCall(): IntrinsicCall {
    this.skipSpaces();
    const name = /^States\.[A-Za-z0-9]+/.exec(this.text.slice(this.pos))?.[0];
    if (!name) this.fail(`expected a function name at position ${this.pos}`);
    this.pos += name.length;
    this.skipSpaces();
    if (this.text[this.pos] !== '(') this.fail(`expected '(' after ${name}`);
    this.pos++;
    const args: IntrinsicArgument[] = [];
    this.skipSpaces();
    if (this.text[this.pos] === ')') {
      this.pos++;
      return { kind: 'call', name, args };
    }
    for (;;) {
      args.push(this.parseArgument());
      this.skipSpaces();
      const c = this.text[this.pos];
      this.pos++;
      if (c === ')') return { kind: 'call', name, args };
      if (c !== ',')
        this.fail(c === undefined ? `missing ')'` : `expected ',' or ')' at position ${this.pos - 1}`);
    }
  }

  private parseArgument(): IntrinsicArgument {
    this.skipSpaces();
    const rest = this.text.slice(this.pos);
    const c = rest[0];
    if (c === "'") return this.parseString();
    if (c === '$') return { kind: 'path', path: this.scanPath() };
    if (rest.startsWith('States.')) return this.parseCall();
    const number = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(?![\w.])/.exec(rest)?.[0];
    if (number) {
      this.pos += number.length;
      return { kind: 'literal', value: Number(number) };
    }
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (new RegExp(`^${word}(?![\\w.])`).test(rest)) {
        this.pos += word.length;
        return { kind: 'literal', value };
      }
    }
    return this.fail(`unexpected '${c ?? 'end of expression'}' at position ${this.pos}`);
  }

  /** A string literal; `raw` keeps `\{` `\}` escapes for States.Format. */
  private parseString(): IntrinsicArgument {
    this.pos++;
    let value = '';
    let raw = '';
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) this.fail('unterminated string literal');
      this.pos++;
      if (c === "'") return { kind: 'literal', value, raw };
      if (c === '\\') {
        const next = this.text[this.pos];
        if (next === undefined) this.fail('unterminated string literal');
        this.pos++;
        value += next;
        raw += next === '{' || next === '}' || next === '\\' ? `\\${next}` : next;
      } else {
        value += c;
        raw += c;
      }
    }
  }

  /** A JSONPath argument runs to the next top-level ',' or ')' (filters may nest both). */
  private scanPath(): string {
    const start = this.pos;
    let depth = 0;
    let quote: string | undefined;
    while (this.pos < this.text.length) {
      const c = this.text[this.pos] as string;
      if (quote) {
        if (c === '\\') this.pos++;
        else if (c === quote) quote = undefined;
      } else if (c === "'" || c === '"') {
        quote = c;
      } else if (c === '[' || c === '(') {
        depth++;
      } else if (c === ']' || (c === ')' && depth > 0)) {
        depth--;
      } else if ((c === ',' || c === ')') && depth === 0) {
        break;
      }
      this.pos++;
    }
    return this.text.slice(start, this.pos).trim();
  }
}

/** A small JSONPath parser for the syntax ASL accepts (Jayway dialect: filters, wildcards, slices, unions). */
import type { ExpressionCache } from '../expression-cache.ts';
import type { FilterExpression, ParsedPath, PathRoot, Segment } from './ast.ts';

/** A JSONPath that cannot be parsed; callers turn it into AWS's error for the field. */
export class JsonPathSyntaxError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`Invalid JSONPath '${path}': ${reason}`);
    this.name = 'JsonPathSyntaxError';
  }
}

const FUNCTIONS: ReadonlySet<string> = new Set(['length', 'size', 'min', 'max', 'avg', 'sum', 'keys']);

/** Parses a JSONPath such as `$.a[0].b`, `$$.Execution.Id`, `$myVar.x`, `$.items[?(@.n > 1)]`; once per text with a `cache`. */
export function parsePath(source: string, cache?: ExpressionCache): ParsedPath {
  return cache === undefined ? parseWholePath(source) : cache.path(source, parseWholePath);
}

function parseWholePath(source: string): ParsedPath {
  return new PathParser(source).parseWhole();
}

class PathParser {
  private pos = 0;
  constructor(private readonly text: string) {}

  parseWhole(): ParsedPath {
    const path = this.parsePath();
    this.skipSpaces();
    if (this.pos < this.text.length) this.fail(`unexpected '${this.text[this.pos]}' at position ${this.pos}`);
    return path;
  }

  private fail(reason: string): never {
    throw new JsonPathSyntaxError(this.text, reason);
  }

  private peek(offset = 0): string | undefined {
    return this.text[this.pos + offset];
  }

  private skipSpaces(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.pos++;
  }

  parsePath(): ParsedPath {
    const start = this.pos;
    const root = this.parseRoot();
    const segments: Segment[] = [];
    for (;;) {
      const c = this.peek();
      if (c === '.' && this.peek(1) === '.') {
        this.pos += 2;
        const next = this.peek() === '[' ? this.parseBracket() : this.parseDotted();
        segments.push({ kind: 'descendants', step: next });
      } else if (c === '.') {
        this.pos++;
        segments.push(this.parseDotted());
      } else if (c === '[') {
        segments.push(this.parseBracket());
      } else {
        break;
      }
    }
    const definite = segments.every(
      (s) => s.kind === 'property' || s.kind === 'index' || s.kind === 'function',
    );
    return { source: this.text.slice(start, this.pos), root, segments, definite };
  }

  private parseRoot(): PathRoot {
    const c = this.peek();
    if (c === '@') {
      this.pos++;
      return { kind: 'current' };
    }
    if (c !== '$') this.fail(`a path must start with '$'`);
    this.pos++;
    if (this.peek() === '$') {
      this.pos++;
      return { kind: 'context' };
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.text.slice(this.pos))?.[0];
    if (name) {
      this.pos += name.length;
      return { kind: 'variable', name };
    }
    return { kind: 'input' };
  }

  private parseDotted(): Segment {
    if (this.peek() === '*') {
      this.pos++;
      return { kind: 'wildcard' };
    }
    const start = this.pos;
    while (this.pos < this.text.length && !' \t.[()'.includes(this.text[this.pos] as string)) this.pos++;
    const name = this.text.slice(start, this.pos);
    if (!name) this.fail(`missing property name at position ${start}`);
    if (this.peek() === '(' && this.peek(1) === ')' && FUNCTIONS.has(name)) {
      this.pos += 2;
      return { kind: 'function', name: name as 'length' };
    }
    return { kind: 'property', name };
  }

  private parseBracket(): Segment {
    this.pos++; // [
    this.skipSpaces();
    const c = this.peek();
    let segment: Segment;
    if (c === '*') {
      this.pos++;
      segment = { kind: 'wildcard' };
    } else if (c === '?') {
      this.pos++;
      this.skipSpaces();
      if (this.peek() !== '(') this.fail(`expected '(' after '?' at position ${this.pos}`);
      this.pos++;
      const predicate = this.parseOr();
      this.skipSpaces();
      if (this.peek() !== ')') this.fail(`expected ')' at position ${this.pos}`);
      this.pos++;
      segment = { kind: 'filter', predicate };
    } else if (c === "'" || c === '"') {
      const keys: string[] = [this.parseString()];
      for (this.skipSpaces(); this.peek() === ','; this.skipSpaces()) {
        this.pos++;
        this.skipSpaces();
        keys.push(this.parseString());
      }
      segment = keys.length === 1 ? { kind: 'property', name: keys[0] as string } : { kind: 'union', keys };
    } else {
      segment = this.parseIndexes();
    }
    this.skipSpaces();
    if (this.peek() !== ']') this.fail(`expected ']' at position ${this.pos}`);
    this.pos++;
    return segment;
  }

  private parseIndexes(): Segment {
    const numbers: (number | undefined)[] = [this.parseOptionalInt()];
    this.skipSpaces();
    if (this.peek() === ':') {
      const parts = numbers;
      while (this.peek() === ':' && parts.length < 3) {
        this.pos++;
        this.skipSpaces();
        parts.push(this.parseOptionalInt());
        this.skipSpaces();
      }
      const [start, end, step] = parts;
      if (step === 0) this.fail('slice step cannot be 0');
      return { kind: 'slice', start, end, step };
    }
    while (this.peek() === ',') {
      this.pos++;
      this.skipSpaces();
      numbers.push(this.parseOptionalInt());
      this.skipSpaces();
    }
    if (numbers.some((n) => n === undefined)) this.fail(`expected an index at position ${this.pos}`);
    const indexes = numbers as number[];
    return indexes.length === 1
      ? { kind: 'index', index: indexes[0] as number }
      : { kind: 'union', keys: indexes };
  }

  private parseOptionalInt(): number | undefined {
    const match = /^-?\d+/.exec(this.text.slice(this.pos));
    if (!match) return undefined;
    this.pos += match[0].length;
    return Number(match[0]);
  }

  private parseString(): string {
    const quote = this.peek();
    this.pos++;
    let out = '';
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail('unterminated string');
      this.pos++;
      if (c === quote) return out;
      if (c === '\\' && (this.peek() === quote || this.peek() === '\\')) {
        // Jayway unescapes only the quote and the backslash; any other `\x` stays as written.
        out += this.peek();
        this.pos++;
      } else {
        out += c;
      }
    }
  }

  // --- filter expressions: or > and > not > comparison > operand ---

  private parseOr(): FilterExpression {
    let left = this.parseAnd();
    for (this.skipSpaces(); this.text.startsWith('||', this.pos); this.skipSpaces()) {
      this.pos += 2;
      left = { kind: 'or', left, right: this.parseAnd() };
    }
    return left;
  }

  private parseAnd(): FilterExpression {
    let left = this.parseUnary();
    for (this.skipSpaces(); this.text.startsWith('&&', this.pos); this.skipSpaces()) {
      this.pos += 2;
      left = { kind: 'and', left, right: this.parseUnary() };
    }
    return left;
  }

  private parseUnary(): FilterExpression {
    this.skipSpaces();
    if (this.peek() === '!' && this.peek(1) !== '=') {
      this.pos++;
      return { kind: 'not', operand: this.parseUnary() };
    }
    if (this.peek() === '(') {
      this.pos++;
      const inner = this.parseOr();
      this.skipSpaces();
      if (this.peek() !== ')') this.fail(`expected ')' at position ${this.pos}`);
      this.pos++;
      return inner;
    }
    const left = this.parseOperand();
    this.skipSpaces();
    const operator = /^(==|!=|<=|>=|=~|<|>|in\b|nin\b)/.exec(this.text.slice(this.pos))?.[0];
    if (!operator) return left;
    this.pos += operator.length;
    this.skipSpaces();
    const right = this.parseOperand();
    return { kind: 'compare', operator: operator as '==', left, right };
  }

  private parseOperand(): FilterExpression {
    this.skipSpaces();
    const c = this.peek();
    if (c === '@' || c === '$') return { kind: 'path', path: this.parsePath() };
    if (c === "'" || c === '"') return { kind: 'literal', value: this.parseString() };
    if (c === '/') return { kind: 'regex', regex: this.parseRegex() };
    if (c === '[') return { kind: 'literal', value: this.parseJsonLiteral() };
    const rest = this.text.slice(this.pos);
    const number = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(rest)?.[0];
    if (number) {
      this.pos += number.length;
      return { kind: 'literal', value: Number(number) };
    }
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (rest.startsWith(word)) {
        this.pos += word.length;
        return { kind: 'literal', value };
      }
    }
    return this.fail(`unexpected '${c ?? 'end of path'}' in filter at position ${this.pos}`);
  }

  private parseRegex(): RegExp {
    this.pos++;
    let body = '';
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail('unterminated regular expression');
      this.pos++;
      if (c === '/') break;
      if (c === '\\') {
        body += c + (this.peek() ?? '');
        this.pos++;
      } else {
        body += c;
      }
    }
    const flags = /^[a-z]*/.exec(this.text.slice(this.pos))?.[0] ?? '';
    this.pos += flags.length;
    try {
      return new RegExp(body, flags.replace(/[^imsu]/g, ''));
    } catch {
      return this.fail(`invalid regular expression /${body}/`);
    }
  }

  private parseJsonLiteral(): unknown {
    let depth = 0;
    const start = this.pos;
    do {
      const c = this.peek();
      if (c === undefined) this.fail('unterminated array literal');
      if (c === '[') depth++;
      if (c === ']') depth--;
      this.pos++;
    } while (depth > 0);
    try {
      return JSON.parse(this.text.slice(start, this.pos).replace(/'/g, '"'));
    } catch {
      return this.fail(`invalid array literal at position ${start}`);
    }
  }
}

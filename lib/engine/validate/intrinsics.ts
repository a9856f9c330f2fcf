import { pathSyntaxError } from './paths.ts';

/** Intrinsic functions of JSONPath states, with the number of arguments each takes ([min, max]). */
const ARITY: Readonly<Record<string, readonly [number, number]>> = {
  'States.Format': [1, Number.POSITIVE_INFINITY],
  'States.StringToJson': [1, 1],
  'States.JsonToString': [1, 1],
  'States.Array': [0, Number.POSITIVE_INFINITY],
  'States.ArrayPartition': [2, 2],
  'States.ArrayContains': [2, 2],
  'States.ArrayRange': [3, 3],
  'States.ArrayGetItem': [2, 2],
  'States.ArrayLength': [1, 1],
  'States.ArrayUnique': [1, 1],
  'States.Base64Encode': [1, 1],
  'States.Base64Decode': [1, 1],
  'States.Hash': [2, 2],
  'States.JsonMerge': [3, 3],
  'States.MathRandom': [2, 3],
  'States.MathAdd': [2, 2],
  'States.StringSplit': [2, 2],
  'States.UUID': [0, 0],
};

/** True when a `.$` value is meant as an intrinsic call rather than a path. */
export function looksLikeIntrinsic(value: string): boolean {
  return /^States\.[A-Za-z0-9]*\s*\(/.test(value.trim());
}

/** Returns why `text` is not a well-formed intrinsic function call, or undefined. */
export function intrinsicSyntaxError(text: string): string | undefined {
  const parser = new IntrinsicParser(text.trim());
  try {
    parser.call();
    parser.skipSpaces();
    if (!parser.done()) parser.fail('unexpected text after the closing ")"');
    return undefined;
  } catch (error) {
    return `"${text}" is not a valid intrinsic function: ${(error as Error).message}`;
  }
}

class IntrinsicParser {
  private i = 0;
  constructor(private readonly text: string) {}

  done(): boolean {
    return this.i >= this.text.length;
  }

  fail(message: string): never {
    throw new Error(`${message} (at position ${this.i + 1})`);
  }

  skipSpaces(): void {
    while (this.text[this.i] === ' ' || this.text[this.i] === '\t') this.i++;
  }

  call(): void {
    const name = /^States\.[A-Za-z0-9]+/.exec(this.text.slice(this.i))?.[0];
    if (!name) this.fail('expected a function name such as States.Format');
    const arity = ARITY[name];
    if (!arity) this.fail(`unknown intrinsic function "${name}"`);
    this.i += name.length;
    this.skipSpaces();
    if (this.text[this.i] !== '(') this.fail(`expected "(" after ${name}`);
    this.i++;
    let count = 0;
    this.skipSpaces();
    if (this.text[this.i] === ')') {
      this.i++;
    } else {
      for (;;) {
        this.argument();
        count++;
        this.skipSpaces();
        const c = this.text[this.i];
        if (c === ',') {
          this.i++;
          continue;
        }
        if (c === ')') {
          this.i++;
          break;
        }
        this.fail(
          c === undefined ? `missing ")" to close ${name}` : `unexpected "${c}" in the arguments of ${name}`,
        );
      }
    }
    const [min, max] = arity;
    if (count < min || count > max) {
      const expected =
        min === max ? `${min}` : max === Number.POSITIVE_INFINITY ? `at least ${min}` : `${min} to ${max}`;
      this.fail(`${name} takes ${expected} argument(s), got ${count}`);
    }
  }

  private argument(): void {
    this.skipSpaces();
    const rest = this.text.slice(this.i);
    if (rest.startsWith("'")) this.stringLiteral();
    else if (rest.startsWith('States.')) this.call();
    else if (rest.startsWith('$')) this.path();
    else this.literal(rest);
  }

  private literal(rest: string): void {
    const literal = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|null|true|false)(?=\s*[,)])/.exec(rest)?.[0];
    if (literal) {
      this.i += literal.length;
      return;
    }
    this.fail('expected a string in single quotes, a number, a path or an intrinsic function');
  }

  private stringLiteral(): void {
    this.i++;
    while (this.i < this.text.length) {
      const c = this.text[this.i];
      if (c === '\\') this.i += 2;
      else if (c === "'") {
        this.i++;
        return;
      } else this.i++;
    }
    this.fail('unterminated string literal');
  }

  private path(): void {
    const start = this.i;
    let depth = 0;
    let quote: string | undefined;
    while (this.i < this.text.length) {
      const c = this.text[this.i];
      if (quote) {
        if (c === '\\') this.i++;
        else if (c === quote) quote = undefined;
      } else if (c === "'" || c === '"') quote = c;
      else if (c === '[' || c === '(') depth++;
      else if (c === ']' || c === ')') {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
      this.i++;
    }
    const path = this.text.slice(start, this.i).trim();
    const problem = pathSyntaxError(path);
    if (problem) this.fail(problem);
  }
}

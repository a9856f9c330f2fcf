/** The ASL intrinsic functions (States.*), with AWS's argument checks. */
import { createHash, randomUUID } from 'node:crypto';
import { isJsonObject } from '../../types.ts';
import { intrinsicFailure } from '../errors.ts';
import { jsonEquals, jsonText, jsonTypeName, setOwn } from '../json.ts';

/** An evaluated argument; `raw` is the literal text of a string literal (keeps `\{` escapes for Format). */
export interface IntrinsicValue {
  readonly value: unknown;
  readonly raw?: string;
}

type IntrinsicImplementation = (args: readonly IntrinsicValue[], name: string) => unknown;

const MAX_STRING = 10_000;
const MAX_RANGE = 1_000;

function arity(name: string, args: readonly IntrinsicValue[], min: number, max = min): void {
  if (args.length < min || args.length > max) {
    const expected = min === max ? `${min}` : `${min} to ${max}`;
    throw intrinsicFailure(
      `Invalid number of arguments in the ${name} intrinsic function. Expected ${expected}, but received ${args.length}.`,
    );
  }
}

function argument(args: readonly IntrinsicValue[], i: number): unknown {
  return args[i]?.value;
}

function typeError(name: string, position: number, expected: string, value: unknown): never {
  throw intrinsicFailure(
    `The ${ordinal(position)} argument of the ${name} intrinsic function must be ${expected}, but was ${jsonTypeName(value)}: ${jsonText(value)}`,
  );
}

function ordinal(position: number): string {
  return ['first', 'second', 'third', 'fourth'][position] ?? `#${position + 1}`;
}

function stringArg(name: string, args: readonly IntrinsicValue[], i: number): string {
  const value = argument(args, i);
  if (typeof value !== 'string') typeError(name, i, 'a string', value);
  return value;
}

function arrayArg(name: string, args: readonly IntrinsicValue[], i: number): unknown[] {
  const value = argument(args, i);
  if (!Array.isArray(value)) typeError(name, i, 'an array', value);
  return value;
}

function integerArg(name: string, args: readonly IntrinsicValue[], i: number): number {
  const value = argument(args, i);
  if (typeof value !== 'number' || !Number.isInteger(value)) typeError(name, i, 'an integer', value);
  return value;
}

function numberArg(name: string, args: readonly IntrinsicValue[], i: number): number {
  const value = argument(args, i);
  if (typeof value !== 'number') typeError(name, i, 'a number', value);
  return value;
}

/** Java's rendering of a JSON value inside States.Format (`{a=1, b=[x, y]}`). */
function formatValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(formatValue).join(', ')}]`;
  if (isJsonObject(value)) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}=${formatValue(v)}`)
      .join(', ')}}`;
  }
  return String(value);
}

function format(args: readonly IntrinsicValue[], name: string): string {
  if (args.length < 1) arity(name, args, 1, Number.POSITIVE_INFINITY);
  const template = args[0] as IntrinsicValue;
  if (typeof template.value !== 'string') typeError(name, 0, 'a string', template.value);
  const text = template.raw ?? template.value;
  const values = args.slice(1).map((a) => a.value);
  let out = '';
  let next = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\' && i + 1 < text.length) {
      out += text[i + 1];
      i++;
    } else if (c === '{' && text[i + 1] === '}') {
      if (next >= values.length) {
        throw intrinsicFailure(
          `Number of arguments in the ${name} intrinsic function do not match the number of placeholders in the format string. Format string: '${template.value}', number of arguments: ${values.length}.`,
        );
      }
      out += formatValue(values[next++]);
      i++;
    } else {
      out += c;
    }
  }
  if (next !== values.length) {
    throw intrinsicFailure(
      `Number of arguments in the ${name} intrinsic function do not match the number of placeholders in the format string. Format string: '${template.value}', number of arguments: ${values.length}.`,
    );
  }
  return out;
}

function stringToJson(args: readonly IntrinsicValue[], name: string): unknown {
  arity(name, args, 1);
  const text = stringArg(name, args, 0);
  // AWS answers null for an empty or blank string (test_string_to_json), and 0 for "-0"
  if (text.trim() === '') return null;
  try {
    const value: unknown = JSON.parse(text);
    return value === 0 ? 0 : value;
  } catch {
    throw intrinsicFailure(
      `The ${name} intrinsic function could not parse the input string as JSON: '${text}'`,
    );
  }
}

function arrayPartition(args: readonly IntrinsicValue[], name: string): unknown[][] {
  arity(name, args, 2);
  const array = arrayArg(name, args, 0);
  const size = integerArg(name, args, 1);
  if (size <= 0) {
    throw intrinsicFailure(
      `Invalid chunk size in the ${name} intrinsic function. Chunk size must be greater than 0.`,
    );
  }
  const out: unknown[][] = [];
  for (let i = 0; i < array.length; i += size) out.push(array.slice(i, i + size));
  return out;
}

function arrayRange(args: readonly IntrinsicValue[], name: string): number[] {
  arity(name, args, 3);
  const start = integerArg(name, args, 0);
  const end = integerArg(name, args, 1);
  const step = integerArg(name, args, 2);
  if (step === 0) throw intrinsicFailure(`The step value in the ${name} intrinsic function cannot be 0.`);
  const count = Math.max(0, Math.floor((end - start) / step) + 1);
  if (count > MAX_RANGE) {
    throw intrinsicFailure(
      `The ${name} intrinsic function cannot create an array with more than ${MAX_RANGE} items.`,
    );
  }
  return Array.from({ length: count }, (_, i) => start + i * step);
}

function arrayGetItem(args: readonly IntrinsicValue[], name: string): unknown {
  arity(name, args, 2);
  const array = arrayArg(name, args, 0);
  const index = integerArg(name, args, 1);
  if (index < 0 || index >= array.length) {
    throw intrinsicFailure(
      `The index ${index} is out of bounds for the array of size ${array.length} in the ${name} intrinsic function.`,
    );
  }
  return array[index];
}

function arrayUnique(args: readonly IntrinsicValue[], name: string): unknown[] {
  arity(name, args, 1);
  const out: unknown[] = [];
  for (const item of arrayArg(name, args, 0)) if (!out.some((seen) => jsonEquals(seen, item))) out.push(item);
  return out;
}

function boundedString(name: string, args: readonly IntrinsicValue[], i: number): string {
  const text = stringArg(name, args, i);
  if (text.length > MAX_STRING) {
    throw intrinsicFailure(
      `The input string of the ${name} intrinsic function exceeds the maximum length of ${MAX_STRING} characters.`,
    );
  }
  return text;
}

function base64Decode(args: readonly IntrinsicValue[], name: string): string {
  arity(name, args, 1);
  const text = boundedString(name, args, 0);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) {
    throw intrinsicFailure(
      `The input string of the ${name} intrinsic function is not a valid base64 string: '${text}'`,
    );
  }
  return Buffer.from(text, 'base64').toString('utf8');
}

const HASH_ALGORITHMS: Record<string, string> = {
  MD5: 'md5',
  'SHA-1': 'sha1',
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
};

function hash(args: readonly IntrinsicValue[], name: string): string {
  arity(name, args, 2);
  const data = argument(args, 0);
  const text = typeof data === 'string' ? data : jsonText(data);
  if (text.length > MAX_STRING) {
    throw intrinsicFailure(
      `The input data of the ${name} intrinsic function exceeds the maximum length of ${MAX_STRING} characters.`,
    );
  }
  const algorithm = stringArg(name, args, 1);
  const nodeAlgorithm = HASH_ALGORITHMS[algorithm];
  if (!nodeAlgorithm) {
    throw intrinsicFailure(
      `The hash algorithm '${algorithm}' is not supported by the ${name} intrinsic function. Supported algorithms: ${Object.keys(HASH_ALGORITHMS).join(', ')}.`,
    );
  }
  return createHash(nodeAlgorithm).update(text, 'utf8').digest('hex');
}

function jsonMerge(args: readonly IntrinsicValue[], name: string): Record<string, unknown> {
  arity(name, args, 3);
  const left = argument(args, 0);
  const right = argument(args, 1);
  const deep = argument(args, 2);
  if (!isJsonObject(left)) typeError(name, 0, 'a JSON object', left);
  if (!isJsonObject(right)) typeError(name, 1, 'a JSON object', right);
  if (typeof deep !== 'boolean') typeError(name, 2, 'a boolean', deep);
  if (deep)
    throw intrinsicFailure(
      `The ${name} intrinsic function does not support deep merging; set the third argument to false.`,
    );
  const out: Record<string, unknown> = {};
  for (const source of [left, right]) for (const k of Object.keys(source)) setOwn(out, k, source[k]);
  return out;
}

function mathRandom(args: readonly IntrinsicValue[], name: string): number {
  arity(name, args, 2, 3);
  const start = integerArg(name, args, 0);
  const end = integerArg(name, args, 1);
  if (end <= start)
    throw intrinsicFailure(
      `The end value of the ${name} intrinsic function must be greater than the start value.`,
    );
  const seed = args.length === 3 ? integerArg(name, args, 2) : undefined;
  const unit = seed === undefined ? Math.random() : seededUnit(seed);
  return start + Math.floor(unit * (end - start));
}

/** A deterministic number in [0, 1) for a seed (mulberry32), so a seeded MathRandom repeats. */
function seededUnit(seed: number): number {
  let t = (seed + 0x6d2b79f5) | 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/**
 * Rounds each operand to the nearest integer, halves up (Java's Math.round, as JavaScript's), and
 * then adds: AWS's recorded 1.5 + 1.51 = 4 and -0.5 + 0.5 = 1 (test_math_add).
 */
function mathAdd(args: readonly IntrinsicValue[], name: string): number {
  arity(name, args, 2);
  const sum = Math.round(numberArg(name, args, 0)) + Math.round(numberArg(name, args, 1));
  return sum === 0 ? 0 : sum;
}

/** Splits on every character of the delimiter and drops empty tokens (Java StringTokenizer, as AWS does). */
function stringSplit(args: readonly IntrinsicValue[], name: string): string[] {
  arity(name, args, 2);
  const text = stringArg(name, args, 0);
  const delimiters = new Set(stringArg(name, args, 1));
  const out: string[] = [];
  let token = '';
  for (const c of text) {
    if (delimiters.has(c)) {
      if (token) out.push(token);
      token = '';
    } else {
      token += c;
    }
  }
  if (token) out.push(token);
  return out;
}

export const INTRINSIC_FUNCTIONS: ReadonlyMap<string, IntrinsicImplementation> = new Map<
  string,
  IntrinsicImplementation
>([
  ['States.Format', format],
  ['States.StringToJson', stringToJson],
  [
    'States.JsonToString',
    (args, name) => {
      arity(name, args, 1);
      return jsonText(argument(args, 0));
    },
  ],
  ['States.Array', (args) => args.map((a) => a.value)],
  ['States.ArrayPartition', arrayPartition],
  [
    'States.ArrayContains',
    (args, name) => {
      arity(name, args, 2);
      const needle = argument(args, 1);
      return arrayArg(name, args, 0).some((item) => jsonEquals(item, needle));
    },
  ],
  ['States.ArrayRange', arrayRange],
  ['States.ArrayGetItem', arrayGetItem],
  [
    'States.ArrayLength',
    (args, name) => {
      arity(name, args, 1);
      return arrayArg(name, args, 0).length;
    },
  ],
  ['States.ArrayUnique', arrayUnique],
  [
    'States.Base64Encode',
    (args, name) => {
      arity(name, args, 1);
      return Buffer.from(boundedString(name, args, 0), 'utf8').toString('base64');
    },
  ],
  ['States.Base64Decode', base64Decode],
  ['States.Hash', hash],
  ['States.JsonMerge', jsonMerge],
  ['States.MathRandom', mathRandom],
  ['States.MathAdd', mathAdd],
  ['States.StringSplit', stringSplit],
  [
    'States.UUID',
    (args, name) => {
      arity(name, args, 0);
      return randomUUID();
    },
  ],
]);

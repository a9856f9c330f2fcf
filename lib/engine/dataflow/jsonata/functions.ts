/** The functions Step Functions adds to JSONata: $partition, $range, $hash, $random, $uuid, $parse. */
import { randomUUID } from 'node:crypto';
import { StatesError } from '../../types.ts';
import { queryEvaluationError } from '../errors.ts';
import { INTRINSIC_FUNCTIONS, type IntrinsicValue } from '../intrinsics/functions.ts';

export interface JsonataFunction {
  readonly name: string;
  readonly implementation: (...args: unknown[]) => unknown;
  readonly signature?: string;
}

/** Runs the matching intrinsic, reporting its failures as States.QueryEvaluationError. */
function viaIntrinsic(intrinsic: string, jsonataName: string) {
  const implementation = INTRINSIC_FUNCTIONS.get(intrinsic);
  if (!implementation) throw new Error(`unknown intrinsic ${intrinsic}`);
  return (...args: unknown[]): unknown => {
    const values: IntrinsicValue[] = args.map((value) => ({ value }));
    try {
      return implementation(values, intrinsic);
    } catch (error) {
      if (error instanceof StatesError) {
        throw queryEvaluationError(
          (error.cause ?? '').replaceAll(`${intrinsic} intrinsic function`, `$${jsonataName} function`),
        );
      }
      throw error;
    }
  };
}

function parseJson(text: unknown): unknown {
  if (typeof text !== 'string') throw queryEvaluationError(`The $parse function expects a string argument.`);
  try {
    return JSON.parse(text);
  } catch {
    throw queryEvaluationError(`The $parse function could not parse the input string as JSON: '${text}'`);
  }
}

/** $range returns a JSONata sequence: one number alone is the number itself, none is nothing. */
function range(...args: unknown[]): unknown {
  const values = viaIntrinsic('States.ArrayRange', 'range')(...args) as number[];
  if (values.length === 0) return undefined;
  return values.length === 1 ? values[0] : values;
}

export const AWS_JSONATA_FUNCTIONS: readonly JsonataFunction[] = [
  {
    name: 'partition',
    implementation: viaIntrinsic('States.ArrayPartition', 'partition'),
    signature: '<an:a>',
  },
  { name: 'range', implementation: range, signature: '<nnn:a<n>>' },
  { name: 'hash', implementation: viaIntrinsic('States.Hash', 'hash'), signature: '<j-s:s>' },
  {
    name: 'random',
    implementation: (seed?: unknown) =>
      seed === undefined
        ? Math.random()
        : (viaIntrinsic('States.MathRandom', 'random')(0, 2 ** 31 - 1, seed) as number) / 2 ** 31,
    signature: '<n?:n>',
  },
  { name: 'uuid', implementation: () => randomUUID(), signature: '<:s>' },
  { name: 'parse', implementation: parseJson, signature: '<s-:j>' },
];

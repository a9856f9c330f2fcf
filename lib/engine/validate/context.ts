import type { QueryLanguage } from '../types.ts';
import type { ProblemList } from './problems.ts';

/** What every check of one definition shares. */
export interface CheckContext {
  readonly problems: ProblemList;
  /** The machine's QueryLanguage (states inherit it). */
  readonly machineLanguage: QueryLanguage;
  /** State name → location of its first definition (names are unique across the whole machine). */
  readonly stateNames: Map<string, string>;
}

export function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value)}`;
  return `${typeof value} ${String(value)}`;
}

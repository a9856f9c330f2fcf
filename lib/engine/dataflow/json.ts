/** JSON values as they flow between states, and the helpers every data-flow function shares. */

import { isJsonObject, type JsonObject } from '../types.ts';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Own-property lookup that never reaches the prototype chain (`__proto__`, `constructor`, ...). */
export function getOwn(object: JsonObject, key: string): { found: true; value: unknown } | { found: false } {
  return Object.hasOwn(object, key) ? { found: true, value: object[key] } : { found: false };
}

/**
 * Defines a property without triggering the `__proto__` setter (the only accessor an object
 * inherits; every other key assigns as defineProperty would, and far faster).
 */
export function setOwn(object: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  } else object[key] = value;
}

/** JSON text as AWS prints it inside error messages: compact. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

/** The JSON type name AWS uses in messages ('object', 'array', 'string', 'number', 'boolean', 'null'). */
export function jsonTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

const utf8 = new TextEncoder();

/** Bytes of the UTF-8 JSON encoding, for the 256 KiB payload limit. */
export function canonicalJsonSize(value: unknown): number {
  return utf8.encode(jsonText(value)).byteLength;
}

/** Structural equality of JSON values (object key order ignored). */
export function jsonEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEquals(item, b[i]));
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((k) => Object.hasOwn(b, k) && jsonEquals(a[k], b[k]))
    );
  }
  return false;
}

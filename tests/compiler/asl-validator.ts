/** asl-validator ships no types: the part of its API the compiler tests use. */
import { createRequire } from 'node:module';

export interface AslValidation {
  readonly isValid: boolean;
  errorsText(separator?: string): string;
}

const require = createRequire(import.meta.url);

/** Validates a definition; it annotates the object it checks, so pass a fresh copy. */
export const aslValidator = require('asl-validator') as (definition: unknown) => AslValidation;

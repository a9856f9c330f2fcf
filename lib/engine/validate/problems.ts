import type { DefinitionProblem } from '../types.ts';

/** AWS's diagnostic codes for refused definitions (ValidateStateMachineDefinition / InvalidDefinition). */
export const ProblemCode = {
  invalidJson: 'INVALID_JSON_DESCRIPTION',
  schema: 'SCHEMA_VALIDATION_FAILED',
  missingTarget: 'MISSING_TRANSITION_TARGET',
  missingEnd: 'MISSING_END_STATE',
  duplicateStateName: 'DUPLICATE_STATE_NAME',
  tooLarge: 'DEFINITION_TOO_LARGE',
} as const;

/** Appends one reference token to a JSON pointer (RFC 6901 escaping). */
export function pointer(base: string, ...tokens: (string | number)[]): string {
  return tokens.reduce<string>(
    (acc, token) => `${acc}/${String(token).replaceAll('~', '~0').replaceAll('/', '~1')}`,
    base,
  );
}

/** Collects the located problems of one definition. */
export class ProblemList {
  readonly items: DefinitionProblem[] = [];

  add(location: string, code: string, message: string): void {
    this.items.push({ location, code, message });
  }

  /** A schema problem (the most common kind). */
  schema(location: string, message: string): void {
    this.add(location, ProblemCode.schema, message);
  }
}

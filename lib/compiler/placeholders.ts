/**
 * The `${…}` substitutions a compiled definition uses. They are filled in by CDK
 * (`definitionSubstitutions`), by the Plans API when it creates a state machine, and by the
 * local stack; the definition is otherwise byte-for-byte the same everywhere.
 */
export const PLACEHOLDERS = {
  gate: 'GateFunctionArn',
  stepRunner: 'StepRunnerFunctionArn',
  contractChecker: 'ContractCheckerFunctionArn',
  classifier: 'ClassifierFunctionArn',
  join: 'JoinFunctionArn',
} as const;

/** The substitution naming the n-th (1-based) child state machine of a split plan. */
export function childPlaceholder(index: number): string {
  return `PartStateMachineArn${index}`;
}

/** `${Name}` as it appears in the definition. */
export function ref(name: string): string {
  return `\${${name}}`;
}

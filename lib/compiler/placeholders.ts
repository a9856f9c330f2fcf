import {
  HARNESS_HANDLERS,
  STATE_MACHINE_HANDLERS,
  type StateMachineHandlerName,
} from '../runtime/catalog.ts';

/**
 * The `${…}` substitutions naming the harness functions a compiled definition calls (from the
 * catalog of harness Lambdas). They are filled in by CDK (`definitionSubstitutions`), by the Plans
 * API when it creates a state machine, and by the local stack; the definition is otherwise
 * byte-for-byte the same everywhere.
 */
export const PLACEHOLDERS = Object.fromEntries(
  STATE_MACHINE_HANDLERS.map((name) => [name, HARNESS_HANDLERS[name].placeholder]),
) as { readonly [N in StateMachineHandlerName]: (typeof HARNESS_HANDLERS)[N]['placeholder'] };

/**
 * The substitution naming the activity ARN of agent `target` (filled by whoever creates the
 * activity). Characters a placeholder cannot hold are escaped as `_<hex>` (`_` too), so two
 * targets never share one.
 */
export function agentActivityPlaceholder(target: string): string {
  return `AgentActivityArn_${target.replace(/[^A-Za-z0-9]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}`;
}

/** The activity an agent step of `target` is queued on, for workers of that target to poll. */
export function agentActivityName(namePrefix: string, target: string): string {
  return `${namePrefix}-${target}`;
}

/** The substitution naming the n-th (1-based) child state machine of a split plan. */
export function childPlaceholder(index: number): `PartStateMachineArn${number}` {
  return `PartStateMachineArn${index}`;
}

/** The substitution naming the n-th (1-based) step machine of a plan (see step-machine.ts). */
export function stepMachinePlaceholder(index: number): `StepStateMachineArn${number}` {
  return `StepStateMachineArn${index}`;
}

/** The substitution naming a child state machine's ARN: a part's or a step machine's. */
export type MachinePlaceholder =
  | ReturnType<typeof childPlaceholder>
  | ReturnType<typeof stepMachinePlaceholder>;

/** Whether a definition's `arnSubstitution` names a step machine (else it is a part). */
export function isStepMachinePlaceholder(name: string): boolean {
  return /^StepStateMachineArn\d+$/.test(name);
}

/** `${Name}` as it appears in the definition. */
export function ref(name: string): string {
  return `\${${name}}`;
}

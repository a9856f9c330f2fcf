/**
 * Plan-wide facts the Lambdas need, carried once per run as workflow variables instead of in
 * every state: `$context` (the plan's context), `$secrets` (secret declarations: names, sources,
 * refs, never values) and `$approval` (who may answer gates). They are literals of the definition,
 * so they are bound to the approved digest like everything else the machine does.
 */
import type { Plan } from '../plan/schema.ts';
import type { GateApprovers } from '../runtime/payloads/index.ts';
import { literal } from './jsonata.ts';

/** The plan-wide workflow variables: `$context`, `$secrets`, `$approval`. */
export interface PlanVariables {
  readonly context: Plan['context'];
  readonly secrets: Plan['secrets'];
  readonly approval: GateApprovers;
}

export function planVariables(plan: Plan): PlanVariables {
  const { approvers, forbiddenApprovers, quorum } = plan.approval;
  return {
    context: plan.context,
    secrets: plan.secrets,
    approval: { approvers, forbiddenApprovers, quorum },
  };
}

/** The Assign entries that set the variables. */
export function planVariablesAssign(variables: PlanVariables): Record<string, string> {
  return {
    context: literal(variables.context),
    secrets: literal(variables.secrets),
    approval: literal(variables.approval),
  };
}

/**
 * Plan-wide facts the Lambdas need, carried once per run as workflow variables instead of in
 * every state: `$context` (the plan's context), `$secrets` (secret declarations: names, sources,
 * refs, never values) and `$approval` (who may answer gates). They are literals of the definition,
 * so they are bound to the approved digest like everything else the machine does.
 */
import type { Plan } from '../plan/schema.ts';
import type { GateApprovers } from '../runtime/payloads/index.ts';
import { literal } from './jsonata.ts';

export interface PlanFacts {
  readonly context: Plan['context'];
  readonly secrets: Plan['secrets'];
  readonly approval: GateApprovers;
}

export function planFacts(plan: Plan): PlanFacts {
  const { approvers, forbiddenApprovers, quorum } = plan.approval;
  return {
    context: plan.context,
    secrets: plan.secrets,
    approval: { approvers, forbiddenApprovers, quorum },
  };
}

/** The Assign entries that set the variables. */
export function planFactsAssign(facts: PlanFacts): Record<string, string> {
  return {
    context: literal(facts.context),
    secrets: literal(facts.secrets),
    approval: literal(facts.approval),
  };
}

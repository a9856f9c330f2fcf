/**
 * The frame of a child state machine (a block of a split plan): `Start part` takes the plan
 * identity, modifications and needed ledger entries from the input (see `ChildInput` in
 * lib/runtime/payloads/index.ts) into the same workflow variables the parent uses; `Part done`
 * returns the entries the parent still needs. Children have no gate: the parent's approval
 * (same digest) covers them.
 */
import type { RecipeSummary } from '../runtime/payloads/index.ts';
import { entriesOf } from './dataflow.ts';
import { jsonata, literal } from './jsonata.ts';
import { type PlanVariables, planVariablesAssign } from './plan-variables.ts';
import { type Fragment, Pass } from './states/index.ts';

export interface ChildMachineProps {
  readonly recovery: Readonly<Record<string, RecipeSummary>>;
  /** The same literals as the parent's: a child's plan variables come from its definition, not its input. */
  readonly planVariables: PlanVariables;
  /** Entries the parent reads after this block. */
  readonly outputs: readonly string[];
}

export const CHILD_STATES = { start: 'Start part', done: 'Part done' } as const;

export class ChildMachine {
  constructor(private readonly props: ChildMachineProps) {}

  /** The frame around `body`; `body` must end at {@link CHILD_STATES.done}. */
  toAsl(body: Fragment): Fragment {
    const states = [
      new Pass(CHILD_STATES.start, {
        assign: {
          plan: jsonata('$states.input.plan'),
          executionId: jsonata('$states.input.executionId'),
          recovery: literal(this.props.recovery),
          ...planVariablesAssign(this.props.planVariables),
          mods: jsonata('{"skipSteps": $states.input.skipSteps, "argOverrides": $states.input.argOverrides}'),
        },
        output: jsonata('{"steps": $states.input.steps}'),
        next: body.startAt,
      }),
      ...body.states,
      new Pass(CHILD_STATES.done, { output: jsonata(`{"steps": ${entriesOf(this.props.outputs)}}`) }),
    ];
    return { startAt: CHILD_STATES.start, states };
  }
}

/**
 * The gate in front of a step with `requiresApproval`: asked only when the step would run (not
 * skipped, every dependency completed). ASK_FOR_CLARIFICATION asks again; every other decision
 * goes on to the runner, which treats REJECT as "skip this step" (seed 001) and applies
 * APPROVE_WITH_MODIFICATIONS' arg overrides for this step.
 */
import type { StepView } from '../runtime/payloads/index.ts';
import type { Fragment } from './asl.ts';
import { allCompleted, CURRENT, entriesOf, STEPS, skippedByApprover, withCurrent } from './dataflow.ts';
import { type GateLadderPolicy, gateLadder } from './gate-ladder.ts';
import { jsonata, literal } from './jsonata.ts';
import type { BranchScope } from './scope.ts';

export interface StepGateProps {
  readonly stepId: string;
  readonly description: string;
  readonly dependsOn: readonly string[];
  /**
   * The step as its approvers see it (lib/compiler/approval-view.ts); the gate also gets the
   * ledger entries of the steps its call and contract read, to show the values they will consume.
   * @default - the description only
   */
  readonly view?: StepView;
  /** The approval policy's timeout ladder (its last rung rejects: the step is skipped). */
  readonly ladder: GateLadderPolicy;
  /** The step's runner state, where every decision but ASK_FOR_CLARIFICATION leads. */
  readonly runState: string;
}

export function stepGateStates(stepId: string) {
  return { check: `Gate? ${stepId}`, gate: `Gate ${stepId}`, decision: `Gate decision ${stepId}` };
}

export class StepGate {
  constructor(private readonly props: StepGateProps) {}

  toAsl(scope: BranchScope): Fragment {
    const { stepId, runState } = this.props;
    const names = stepGateStates(stepId);
    const round = `($exists(${CURRENT}.round) ? ${CURRENT}.round : 1)`;
    const view = this.props.view;
    const consumed = [
      ...new Set(
        [...(view?.call?.references ?? []), ...(view?.contract?.references ?? [])].map((r) => r.step),
      ),
    ]
      .filter((id) => id !== stepId)
      .sort();
    return {
      startAt: names.check,
      states: {
        [names.check]: {
          Type: 'Choice',
          Comment: 'A skipped or blocked step runs through without asking anyone.',
          Choices: [
            {
              Condition: jsonata(
                `$not(${skippedByApprover(stepId)}) and ${allCompleted(this.props.dependsOn)}`,
              ),
              Next: names.gate,
            },
          ],
          Default: runState,
        },
        ...gateLadder({
          kind: 'step',
          name: names.gate,
          payload: {
            stepId,
            description: literal(this.props.description),
            ...(this.props.view ? { view: literal(this.props.view) } : {}),
            ...(consumed.length > 0 ? { inputs: jsonata(entriesOf(consumed)) } : {}),
            round: jsonata(round),
            question: jsonata(`$exists(${CURRENT}.question) ? ${CURRENT}.question : null`),
          },
          policy: this.props.ladder,
          onDecision: {
            Output: jsonata(withCurrent(`{"round": ${round}, "gate": $states.result}`)),
            Next: names.decision,
          },
          onTimeout: {
            Output: jsonata(withCurrent(`{"stepId": "${stepId}", "gate": "step"}`)),
            Next: scope.fail(),
          },
        }),
        [names.decision]: {
          Type: 'Choice',
          Choices: [
            { Condition: jsonata(`${CURRENT}.gate.decision = "ASK_FOR_CLARIFICATION"`), Next: names.gate },
          ],
          Default: runState,
          Output: jsonata(
            `${CURRENT}.gate.decision = "ASK_FOR_CLARIFICATION" ? {"steps": ${STEPS}, "current": {"round": ${CURRENT}.round + 1, "question": ${CURRENT}.gate.question}} : {"steps": ${STEPS}, "current": {"gate": ${CURRENT}.gate}}`,
          ),
        },
      },
    };
  }
}

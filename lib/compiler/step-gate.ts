/**
 * The gate in front of a step with `requiresApproval`: asked only when the step would run (not
 * skipped, every dependency completed). ASK_FOR_CLARIFICATION asks again; every other decision
 * goes on to the runner, which treats REJECT as "skip this step" (seed 001; TASK_SKIPPED names who
 * rejected it) and applies APPROVE_WITH_MODIFICATIONS' arg overrides for this step. A REJECT by
 * the timeout ladder (nobody approved in time) skips a non-critical step the same way (TASK_SKIPPED
 * "timed out"); a critical step it stops like an escalation's SKIP of a critical step does:
 * `Plangate.CriticalStepSkipped`, so a run whose critical step nobody approved never succeeds.
 */
import { type StepView, TIMED_OUT_SKIP_REASON, TIMEOUT_DECIDER } from '../runtime/payloads/index.ts';
import { allCompleted, CURRENT, entriesOf, STEPS, skippedByApprover, withCurrent } from './dataflow.ts';
import { type GateLadderPolicy, gateLadder } from './gate-ladder.ts';
import { jsonata, literal, quote } from './jsonata.ts';
import type { BranchScope } from './scope.ts';
import { Choice, type Fragment } from './states/index.ts';

export interface StepGateProps {
  readonly stepId: string;
  readonly description: string;
  readonly dependsOn: readonly string[];
  /** A critical step that nobody approved in time stops the run instead of being skipped. */
  readonly critical: boolean;
  /**
   * The step as its approvers see it (lib/runtime/gate/approval-view.ts); the gate also gets the
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

/**
 * The step gate's REJECT in the gate decision `gate` (JSONata), or null: what the runner needs to
 * say who skipped the step (the payloads' StepGateRejection).
 */
export function stepGateRejection(gate: string): string {
  return `${gate}.decision = "REJECT" ? ${gate} : null`;
}

export class StepGate {
  constructor(private readonly props: StepGateProps) {}

  toAsl(scope: BranchScope): Fragment {
    const { stepId, runState, critical } = this.props;
    const names = stepGateStates(stepId);
    const round = `($exists(${CURRENT}.round) ? ${CURRENT}.round : 1)`;
    const timedOut = `${CURRENT}.gate.decision = "REJECT" and ${CURRENT}.gate.by = ${quote(TIMEOUT_DECIDER)}`;
    // What the scope's Fail state reads: a SKIP decision → Plangate.CriticalStepSkipped.
    const stopped = `{"stepId": ${quote(stepId)}, "decision": "SKIP", "by": ${quote(TIMEOUT_DECIDER)}, "reason": ${quote(TIMED_OUT_SKIP_REASON)}}`;
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
      states: [
        new Choice(names.check, {
          comment: 'A skipped or blocked step runs through without asking anyone.',
          choices: [
            {
              condition: jsonata(
                `$not(${skippedByApprover(stepId)}) and ${allCompleted(this.props.dependsOn)}`,
              ),
              next: names.gate,
            },
          ],
          default: runState,
          // A step that will run asks its approvers.
          happyPath: names.gate,
        }),
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
            output: jsonata(withCurrent(`{"round": ${round}, "gate": $states.result}`)),
            next: names.decision,
          },
          onTimeout: {
            output: jsonata(withCurrent(`{"stepId": "${stepId}", "gate": "step"}`)),
            next: scope.fail(),
          },
        }),
        new Choice(names.decision, {
          choices: [
            { condition: jsonata(`${CURRENT}.gate.decision = "ASK_FOR_CLARIFICATION"`), next: names.gate },
            ...(critical ? [{ condition: jsonata(timedOut), next: scope.fail() }] : []),
          ],
          default: runState,
          output: jsonata(
            `${CURRENT}.gate.decision = "ASK_FOR_CLARIFICATION" ? {"steps": ${STEPS}, "current": {"round": ${CURRENT}.round + 1, "question": ${CURRENT}.gate.question}} : ${critical ? `${timedOut} ? ${withCurrent(stopped)} : ` : ''}{"steps": ${STEPS}, "current": {"gate": ${CURRENT}.gate}}`,
          ),
        }),
      ],
    };
  }
}

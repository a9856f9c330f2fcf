/**
 * The first states of every top-level machine: `Start` assigns the plan-wide variables, then
 * the plan gate waits for a decision (lambda:invoke.waitForTaskToken) and a Choice routes it:
 * APPROVE → run; APPROVE_WITH_MODIFICATIONS → run with `$mods` set (skipped steps, arg
 * overrides); ASK_FOR_CLARIFICATION → ask again (round + 1, with the question);
 * REJECT → the completion states with the error `Plangate.GateRejected` (the reason as its cause),
 * so EXECUTION_COMPLETE is written and the machine then fails with it. No decision within the
 * timeout: the policy's timeout ladder (gate-ladder.ts) reminds, escalates, and finally rejects
 * with reason `timed out`; only if the gate Lambda cannot even do that, `Plangate.GateTimedOut`.
 */
import {
  MACHINE_ERRORS,
  type PlanIdentity,
  type PlanSummary,
  type RecipeSummary,
} from '../runtime/payloads/index.ts';
import { type GateLadderPolicy, gateLadder } from './gate-ladder.ts';
import { jsonata, literal } from './jsonata.ts';
import { type PlanVariables, planVariablesAssign } from './plan-variables.ts';
import { Choice, type Fragment, Pass } from './states/index.ts';

export interface PlanGateProps {
  readonly plan: PlanIdentity;
  /** What the classifier needs of each recipe, assigned to `$recovery`. */
  readonly recovery: Readonly<Record<string, RecipeSummary>>;
  /** Context, secret declarations and approval policy, assigned once to `$context`, `$secrets`, `$approval`. */
  readonly planVariables: PlanVariables;
  /** What the approver is shown of the plan. */
  readonly summary: PlanSummary;
  /** The approval policy's timeout ladder. */
  readonly ladder: GateLadderPolicy;
  /** The state that runs the approved plan. */
  readonly next: string;
  /** Where a plan that will not run goes with its `error` (Finalize: EXECUTION_COMPLETE, then Fail). */
  readonly finish: string;
}

export const PLAN_GATE_STATES = {
  start: 'Start',
  gate: 'Plan gate',
  decision: 'Plan gate decision',
  rejected: 'Plan rejected',
  timedOut: 'Plan gate timed out',
} as const;

const DECISION = '$decision.decision';

export class PlanGate {
  constructor(private readonly props: PlanGateProps) {}

  toAsl(): Fragment {
    const s = PLAN_GATE_STATES;
    return {
      startAt: s.start,
      states: [
        new Pass(s.start, {
          comment: 'Plan-wide variables; the ledger starts empty.',
          assign: {
            plan: literal(this.props.plan),
            executionId: jsonata('$states.context.Execution.Id'),
            recovery: literal(this.props.recovery),
            ...planVariablesAssign(this.props.planVariables),
            // Once here, not in each rung of the gate's ladder: the graph may be tens of KiB.
            summary: literal(this.props.summary),
            mods: literal({ skipSteps: [], argOverrides: {} }),
            round: 1,
            question: null,
          },
          output: literal({ steps: {} }),
          next: s.gate,
        }),
        ...gateLadder({
          kind: 'plan',
          name: s.gate,
          comment: 'Blocks until a person decides; the gate Lambda keeps the token server-side.',
          payload: {
            round: jsonata('$round'),
            question: jsonata('$question'),
            summary: jsonata('$summary'),
          },
          policy: this.props.ladder,
          onDecision: {
            assign: { decision: jsonata('$states.result') },
            output: jsonata('$states.input'),
            next: s.decision,
          },
          onTimeout: { next: s.timedOut },
        }),
        new Choice(s.decision, {
          choices: [
            { condition: jsonata(`${DECISION} = "APPROVE"`), next: this.props.next },
            {
              condition: jsonata(`${DECISION} = "APPROVE_WITH_MODIFICATIONS"`),
              assign: {
                mods: jsonata(
                  '{"skipSteps": $exists($decision.skipSteps) ? $decision.skipSteps : [], "argOverrides": $exists($decision.argOverrides) ? $decision.argOverrides : {}}',
                ),
              },
              next: this.props.next,
            },
            {
              condition: jsonata(`${DECISION} = "ASK_FOR_CLARIFICATION"`),
              assign: { round: jsonata('$round + 1'), question: jsonata('$decision.question') },
              next: s.gate,
            },
          ],
          // REJECT, and anything that is not a decision: fail closed.
          default: s.rejected,
        }),
        new Pass(s.rejected, {
          output: jsonata(
            `{"error": {"Error": "${MACHINE_ERRORS.gateRejected}", "Cause": $exists($decision.reason) ? $decision.reason : $string($decision)}}`,
          ),
          next: this.props.finish,
        }),
        new Pass(s.timedOut, {
          output: {
            error: {
              Error: MACHINE_ERRORS.gateTimedOut,
              Cause:
                'The plan gate could not be expired: no decision arrived, and the gate did not answer its expiry.',
            },
          },
          next: this.props.finish,
        }),
      ],
    };
  }
}

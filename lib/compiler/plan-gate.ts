/**
 * The first states of every top-level machine: `Start` assigns the plan-wide variables, then
 * the plan gate waits for a decision (lambda:invoke.waitForTaskToken) and a Choice routes it:
 * APPROVE → run; APPROVE_WITH_MODIFICATIONS → run with `$mods` set (skipped steps, arg
 * overrides); ASK_FOR_CLARIFICATION → ask again (round + 1, with the question);
 * REJECT → Fail `Plangate.GateRejected`. No decision within the timeout → Fail `Plangate.GateTimedOut`.
 */
import { MACHINE_ERRORS, type PlanIdentity, type RecipeSummary } from '../runtime/payloads.ts';
import { type Fragment, LAMBDA_INVOKE_WAIT, SERVICE_RETRY } from './asl.ts';
import { jsonata, literal } from './jsonata.ts';
import { PLACEHOLDERS, ref } from './placeholders.ts';

export interface PlanGateProps {
  readonly plan: PlanIdentity;
  /** What the classifier needs of each recipe, assigned to `$recovery`. */
  readonly recovery: Readonly<Record<string, RecipeSummary>>;
  /** The approval policy's timeout. */
  readonly timeoutSeconds: number;
  /** The state that runs the approved plan. */
  readonly next: string;
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
      states: {
        [s.start]: {
          Type: 'Pass',
          Comment: 'Plan-wide variables; the ledger starts empty.',
          Assign: {
            plan: literal(this.props.plan),
            executionId: jsonata('$states.context.Execution.Id'),
            recovery: literal(this.props.recovery),
            mods: literal({ skipSteps: [], argOverrides: {} }),
            round: 1,
            question: null,
          },
          Output: literal({ steps: {} }),
          Next: s.gate,
        },
        [s.gate]: {
          Type: 'Task',
          Comment: 'Blocks until a person decides; the gate Lambda keeps the token server-side.',
          Resource: LAMBDA_INVOKE_WAIT,
          Arguments: {
            FunctionName: ref(PLACEHOLDERS.gate),
            Payload: {
              kind: 'plan',
              taskToken: jsonata('$states.context.Task.Token'),
              plan: jsonata('$plan'),
              executionId: jsonata('$executionId'),
              round: jsonata('$round'),
              question: jsonata('$question'),
              timeoutSeconds: this.props.timeoutSeconds,
            },
          },
          TimeoutSeconds: this.props.timeoutSeconds,
          Assign: { decision: jsonata('$states.result') },
          Output: jsonata('$states.input'),
          Retry: [SERVICE_RETRY],
          Catch: [{ ErrorEquals: ['States.Timeout'], Next: s.timedOut }],
          Next: s.decision,
        },
        [s.decision]: {
          Type: 'Choice',
          Choices: [
            { Condition: jsonata(`${DECISION} = "APPROVE"`), Next: this.props.next },
            {
              Condition: jsonata(`${DECISION} = "APPROVE_WITH_MODIFICATIONS"`),
              Assign: {
                mods: jsonata(
                  '{"skipSteps": $exists($decision.skipSteps) ? $decision.skipSteps : [], "argOverrides": $exists($decision.argOverrides) ? $decision.argOverrides : {}}',
                ),
              },
              Next: this.props.next,
            },
            {
              Condition: jsonata(`${DECISION} = "ASK_FOR_CLARIFICATION"`),
              Assign: { round: jsonata('$round + 1'), question: jsonata('$decision.question') },
              Next: s.gate,
            },
          ],
          // REJECT, and anything that is not a decision: fail closed.
          Default: s.rejected,
        },
        [s.rejected]: {
          Type: 'Fail',
          Error: MACHINE_ERRORS.gateRejected,
          Cause: jsonata('$exists($decision.reason) ? $decision.reason : $string($decision)'),
        },
        [s.timedOut]: {
          Type: 'Fail',
          Error: MACHINE_ERRORS.gateTimedOut,
          Cause: 'No decision arrived at the plan gate before its timeout.',
        },
      },
    };
  }
}

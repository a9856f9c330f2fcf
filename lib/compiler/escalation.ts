/**
 * What happens after a step's Retry blocks gave up: the classifier names the failure and either
 * loops the whole step (runner → checker) again, or escalates. The escalation gate asks a person
 * (or applies the recipe's `skip`/`abort` itself) and a Choice routes the answer:
 * RETRY → the runner again (attempt + 1); SKIP → the checker records the step `skipped` (its
 * dependents will be `blocked`), or, for a critical step, Fail `Plangate.CriticalStepSkipped`;
 * ABORT → Fail `Plangate.Aborted`.
 */
import type { RecoveryRecipe } from '../plan/schema.ts';
import type { Fragment } from './asl.ts';
import { LAMBDA_INVOKE, SERVICE_RETRY } from './asl.ts';
import { CURRENT, EXECUTION_SCOPE, mergeCurrent, nextAttempt, withCurrent } from './dataflow.ts';
import { gateTask } from './gate-task.ts';
import { jsonata, literal } from './jsonata.ts';
import { PLACEHOLDERS, ref } from './placeholders.ts';
import type { BranchScope } from './scope.ts';

export interface EscalationProps {
  readonly stepId: string;
  readonly description: string;
  readonly critical: boolean;
  /** The step's own `on_fail`. @default - the recipes decide */
  readonly onFail?: { readonly retries: number; readonly escalation: RecoveryRecipe['escalation'] };
  /** The approval policy's timeout, used for the escalation gate. */
  readonly timeoutSeconds: number;
  readonly runState: string;
  readonly checkState: string;
}

export function escalationStates(stepId: string) {
  return {
    classify: `Classify ${stepId}`,
    triage: `Triage ${stepId}`,
    escalate: `Escalate ${stepId}`,
    decide: `Decide ${stepId}`,
  };
}

export class Escalation {
  constructor(private readonly props: EscalationProps) {}

  toAsl(scope: BranchScope): Fragment {
    const { stepId, critical } = this.props;
    const names = escalationStates(stepId);
    const decision = `${CURRENT}.decision`;
    const skipped = withCurrent(
      `{"attempt": ${CURRENT}.attempt, "run": {"stepId": "${stepId}", "status": "skipped", "attempt": ${CURRENT}.attempt, "durationMs": 0}}`,
    );
    const stopped = mergeCurrent(`{"stepId": "${stepId}"}`);
    return {
      startAt: names.classify,
      states: {
        [names.classify]: {
          Type: 'Task',
          Resource: LAMBDA_INVOKE,
          Arguments: {
            FunctionName: ref(PLACEHOLDERS.classifier),
            Payload: {
              ...EXECUTION_SCOPE,
              stepId,
              phase: jsonata(`${CURRENT}.phase`),
              error: jsonata(`${CURRENT}.error`),
              attempt: jsonata(`${CURRENT}.attempt`),
              recovery: jsonata('$recovery'),
              ...(this.props.onFail ? { onFail: literal(this.props.onFail) } : {}),
            },
          },
          Output: jsonata(mergeCurrent('{"failure": $states.result.Payload}')),
          Retry: [SERVICE_RETRY],
          Next: names.triage,
        },
        [names.triage]: {
          Type: 'Choice',
          Choices: [{ Condition: jsonata(`${CURRENT}.failure.action = "RETRY"`), Next: this.props.runState }],
          Default: names.escalate,
          Output: jsonata(`${CURRENT}.failure.action = "RETRY" ? ${nextAttempt()} : $states.input`),
        },
        [names.escalate]: gateTask({
          kind: 'escalation',
          payload: {
            stepId,
            description: literal(this.props.description),
            round: jsonata(`${CURRENT}.attempt`),
            question: null,
            failure: jsonata(`${CURRENT}.failure`),
            attempt: jsonata(`${CURRENT}.attempt`),
            critical,
            policy: jsonata(`${CURRENT}.failure.policy`),
          },
          timeoutSeconds: this.props.timeoutSeconds,
          rest: {
            Output: jsonata(mergeCurrent('{"decision": $states.result.decision}')),
            Catch: [
              {
                ErrorEquals: ['States.Timeout'],
                Output: jsonata(mergeCurrent(`{"stepId": "${stepId}", "gate": "escalation"}`)),
                Next: scope.fail('gateTimedOut'),
              },
            ],
            Next: names.decide,
          },
        }),
        [names.decide]: {
          Type: 'Choice',
          Choices: [
            { Condition: jsonata(`${decision} = "RETRY"`), Next: this.props.runState },
            {
              Condition: jsonata(`${decision} = "SKIP"`),
              Next: critical ? scope.fail('criticalStepSkipped') : this.props.checkState,
            },
          ],
          // ABORT, and anything that is not a decision: stop.
          Default: scope.fail('aborted'),
          // A critical step's SKIP stops the run like ABORT does, so it needs no `skipped` record.
          Output: jsonata(
            critical
              ? `${decision} = "RETRY" ? ${nextAttempt()} : ${stopped}`
              : `${decision} = "RETRY" ? ${nextAttempt()} : ${decision} = "SKIP" ? ${skipped} : ${stopped}`,
          ),
        },
      },
    };
  }
}

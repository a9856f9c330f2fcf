/**
 * A step: the step-runner task (calls the tool) followed by the contract-checker task (proves
 * it). Only the checker's answer enters the ledger, so only the checker completes a step. Both
 * carry the recipe Retry blocks; anything left over is caught into the step's escalation.
 */
import type { Contract, Step } from '../plan/schema.ts';
import type { Fragment } from './asl.ts';
import { LAMBDA_INVOKE } from './asl.ts';
import {
  ATTEMPT,
  CURRENT,
  EXECUTION_SCOPE,
  entriesOf,
  mergeCurrent,
  STEPS,
  skippedByApprover,
} from './dataflow.ts';
import { jsonata, literal, lookup } from './jsonata.ts';
import { PLACEHOLDERS, ref } from './placeholders.ts';
import type { RetryPolicy } from './retry-policy.ts';

export interface StepTaskProps {
  readonly step: Step;
  /** 1-based position in the plan, for "[Task N/M]". */
  readonly index: number;
  readonly total: number;
  readonly retryPolicy: RetryPolicy;
  /** Where failures go (the step's escalation). */
  readonly recoverState: string;
  /** Above this many bytes the runner stores the output outside the payload. */
  readonly inlineOutputLimitBytes: number;
  /**
   * The plan's context, given to the runner only when the step's args reference it.
   * @default - not passed
   */
  readonly context?: Record<string, unknown>;
}

export function stepTaskStates(stepId: string) {
  return { run: `Run ${stepId}`, check: `Check ${stepId}` };
}

/** The ledger entry fields the checker's answer contributes (evidence stays in the journal). */
const ENTRY_FIELDS = '["status", "output", "outputRef"]';

export class StepTask {
  constructor(private readonly props: StepTaskProps) {}

  toAsl(next: string | undefined): Fragment {
    const { step, index, total } = this.props;
    const names = stepTaskStates(step.id);
    const retry = this.props.retryPolicy.toAsl();
    const catchInto = (phase: 'run' | 'check') => [
      {
        ErrorEquals: ['States.ALL'],
        Output: jsonata(
          mergeCurrent(`{"attempt": ${ATTEMPT}, "phase": "${phase}", "error": $states.errorOutput}`),
        ),
        Next: this.props.recoverState,
      },
    ];
    const gate = `${CURRENT}.gate`;
    return {
      startAt: names.run,
      states: {
        [names.run]: {
          Type: 'Task',
          Resource: LAMBDA_INVOKE,
          Arguments: {
            FunctionName: ref(PLACEHOLDERS.stepRunner),
            Payload: {
              ...EXECUTION_SCOPE,
              stepId: step.id,
              index,
              total,
              description: literal(step.description),
              ...(step.tool !== undefined ? { tool: literal(step.tool) } : {}),
              ...(step.target !== undefined ? { target: literal(step.target) } : {}),
              ...(step.task !== undefined ? { task: literal(step.task) } : {}),
              subscriptions: literal(step.subscriptions),
              args: literal(step.args),
              argOverrides: jsonata(
                `$merge([{}, ${lookup('$mods.argOverrides', step.id)}, ${lookup(`${gate}.argOverrides`, step.id)}])`,
              ),
              ...(this.props.context !== undefined ? { context: literal(this.props.context) } : {}),
              dependsOn: literal(step.dependsOn),
              inputs: jsonata(entriesOf(step.dependsOn)),
              skip: jsonata(`${skippedByApprover(step.id)} or ${gate}.decision = "REJECT"`),
              attempt: jsonata(ATTEMPT),
              requiresHuman: step.requiresHuman,
              outputs: literal(step.outputs),
              timeoutSeconds: step.timeoutSeconds,
              inlineOutputLimitBytes: this.props.inlineOutputLimitBytes,
            },
          },
          TimeoutSeconds: step.timeoutSeconds,
          Output: jsonata(mergeCurrent(`{"attempt": ${ATTEMPT}, "run": $states.result.Payload}`)),
          ...(retry.length > 0 ? { Retry: retry } : {}),
          Catch: catchInto('run'),
          Next: names.check,
        },
        [names.check]: {
          Type: 'Task',
          Resource: LAMBDA_INVOKE,
          Arguments: {
            FunctionName: ref(PLACEHOLDERS.contractChecker),
            Payload: {
              ...EXECUTION_SCOPE,
              stepId: step.id,
              index,
              total,
              ...contractField(step.contract),
              run: jsonata(`${CURRENT}.run`),
              attempt: jsonata(ATTEMPT),
            },
          },
          Output: jsonata(
            `{"steps": $merge([${STEPS}, {"${step.id}": $sift($states.result.Payload, function($v, $k) { $k in ${ENTRY_FIELDS} })}])}`,
          ),
          ...(retry.length > 0 ? { Retry: retry } : {}),
          Catch: catchInto('check'),
          ...(next === undefined ? { End: true } : { Next: next }),
        },
      },
    };
  }
}

function contractField(contract: Contract | undefined): { contract?: string } {
  return contract === undefined ? {} : { contract: literal(contract) };
}

/**
 * A task-token wait on the gate Lambda: the one shape behind the plan gate, step gates,
 * escalation gates and human steps. The token goes to the gate Lambda (which keeps it
 * server-side) together with the plan identity and the plan's approval policy (`$approval`).
 */
import type { GateKind } from '../runtime/payloads/index.ts';
import { type AslState, LAMBDA_INVOKE_WAIT, SERVICE_RETRY } from './asl.ts';
import { CURRENT, EXECUTION_SCOPE, type RunValues, WORKFLOW_VARIABLES } from './dataflow.ts';
import { jsonata, quote } from './jsonata.ts';
import { PLACEHOLDERS, ref } from './placeholders.ts';

export interface GateTaskProps {
  readonly kind: GateKind;
  /**
   * Fields of the GateRequest besides kind, token, plan, executionId and approval: a record of
   * ASL fields, or the source of a JSONata object, evaluated with `$c` bound to the flowing
   * `current` (one expression is smaller than one `{% %}` field per value).
   */
  readonly payload: Readonly<Record<string, unknown>> | string;
  /** How long the gate's link stays valid (sent to the Lambda for its expiry). */
  readonly timeoutSeconds: number;
  /** The wait's TimeoutSeconds, when it ends before the link expires (a reminder follows). @default timeoutSeconds */
  readonly waitSeconds?: number;
  /** ASL fields after the Task's own: Output/Assign, Catch, Next/End. */
  readonly rest: Readonly<Record<string, unknown>>;
  /** @default - none */
  readonly comment?: string;
  /** Where a string `payload` reads the plan, execution id and approval policy. @default WORKFLOW_VARIABLES */
  readonly values?: RunValues;
}

export function gateTask(props: GateTaskProps): AslState {
  const values = props.values ?? WORKFLOW_VARIABLES;
  return {
    Type: 'Task',
    ...(props.comment ? { Comment: props.comment } : {}),
    Resource: LAMBDA_INVOKE_WAIT,
    Arguments: {
      FunctionName: ref(PLACEHOLDERS.gate),
      Payload:
        typeof props.payload === 'string'
          ? jsonata(
              `($c := ${CURRENT}; $merge([{"kind": ${quote(props.kind)}, "taskToken": $states.context.Task.Token, "plan": ${values.plan}, "executionId": ${values.executionId}, "approval": ${values.approval}, "timeoutSeconds": ${props.timeoutSeconds}}, ${props.payload}]))`,
            )
          : {
              kind: props.kind,
              taskToken: jsonata('$states.context.Task.Token'),
              ...EXECUTION_SCOPE,
              approval: jsonata('$approval'),
              ...props.payload,
              timeoutSeconds: props.timeoutSeconds,
            },
    },
    TimeoutSeconds: props.waitSeconds ?? props.timeoutSeconds,
    Retry: [SERVICE_RETRY],
    ...props.rest,
  };
}

/**
 * A task-token wait on the gate Lambda: the one shape behind the plan gate, step gates,
 * escalation gates and human steps. The token goes to the gate Lambda (which keeps it
 * server-side) together with the plan identity and the plan's approval policy (`$approval`).
 */
import type { GateKind } from '../runtime/payloads/index.ts';
import { INTERRUPTED_RETRY, SERVICE_RETRY } from './asl.ts';
import { CURRENT, EXECUTION_SCOPE, type RunValues, WORKFLOW_VARIABLES } from './dataflow.ts';
import { jsonata, quote } from './jsonata.ts';
import { type Catcher, LambdaInvoke, type StateProps, type TaskField } from './states/index.ts';

export interface GateTaskProps extends StateProps {
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
  /** Where a string `payload` reads the plan, execution id and approval policy. @default WORKFLOW_VARIABLES */
  readonly values?: RunValues;
  /** Workflow variables set from the answer. @default - none */
  readonly assign?: Readonly<Record<string, unknown>>;
  /** The state's output, from the answer. @default - the answer */
  readonly output?: unknown;
  /** Where a wait that timed out goes. @default - the timeout fails the branch */
  readonly catch?: readonly Catcher[];
  /** Where the answer goes. */
  readonly next: string;
}

/**
 * The gate's field order: its Retry before what it makes of the answer (the order definitions
 * have always had; it is part of their bytes).
 */
const GATE_FIELD_ORDER: readonly TaskField[] = [
  'Type',
  'Comment',
  'Resource',
  'Arguments',
  'TimeoutSeconds',
  'Retry',
  'Assign',
  'Output',
  'Catch',
  'Next',
  'End',
];

export class GateTask extends LambdaInvoke {
  constructor(name: string, props: GateTaskProps) {
    super(name, {
      lambda: 'gate',
      integrationPattern: 'waitForTaskToken',
      comment: props.comment,
      payload: gatePayload(props),
      timeoutSeconds: props.waitSeconds ?? props.timeoutSeconds,
      // A gate whose opening the engine's stop cut short (kill -9 with the gate Lambda under
      // way) is opened again: otherwise an accepted plan fails at a gate nobody was asked. Not a
      // human step's: its FAILED answer is a task failure, which this retrier would match too.
      retry: props.kind === 'human' ? [SERVICE_RETRY] : [SERVICE_RETRY, INTERRUPTED_RETRY],
      assign: props.assign,
      output: props.output,
      catch: props.catch,
      next: props.next,
    });
  }

  protected override get fieldOrder(): readonly TaskField[] {
    return GATE_FIELD_ORDER;
  }
}

function gatePayload(props: GateTaskProps): Readonly<Record<string, unknown>> | string {
  const values = props.values ?? WORKFLOW_VARIABLES;
  if (typeof props.payload === 'string')
    return jsonata(
      `($c := ${CURRENT}; $merge([{"kind": ${quote(props.kind)}, "taskToken": $states.context.Task.Token, "plan": ${values.plan}, "executionId": ${values.executionId}, "approval": ${values.approval}, "timeoutSeconds": ${props.timeoutSeconds}}, ${props.payload}]))`,
    );
  return {
    kind: props.kind,
    taskToken: jsonata('$states.context.Task.Token'),
    ...EXECUTION_SCOPE,
    approval: jsonata('$approval'),
    ...props.payload,
    timeoutSeconds: props.timeoutSeconds,
  };
}

/**
 * Exact joins across Parallel branches. Step Functions has no join between branches, so a step
 * whose dependencies are not all before it on its own branch waits on a task token
 * (`Join <step>`) that the join Lambda releases when the last of those predecessors has
 * signalled (`Signal <step>`, right after the predecessor's checker). Nothing waits longer than
 * its real dependencies: a predecessor signals the moment its entry is final.
 */
import type { AslState } from './asl.ts';
import { LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT, SERVICE_RETRY, transition } from './asl.ts';
import { EXECUTION_SCOPE, entriesOf, STEPS } from './dataflow.ts';
import { jsonata, literal, lookup } from './jsonata.ts';
import { PLACEHOLDERS, ref } from './placeholders.ts';

export interface JoinWaitProps {
  /** The waiting step. */
  readonly stepId: string;
  /** Its predecessors on other branches. */
  readonly predecessors: readonly string[];
}

export const joinWaitState = (stepId: string) => `Join ${stepId}`;
export const joinSignalState = (stepId: string) => `Signal ${stepId}`;

export class JoinWait {
  constructor(private readonly props: JoinWaitProps) {}

  toAsl(next: string): AslState {
    return {
      // Released by the join Lambda once every listed predecessor has signalled.
      Type: 'Task',
      Resource: LAMBDA_INVOKE_WAIT,
      Arguments: {
        FunctionName: ref(PLACEHOLDERS.join),
        Payload: {
          action: 'wait',
          ...EXECUTION_SCOPE,
          stepId: this.props.stepId,
          predecessors: literal(this.props.predecessors),
          taskToken: jsonata('$states.context.Task.Token'),
        },
      },
      Output: jsonata(`{"steps": $merge([${STEPS}, $states.result.entries])}`),
      Retry: [SERVICE_RETRY],
      ...transition(next),
    };
  }
}

export interface JoinSignalProps {
  /** The step that just finished. */
  readonly stepId: string;
  /** The steps on other branches waiting for it. */
  readonly successors: readonly string[];
  /**
   * The step's transitive dependencies, whose entries (those in its ledger) travel with the
   * signal: a join then hands its step every ancestor on every branch, not only the direct ones.
   * @default - none
   */
  readonly carried?: readonly string[];
}

export class JoinSignal {
  constructor(private readonly props: JoinSignalProps) {}

  toAsl(next: string | undefined): AslState {
    return {
      Type: 'Task',
      Resource: LAMBDA_INVOKE,
      Arguments: {
        FunctionName: ref(PLACEHOLDERS.join),
        Payload: {
          action: 'signal',
          ...EXECUTION_SCOPE,
          stepId: this.props.stepId,
          entry: jsonata(lookup(STEPS, this.props.stepId)),
          successors: literal(this.props.successors),
          ...((this.props.carried ?? []).length > 0
            ? { carried: jsonata(entriesOf(this.props.carried ?? [])) }
            : {}),
        },
      },
      Output: jsonata('$states.input'),
      Retry: [SERVICE_RETRY],
      ...transition(next),
    };
  }
}

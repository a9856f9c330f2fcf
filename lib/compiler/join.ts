/**
 * Exact joins across Parallel branches. Step Functions has no join between branches, so a step
 * whose dependencies are not all before it on its own branch waits on a task token
 * (`Join <step>`) that the join Lambda releases when the last of those predecessors has
 * signalled (`Signal <step>`, right after the predecessor's checker). Nothing waits longer than
 * its real dependencies: a predecessor signals the moment its entry is final.
 */
import { SERVICE_RETRY } from './asl.ts';
import { EXECUTION_SCOPE, entriesOf, STEPS } from './dataflow.ts';
import { jsonata, literal, lookup } from './jsonata.ts';
import { LambdaInvoke, type NextProps } from './states/index.ts';

export interface JoinWaitProps extends NextProps {
  /** The waiting step. */
  readonly stepId: string;
  /** Its predecessors on other branches. */
  readonly predecessors: readonly string[];
}

export const joinWaitState = (stepId: string) => `Join ${stepId}`;
export const joinSignalState = (stepId: string) => `Signal ${stepId}`;

/** `Join <step>`: released by the join Lambda once every listed predecessor has signalled. */
export class JoinWait extends LambdaInvoke {
  constructor(props: JoinWaitProps) {
    super(joinWaitState(props.stepId), {
      lambda: 'join',
      integrationPattern: 'waitForTaskToken',
      payload: {
        action: 'wait',
        ...EXECUTION_SCOPE,
        stepId: props.stepId,
        predecessors: literal(props.predecessors),
        taskToken: jsonata('$states.context.Task.Token'),
      },
      output: jsonata(`{"steps": $merge([${STEPS}, $states.result.entries])}`),
      retry: [SERVICE_RETRY],
      next: props.next,
    });
  }
}

export interface JoinSignalProps extends NextProps {
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

/** `Signal <step>`: tells the join Lambda the step's entry is final. */
export class JoinSignal extends LambdaInvoke {
  constructor(props: JoinSignalProps) {
    const carried = props.carried ?? [];
    super(joinSignalState(props.stepId), {
      lambda: 'join',
      payload: {
        action: 'signal',
        ...EXECUTION_SCOPE,
        stepId: props.stepId,
        entry: jsonata(lookup(STEPS, props.stepId)),
        successors: literal(props.successors),
        ...(carried.length > 0 ? { carried: jsonata(entriesOf(carried)) } : {}),
      },
      output: jsonata('$states.input'),
      retry: [SERVICE_RETRY],
      next: props.next,
    });
  }
}

import type { AslState } from '../asl.ts';
import { defined, HISTORY_EVENTS, State, type StateProps } from './state.ts';

export interface SucceedProps extends StateProps {
  /** The execution's output. @default - the state's input */
  readonly output?: unknown;
}

/** A Succeed state: ends its execution (or branch) successfully. */
export class Succeed extends State {
  constructor(
    name: string,
    private readonly props: SucceedProps,
  ) {
    super(name);
  }

  toAsl(): AslState {
    return defined({ Type: 'Succeed', Comment: this.props.comment, Output: this.props.output });
  }

  get historyEvents(): number {
    return HISTORY_EVENTS.succeed;
  }

  get happyNext(): undefined {
    return undefined;
  }
}

import type { AslState } from '../asl.ts';
import { defined, HISTORY_EVENTS, State, type StateProps } from './state.ts';

export interface FailProps extends StateProps {
  /** The error name, or a JSONata field computing it. */
  readonly error: string;
  /** The cause, or a JSONata field computing it. */
  readonly cause: string;
}

/** A Fail state: ends its execution failed with `error` and `cause`. */
export class Fail extends State {
  constructor(
    name: string,
    private readonly props: FailProps,
  ) {
    super(name);
  }

  toAsl(): AslState {
    const { comment, error, cause } = this.props;
    return defined({ Type: 'Fail', Comment: comment, Error: error, Cause: cause });
  }

  get historyEvents(): number {
    return HISTORY_EVENTS.fail;
  }

  get happyNext(): undefined {
    return undefined;
  }
}

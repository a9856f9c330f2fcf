import type { AslState } from '../asl.ts';
import { defined, HISTORY_EVENTS, type NextProps, State, type StateProps, transition } from './state.ts';

export interface PassProps extends StateProps, NextProps {
  /** Workflow variables set here. @default - none */
  readonly assign?: Readonly<Record<string, unknown>>;
  /** The state's output. @default - its input */
  readonly output?: unknown;
}

/** A Pass state: sets variables and shapes the flowing state, calling nothing. */
export class Pass extends State {
  constructor(
    name: string,
    private readonly props: PassProps,
  ) {
    super(name);
  }

  toAsl(): AslState {
    const { comment, assign, output, next } = this.props;
    return defined({ Type: 'Pass', Comment: comment, Assign: assign, Output: output, ...transition(next) });
  }

  get historyEvents(): number {
    return HISTORY_EVENTS.pass;
  }

  get happyNext(): string | undefined {
    return this.props.next;
  }
}

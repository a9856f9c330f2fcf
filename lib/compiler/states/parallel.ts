import type { AslState, ResourceReference } from '../asl.ts';
import {
  type Branch,
  type Catcher,
  defined,
  HISTORY_EVENTS,
  type NextProps,
  renderCatchers,
  State,
  type StateProps,
  transition,
} from './state.ts';

export interface ParallelProps extends StateProps, NextProps {
  /** The branches, run at once; each is a graph of its own states. */
  readonly branches: readonly Branch[];
  /** The state's output. @default - the branches' outputs, as an array */
  readonly output?: unknown;
  /** Where an error in any branch goes. @default - the error fails this state's branch */
  readonly catch?: readonly Catcher[];
}

/** A Parallel state: runs its branches at once and goes on when the last has ended. */
export class Parallel extends State {
  constructor(
    name: string,
    private readonly props: ParallelProps,
  ) {
    super(name);
  }

  toAsl(): AslState {
    const { comment, branches, output, next } = this.props;
    return defined({
      Type: 'Parallel',
      Comment: comment,
      Branches: branches.map((branch) => branch.toAsl()),
      Output: output,
      Catch: renderCatchers(this.props.catch),
      ...transition(next),
    });
  }

  /** The Parallel's own events; its branches' states count for themselves. */
  get historyEvents(): number {
    return HISTORY_EVENTS.parallel;
  }

  get happyNext(): string | undefined {
    return this.props.next;
  }

  override get branches(): readonly Branch[] {
    return this.props.branches;
  }

  override resources(): readonly ResourceReference[] {
    return this.props.branches.flatMap((branch) => branch.resources());
  }
}

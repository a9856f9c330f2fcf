import type { AslState } from '../asl.ts';
import { defined, HISTORY_EVENTS, State, type StateProps } from './state.ts';

/** One rule of a Choice: the first whose condition holds decides where the run goes. */
export interface ChoiceRule {
  /** A JSONata condition (`{% … %}`). */
  readonly condition: string;
  /** Workflow variables set when this rule is taken. @default - none */
  readonly assign?: Readonly<Record<string, unknown>>;
  readonly next: string;
}

export interface ChoiceProps extends StateProps {
  readonly choices: readonly ChoiceRule[];
  /** Where the run goes when no rule holds. */
  readonly default: string;
  /** The state's output. @default - its input */
  readonly output?: unknown;
  /**
   * Where a run that meets no question, failure or skip goes: the way the compile report
   * counts through this Choice.
   * @default - the Default
   */
  readonly happyPath?: string;
}

/** One rule as ASL. */
export function renderChoiceRule(rule: ChoiceRule): AslState {
  return defined({ Condition: rule.condition, Assign: rule.assign, Next: rule.next });
}

/** A Choice state: routes the run by the first rule whose condition holds. */
export class Choice extends State {
  constructor(
    name: string,
    private readonly props: ChoiceProps,
  ) {
    super(name);
  }

  toAsl(): AslState {
    const { comment, choices, output } = this.props;
    return defined({
      Type: 'Choice',
      Comment: comment,
      Choices: choices.map(renderChoiceRule),
      Default: this.props.default,
      Output: output,
    });
  }

  get historyEvents(): number {
    return HISTORY_EVENTS.choice;
  }

  get happyNext(): string {
    return this.props.happyPath ?? this.props.default;
  }
}

/**
 * Task states: a harness Lambda called (and, with a task token, waited on), a child state machine
 * run to its end, an activity a worker polls.
 */

import type { StateMachineHandlerName } from '../../runtime/catalog.ts';
import type { AslRetrier, AslState, ResourceReference } from '../asl.ts';
import { LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT, START_EXECUTION_SYNC } from '../asl.ts';
import { agentActivityPlaceholder, type MachinePlaceholder, PLACEHOLDERS, ref } from '../placeholders.ts';
import {
  type Catcher,
  HISTORY_EVENTS,
  type NextProps,
  nonEmpty,
  renderCatchers,
  State,
  type StateProps,
} from './state.ts';

export interface TaskProps extends StateProps, NextProps {
  /** Seconds before the task fails with `States.Timeout`: a number, or a JSONata field. @default - none */
  readonly timeoutSeconds?: number | string;
  /** Seconds between a worker's heartbeats before the task fails with `States.Timeout`. @default - none */
  readonly heartbeatSeconds?: number;
  /** Workflow variables set from the result. @default - none */
  readonly assign?: Readonly<Record<string, unknown>>;
  /** The state's output. @default - the task's result */
  readonly output?: unknown;
  /** Retriers, tried in order. @default - no retry */
  readonly retry?: readonly AslRetrier[];
  /** Where errors the retriers gave up on go. @default - they fail the branch */
  readonly catch?: readonly Catcher[];
}

/** The fields of a Task state. */
export type TaskField =
  | 'Type'
  | 'Comment'
  | 'Resource'
  | 'Arguments'
  | 'TimeoutSeconds'
  | 'HeartbeatSeconds'
  | 'Assign'
  | 'Output'
  | 'Retry'
  | 'Catch'
  | 'Next'
  | 'End';

const TASK_FIELD_ORDER: readonly TaskField[] = [
  'Type',
  'Comment',
  'Resource',
  'Arguments',
  'TimeoutSeconds',
  'HeartbeatSeconds',
  'Assign',
  'Output',
  'Retry',
  'Catch',
  'Next',
  'End',
];

export abstract class Task extends State {
  protected constructor(
    name: string,
    private readonly taskProps: TaskProps,
  ) {
    super(name);
  }

  protected abstract renderResource(): string;

  protected abstract renderArguments(): unknown;

  /** The order the fields are rendered in: it is part of the definition's bytes. */
  protected get fieldOrder(): readonly TaskField[] {
    return TASK_FIELD_ORDER;
  }

  toAsl(): AslState {
    const out: AslState = {};
    for (const field of this.fieldOrder) {
      const value = this.field(field);
      if (value !== undefined) out[field] = value;
    }
    return out;
  }

  private field(field: TaskField): unknown {
    const p = this.taskProps;
    switch (field) {
      case 'Type':
        return 'Task';
      case 'Comment':
        return p.comment;
      case 'Resource':
        return this.renderResource();
      case 'Arguments':
        return this.renderArguments();
      case 'TimeoutSeconds':
        return p.timeoutSeconds;
      case 'HeartbeatSeconds':
        return p.heartbeatSeconds;
      case 'Assign':
        return p.assign;
      case 'Output':
        return p.output;
      case 'Retry':
        return nonEmpty(p.retry);
      case 'Catch':
        return renderCatchers(p.catch);
      case 'Next':
        return p.next;
      case 'End':
        return p.next === undefined ? true : undefined;
    }
  }

  get happyNext(): string | undefined {
    return this.taskProps.next;
  }
}

export interface LambdaInvokeProps extends TaskProps {
  /** The harness Lambda called (the catalog's placeholder stands for its ARN). */
  readonly lambda: StateMachineHandlerName;
  /** The request: a record of fields, or one JSONata field. */
  readonly payload: Readonly<Record<string, unknown>> | string;
  /**
   * `waitForTaskToken`: the state waits until the token the Lambda got is answered.
   * @default 'requestResponse'
   */
  readonly integrationPattern?: 'requestResponse' | 'waitForTaskToken';
}

/** A call of a harness Lambda (`lambda:invoke`, or `lambda:invoke.waitForTaskToken`). */
export class LambdaInvoke extends Task {
  constructor(
    name: string,
    private readonly props: LambdaInvokeProps,
  ) {
    super(name, props);
  }

  protected renderResource(): string {
    return this.waits ? LAMBDA_INVOKE_WAIT : LAMBDA_INVOKE;
  }

  protected renderArguments(): unknown {
    return { FunctionName: ref(PLACEHOLDERS[this.props.lambda]), Payload: this.props.payload };
  }

  get historyEvents(): number {
    return this.waits ? HISTORY_EVENTS.waitForToken : HISTORY_EVENTS.invoke;
  }

  override resources(): readonly ResourceReference[] {
    return [{ kind: 'lambda', handler: this.props.lambda, placeholder: PLACEHOLDERS[this.props.lambda] }];
  }

  private get waits(): boolean {
    return this.props.integrationPattern === 'waitForTaskToken';
  }
}

export interface StartExecutionProps extends TaskProps {
  /** The placeholder standing for the child machine's ARN. */
  readonly stateMachine: MachinePlaceholder;
  /** The child execution's input: a record of fields, or one JSONata field. */
  readonly input: Readonly<Record<string, unknown>> | string;
}

/** A child state machine run to its end (`states:startExecution.sync:2`); the result holds its output. */
export class StartExecution extends Task {
  constructor(
    name: string,
    private readonly props: StartExecutionProps,
  ) {
    super(name, props);
  }

  protected renderResource(): string {
    return START_EXECUTION_SYNC;
  }

  protected renderArguments(): unknown {
    return { StateMachineArn: ref(this.props.stateMachine), Input: this.props.input };
  }

  /** The parent's events; the child's are in its own history. */
  get historyEvents(): number {
    return HISTORY_EVENTS.childExecution;
  }

  /** The child machine this state runs. */
  get stateMachine(): MachinePlaceholder {
    return this.props.stateMachine;
  }

  override resources(): readonly ResourceReference[] {
    return [{ kind: 'stateMachine', placeholder: this.props.stateMachine }];
  }
}

export interface InvokeActivityProps extends TaskProps {
  /** The agent target whose workers poll the activity. */
  readonly target: string;
  /** What the worker gets. */
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** Work queued on an agent target's activity, for a worker of that target to take. */
export class InvokeActivity extends Task {
  constructor(
    name: string,
    private readonly props: InvokeActivityProps,
  ) {
    super(name, props);
  }

  protected renderResource(): string {
    return ref(agentActivityPlaceholder(this.props.target));
  }

  protected renderArguments(): unknown {
    return this.props.arguments;
  }

  get historyEvents(): number {
    return HISTORY_EVENTS.activity;
  }

  override resources(): readonly ResourceReference[] {
    return [
      {
        kind: 'activity',
        target: this.props.target,
        placeholder: agentActivityPlaceholder(this.props.target),
      },
    ];
  }
}

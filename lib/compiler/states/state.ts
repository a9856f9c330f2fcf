/**
 * The base of the typed ASL state builders, in the spirit of aws-cdk-lib's `aws-stepfunctions`:
 * each state is a small object with readonly props that renders itself to ASL (JSONata query
 * language). Besides its ASL, a state knows its name, the state after it on the happy path and
 * what a pass through it writes to the execution history (the compile report's costs are walked
 * from these), and the resources it uses (the compile result lists them, so deployment never
 * reads definition text).
 */
import type { AslCatcher, AslState, AslStates, ResourceReference } from '../asl.ts';

/**
 * History events a pass through a state writes on the happy path (what AWS counts against an
 * execution's 25,000): lambda:invoke 5; .waitForTaskToken 6; an activity 5 (entered, scheduled,
 * started, succeeded, exited); startExecution.sync:2 6 (entered, scheduled, started, submitted,
 * succeeded, exited); Choice and Pass 2; Parallel 4, its branches' states not included; Succeed
 * and Fail 2 (entered, and the execution's end).
 */
export const HISTORY_EVENTS = {
  invoke: 5,
  waitForToken: 6,
  activity: 5,
  choice: 2,
  parallel: 4,
  pass: 2,
  childExecution: 6,
  succeed: 2,
  fail: 2,
  /** An execution's own start and end (ExecutionStarted, ExecutionSucceeded). */
  execution: 2,
} as const;

export interface StateProps {
  /** @default - no comment */
  readonly comment?: string;
}

export interface NextProps {
  /** The state that follows. @default - the end of the branch (`End: true`) */
  readonly next?: string;
}

/** Where an error goes: one Catch entry. */
export interface Catcher {
  readonly errorEquals: readonly string[];
  /** The state output the handler gets. @default - the error output (`$states.errorOutput`) */
  readonly output?: unknown;
  readonly next: string;
}

/** A Parallel branch as the graph holding the Parallel sees it (a StateGraph). */
export interface Branch {
  /** Every state name inside the branch, its own Parallels' branches included. */
  readonly names: ReadonlySet<string>;
  resources(): readonly ResourceReference[];
  toAsl(): { readonly StartAt: string; readonly States: AslStates };
}

export abstract class State {
  protected constructor(
    /** Unique in its definition (Parallel branches included), as AWS requires. */
    readonly name: string,
  ) {}

  abstract toAsl(): AslState;

  /** History events a pass through this state writes on the happy path. */
  abstract get historyEvents(): number;

  /** The state after this one on the happy path; undefined where its branch ends. */
  abstract get happyNext(): string | undefined;

  /** Parallel branches inside this state. @default - none */
  get branches(): readonly Branch[] {
    return [];
  }

  /** What this state uses, in the order its ASL names them. @default - nothing */
  resources(): readonly ResourceReference[] {
    return [];
  }
}

/** `Next: name`, or `End: true` when there is no next state. */
export function transition(next: string | undefined): { Next: string } | { End: true } {
  return next === undefined ? { End: true } : { Next: next };
}

export function renderCatchers(catchers: readonly Catcher[] | undefined): AslCatcher[] | undefined {
  if (catchers === undefined || catchers.length === 0) return undefined;
  return catchers.map((c) => defined({ ErrorEquals: c.errorEquals, Output: c.output, Next: c.next }));
}

/** `fields` without the keys whose value is undefined, in their order (the order is the ASL's bytes). */
export function defined<T extends Record<string, unknown>>(fields: T): T {
  const out: Record<string, unknown> = {};
  for (const key in fields) if (fields[key] !== undefined) out[key] = fields[key];
  return out as T;
}

/** A list that is left out of the ASL when empty. */
export function nonEmpty<T>(items: readonly T[] | undefined): readonly T[] | undefined {
  return items !== undefined && items.length > 0 ? items : undefined;
}

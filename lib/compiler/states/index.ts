/**
 * Typed ASL state builders (see state.ts): one small class per kind of state plangate compiles
 * to, and the graph that holds them.
 */
export { Choice, type ChoiceProps, type ChoiceRule, renderChoiceRule } from './choice.ts';
export { Fail, type FailProps } from './fail.ts';
export { type Fragment, type HappyPath, StateGraph } from './graph.ts';
export { Parallel, type ParallelProps } from './parallel.ts';
export { Pass, type PassProps } from './pass.ts';
export {
  type Branch,
  type Catcher,
  HISTORY_EVENTS,
  type NextProps,
  State,
  type StateProps,
} from './state.ts';
export { Succeed, type SucceedProps } from './succeed.ts';
export {
  InvokeActivity,
  type InvokeActivityProps,
  LambdaInvoke,
  type LambdaInvokeProps,
  StartExecution,
  type StartExecutionProps,
  Task,
  type TaskField,
  type TaskProps,
} from './task.ts';

import { isJsonObject } from '../types.ts';
import { type CheckContext, describe } from './context.ts';
import { ProblemCode, pointer } from './problems.ts';
import { checkState, type Transition } from './state.ts';

const MAX_STATE_NAME_LENGTH = 80;
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Checks one set of states (the machine, a Parallel branch or a Map processor): StartAt, every
 * state, transition targets within the scope, a terminal state, and that every state is reachable.
 */
export function checkScope(
  ctx: CheckContext,
  container: unknown,
  at: string,
  extraFields: readonly string[],
): void {
  if (!isJsonObject(container)) {
    ctx.problems.schema(at, `Expected an object with "StartAt" and "States", not ${describe(container)}`);
    return;
  }
  const allowed = new Set(['StartAt', 'States', 'Comment', ...extraFields]);
  for (const key of Object.keys(container)) {
    if (!allowed.has(key))
      ctx.problems.schema(pointer(at, key), `The field "${key}" is not supported by Step Functions`);
  }
  const { StartAt, States } = container;
  if (typeof StartAt !== 'string')
    ctx.problems.schema(pointer(at, 'StartAt'), '"StartAt" must be the name of a state');
  if (!isJsonObject(States) || Object.keys(States).length === 0) {
    ctx.problems.schema(pointer(at, 'States'), '"States" must be an object with at least one state');
    return;
  }
  const transitions = new Map<string, Transition[]>();
  let hasTerminal = false;
  for (const [name, state] of Object.entries(States)) {
    const stateAt = pointer(at, 'States', name);
    checkStateName(ctx, name, stateAt);
    const summary = checkState(ctx, state, stateAt, checkScope);
    transitions.set(name, summary.transitions);
    hasTerminal ||= summary.terminal;
  }
  if (typeof StartAt === 'string' && !(StartAt in States)) {
    ctx.problems.add(
      pointer(at, 'StartAt'),
      ProblemCode.missingTarget,
      `Missing 'StartAt' target: ${StartAt}`,
    );
  }
  for (const list of transitions.values()) {
    for (const { target, at: where } of list) {
      if (!(target in States))
        ctx.problems.add(where, ProblemCode.missingTarget, `Missing 'Next' target: ${target}`);
    }
  }
  if (!hasTerminal) {
    ctx.problems.add(at, ProblemCode.missingEnd, 'Workflow has no terminal state');
    return;
  }
  if (typeof StartAt !== 'string' || !(StartAt in States)) return;
  const reached = new Set([StartAt]);
  const pending = [StartAt];
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    for (const { target } of transitions.get(name) ?? []) {
      if (target in States && !reached.has(target)) {
        reached.add(target);
        pending.push(target);
      }
    }
  }
  for (const name of Object.keys(States)) {
    if (!reached.has(name)) {
      ctx.problems.add(
        pointer(at, 'States', name),
        ProblemCode.missingTarget,
        `State "${name}" is not reachable.`,
      );
    }
  }
}

function checkStateName(ctx: CheckContext, name: string, at: string): void {
  if (name.length === 0 || name.length > MAX_STATE_NAME_LENGTH) {
    ctx.problems.schema(
      at,
      `State names must be 1 to ${MAX_STATE_NAME_LENGTH} characters long ("${name.slice(0, 90)}")`,
    );
  }
  if (CONTROL_CHARACTERS.test(name)) {
    ctx.problems.schema(at, `State name ${JSON.stringify(name)} contains a control character`);
  }
  const first = ctx.stateNames.get(name);
  if (first === undefined) ctx.stateNames.set(name, at);
  else
    ctx.problems.add(
      at,
      ProblemCode.duplicateStateName,
      `Duplicate State name: ${name} (first defined at ${first})`,
    );
}

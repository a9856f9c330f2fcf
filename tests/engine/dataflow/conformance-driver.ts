/**
 * A single-purpose driver for the conformance cases whose outcome only the data-flow layer
 * decides: Pass, Choice, Succeed and Fail states, in JSONPath or JSONata. It exists to hold the
 * data-flow functions to AWS's recorded behaviour; the real interpreter lives in lib/engine/core.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  applyInputPath,
  applyOutputPath,
  applyResultPath,
  evaluateAssign,
  evaluateChoiceRule,
  evaluateJsonataCondition,
  evaluateJsonataTemplate,
  type JsonataBindings,
  locateError,
  resolveDynamicValue,
  resolvePayloadTemplate,
  type Variables,
} from '../../../lib/engine/dataflow/index.ts';
import { StatesError } from '../../../lib/engine/types.ts';

import { CONFORMANCE_DIR } from '../../conformance-dir.ts';

export interface ConformanceCase {
  id: string;
  category: string;
  definition: { StartAt: string; States: Record<string, State>; QueryLanguage?: string };
  input: unknown;
  expected: { status: string; output?: unknown; error?: string; cause?: string; statesEntered: string[] };
  [flag: string]: unknown;
}

type State = Record<string, unknown> & { Type: string };

export interface DriverResult {
  status: 'SUCCEEDED' | 'FAILED';
  output?: unknown;
  error?: string;
  cause?: string;
  statesEntered: string[];
}

const DRIVEN_TYPES = new Set(['Pass', 'Choice', 'Succeed', 'Fail']);

/** Cases made only of Pass/Choice/Succeed/Fail states at the top level. */
export function loadDataflowCases(): ConformanceCase[] {
  const dir = join(CONFORMANCE_DIR, 'cases');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as ConformanceCase)
    .filter((c) => Object.values(c.definition.States).every((s) => DRIVEN_TYPES.has(s.Type)))
    .sort((a, b) => a.id.localeCompare(b.id));
}

const EXECUTION_NAME = 'conformance-execution';
const MACHINE_NAME = 'ConformanceMachine';

function contextFor(input: unknown, stateName: string): Record<string, unknown> {
  const now = new Date().toISOString();
  return {
    Execution: {
      Id: `arn:aws:states:us-east-1:111111111111:execution:${MACHINE_NAME}:${EXECUTION_NAME}`,
      Input: input,
      Name: EXECUTION_NAME,
      // The recordings replaced the role ARN by this label; any role name is as good as another here.
      RoleArn: 'snf_role_arn',
      StartTime: now,
      RedriveCount: 0,
    },
    State: { EnteredTime: now, Name: stateName },
    StateMachine: {
      Id: `arn:aws:states:us-east-1:111111111111:stateMachine:${MACHINE_NAME}`,
      Name: MACHINE_NAME,
    },
  };
}

interface StepOutcome {
  output: unknown;
  next?: string;
  variables: Variables;
  failure?: { error?: string; cause?: string };
}

/** Runs a case's definition through the data-flow functions. */
export async function runCase(c: ConformanceCase): Promise<DriverResult> {
  const statesEntered: string[] = [];
  let variables: Variables = {};
  let input = c.input;
  let name: string | undefined = c.definition.StartAt;
  let eventId = 1; // ExecutionStarted
  while (name !== undefined) {
    const state: State | undefined = c.definition.States[name];
    if (!state) throw new Error(`${c.id}: no state ${name}`);
    statesEntered.push(name);
    eventId += 1;
    const location = { stateName: name, enteredEventId: eventId };
    const language = (state.QueryLanguage ?? c.definition.QueryLanguage ?? 'JSONPath') as
      | 'JSONPath'
      | 'JSONata';
    let outcome: StepOutcome;
    try {
      outcome = await step(state, language, input, contextFor(c.input, name), variables);
    } catch (error) {
      const located = locateError(error, location);
      if (located instanceof StatesError) {
        return { status: 'FAILED', error: located.error, cause: located.cause, statesEntered };
      }
      throw located;
    }
    if (outcome.failure) return { status: 'FAILED', ...outcome.failure, statesEntered };
    eventId += 1; // *StateExited
    variables = outcome.variables;
    input = outcome.output;
    name = state.End === true || state.Type === 'Succeed' ? undefined : outcome.next;
  }
  return { status: 'SUCCEEDED', output: input, statesEntered };
}

async function step(
  state: State,
  language: 'JSONPath' | 'JSONata',
  input: unknown,
  context: unknown,
  variables: Variables,
): Promise<StepOutcome> {
  return language === 'JSONata'
    ? jsonataStep(state, input, context, variables)
    : jsonPathStep(state, input, context, variables);
}

function has(state: State, key: string): boolean {
  return Object.hasOwn(state, key);
}

async function jsonPathStep(
  state: State,
  input: unknown,
  context: unknown,
  variables: Variables,
): Promise<StepOutcome> {
  const effective = applyInputPath(input, state.InputPath as string | null | undefined, context, variables);
  const withAssign = async (result: unknown, rule?: Record<string, unknown>): Promise<Variables> => {
    const assign = (rule?.Assign ?? state.Assign) as Record<string, unknown> | undefined;
    if (!assign) return variables;
    const assigned = await evaluateAssign(assign, 'JSONPath', {
      input: effective,
      result,
      context,
      variables,
    });
    return { ...variables, ...assigned };
  };
  switch (state.Type) {
    case 'Pass': {
      const result = has(state, 'Result')
        ? state.Result
        : has(state, 'Parameters')
          ? resolvePayloadTemplate(state.Parameters, effective, context, variables, 'Parameters')
          : effective;
      const newVariables = await withAssign(result);
      const combined = applyResultPath(input, result, state.ResultPath as string | null | undefined);
      const output = applyOutputPath(
        combined,
        state.OutputPath as string | null | undefined,
        context,
        variables,
      );
      return { output, next: state.Next as string, variables: newVariables };
    }
    case 'Succeed': {
      const output = applyOutputPath(
        effective,
        state.OutputPath as string | null | undefined,
        context,
        variables,
      );
      return { output, variables };
    }
    case 'Choice': {
      const choices = (state.Choices ?? []) as Record<string, unknown>[];
      const matched = choices.find((rule) => evaluateChoiceRule(rule, effective, context, variables));
      const next = (matched?.Next ?? state.Default) as string | undefined;
      if (next === undefined) return { output: input, variables, failure: noChoiceMatched(state) };
      const newVariables = await withAssign(effective, matched);
      const output = applyOutputPath(
        effective,
        state.OutputPath as string | null | undefined,
        context,
        variables,
      );
      return { output, next, variables: newVariables };
    }
    case 'Fail': {
      const dynamic = (path: unknown, field: string) =>
        path === undefined
          ? undefined
          : (resolveDynamicValue(path, input, context, variables, field) as string);
      const error = (state.Error as string | undefined) ?? dynamic(state.ErrorPath, 'ErrorPath');
      const cause = (state.Cause as string | undefined) ?? dynamic(state.CausePath, 'CausePath');
      return { output: input, variables, failure: { error, cause } };
    }
    default:
      throw new Error(`the data-flow driver does not run ${state.Type} states`);
  }
}

function noChoiceMatched(state: State): { error: string; cause: string } {
  void state;
  return { error: 'States.NoChoiceMatched', cause: 'No Choice Rule matched and no Default was specified' };
}

async function jsonataStep(
  state: State,
  input: unknown,
  context: unknown,
  variables: Variables,
): Promise<StepOutcome> {
  const bindings: JsonataBindings = { input, context, variables };
  const finish = async (
    output: unknown,
    rule?: Record<string, unknown>,
  ): Promise<{ output: unknown; variables: Variables }> => {
    const outputTemplate = rule && has(rule as State, 'Output') ? rule.Output : state.Output;
    const assign = (rule?.Assign ?? state.Assign) as Record<string, unknown> | undefined;
    // Output and Assign both read the variables from before the state.
    const assigned = assign ? await evaluateAssign(assign, 'JSONata', bindings) : {};
    const out =
      outputTemplate === undefined
        ? output
        : await evaluateJsonataTemplate(outputTemplate, bindings, 'Output');
    return { output: out, variables: { ...variables, ...assigned } };
  };
  switch (state.Type) {
    case 'Pass':
    case 'Succeed': {
      const done = await finish(input);
      return { ...done, next: state.Next as string };
    }
    case 'Choice': {
      const choices = (state.Choices ?? []) as Record<string, unknown>[];
      let matched: Record<string, unknown> | undefined;
      for (const rule of choices) {
        if (await evaluateJsonataCondition(rule.Condition, bindings)) {
          matched = rule;
          break;
        }
      }
      const next = (matched?.Next ?? state.Default) as string | undefined;
      if (next === undefined) return { output: input, variables, failure: noChoiceMatched(state) };
      const done = await finish(input, matched);
      return { ...done, next };
    }
    case 'Fail': {
      const text = async (value: unknown, field: string) =>
        value === undefined ? undefined : ((await evaluateJsonataTemplate(value, bindings, field)) as string);
      return {
        output: input,
        variables,
        failure: { error: await text(state.Error, 'Error'), cause: await text(state.Cause, 'Cause') },
      };
    }
    default:
      throw new Error(`the data-flow driver does not run ${state.Type} states`);
  }
}

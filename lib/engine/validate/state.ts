import { isJsonObject, type JsonObject, type QueryLanguage } from '../types.ts';
import { checkChoices } from './choice-rules.ts';
import { type CheckContext, describe, isInteger } from './context.ts';
import { checkCatch, checkRetry } from './error-handlers.ts';
import { jsonataExpression } from './jsonata-syntax.ts';
import { pathSyntaxError } from './paths.ts';
import { checkAssign, checkJsonataValue, checkPayloadTemplate, dynamicValueError } from './payload.ts';
import { pointer } from './problems.ts';
import { allowedFields, fieldOfOtherLanguage, STATE_TYPES, type StateType } from './state-fields.ts';

const MAX_SECONDS = 99_999_999;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** A transition out of a state: the target's name and where the definition names it. */
export interface Transition {
  readonly target: string;
  readonly at: string;
}

export interface StateSummary {
  readonly transitions: Transition[];
  readonly terminal: boolean;
}

/** Nested state machines (Parallel branches, Map processors) are checked by the scope checker. */
export type ScopeChecker = (
  ctx: CheckContext,
  container: unknown,
  at: string,
  extraFields: readonly string[],
) => void;

/** Checks one state; returns its transitions and whether it ends its scope. */
export function checkState(
  ctx: CheckContext,
  state: unknown,
  at: string,
  checkScope: ScopeChecker,
): StateSummary {
  const none: StateSummary = { transitions: [], terminal: false };
  if (!isJsonObject(state)) {
    ctx.problems.schema(at, `A state must be an object, not ${describe(state)}`);
    return none;
  }
  const type = state.Type;
  if (!STATE_TYPES.includes(type as StateType)) {
    ctx.problems.schema(
      pointer(at, 'Type'),
      type === undefined
        ? 'A state must have a "Type"'
        : `${describe(type)} is not a state type (${STATE_TYPES.join(', ')})`,
    );
    return none;
  }
  const language = stateLanguage(ctx, state, at);
  const stateType = type as StateType;
  const allowed = allowedFields(stateType, language);
  for (const key of Object.keys(state)) {
    if (allowed.has(key)) continue;
    const why = fieldOfOtherLanguage(stateType, language, key)
      ? `it is a ${language === 'JSONata' ? 'JSONPath' : 'JSONata'} field and this state uses ${language}`
      : `a ${stateType} state does not have it`;
    ctx.problems.schema(pointer(at, key), `The field "${key}" is not supported: ${why}`);
  }
  checkDataFlow(ctx, state, at, language);
  const transitions: Transition[] = [];
  let terminal = stateType === 'Succeed' || stateType === 'Fail';
  if (stateType !== 'Choice' && !terminal) terminal = checkTransition(ctx, state, at, transitions);
  if (state.Retry !== undefined && allowed.has('Retry')) checkRetry(ctx, state.Retry, pointer(at, 'Retry'));
  if (state.Catch !== undefined && allowed.has('Catch')) {
    transitions.push(...checkCatch(ctx, state.Catch, pointer(at, 'Catch'), language));
  }
  switch (stateType) {
    case 'Task':
      checkTask(ctx, state, at, language);
      break;
    case 'Choice':
      checkChoices(ctx, state, at, language);
      if (Array.isArray(state.Choices)) {
        state.Choices.forEach((rule, index) => {
          if (isJsonObject(rule) && typeof rule.Next === 'string') {
            transitions.push({ target: rule.Next, at: pointer(at, 'Choices', index, 'Next') });
          }
        });
      }
      if (typeof state.Default === 'string')
        transitions.push({ target: state.Default, at: pointer(at, 'Default') });
      break;
    case 'Wait':
      checkWait(ctx, state, at, language);
      break;
    case 'Fail':
      checkFail(ctx, state, at, language);
      break;
    case 'Parallel':
      checkParallel(ctx, state, at, checkScope);
      break;
    case 'Map':
      checkMap(ctx, state, at, language, checkScope);
      break;
    default:
      break;
  }
  return { transitions, terminal };
}

function stateLanguage(ctx: CheckContext, state: JsonObject, at: string): QueryLanguage {
  const declared = state.QueryLanguage;
  if (declared === undefined) return ctx.machineLanguage;
  if (declared !== 'JSONPath' && declared !== 'JSONata') {
    ctx.problems.schema(
      pointer(at, 'QueryLanguage'),
      `QueryLanguage must be "JSONPath" or "JSONata", not ${describe(declared)}`,
    );
    return ctx.machineLanguage;
  }
  if (declared === 'JSONPath' && ctx.machineLanguage === 'JSONata') {
    ctx.problems.schema(
      pointer(at, 'QueryLanguage'),
      'A state cannot use JSONPath when the state machine uses JSONata (set QueryLanguage per state in a JSONPath machine instead)',
    );
  }
  return declared;
}

/** Next/End: exactly one, End only `true`. Returns whether the state ends its scope. */
function checkTransition(
  ctx: CheckContext,
  state: JsonObject,
  at: string,
  transitions: Transition[],
): boolean {
  const { Next, End } = state;
  if (End !== undefined && End !== true)
    ctx.problems.schema(pointer(at, 'End'), `"End" must be true, not ${describe(End)}`);
  if (Next !== undefined && typeof Next !== 'string') {
    ctx.problems.schema(pointer(at, 'Next'), `"Next" must be a state name, not ${describe(Next)}`);
  }
  if (Next !== undefined && End !== undefined) {
    ctx.problems.schema(at, 'A state cannot have both "Next" and "End"');
  } else if (Next === undefined && End === undefined) {
    ctx.problems.schema(at, 'A state of this type must have either "Next" or "End": true');
  }
  if (typeof Next === 'string') transitions.push({ target: Next, at: pointer(at, 'Next') });
  return End === true;
}

function checkPathField(
  ctx: CheckContext,
  state: JsonObject,
  at: string,
  field: string,
  reference: boolean,
): void {
  const value = state[field];
  if (value === undefined || value === null) return;
  const problem =
    typeof value === 'string'
      ? pathSyntaxError(value, { reference, allowContextAndVariables: field !== 'ResultPath' })
      : `${field} must be a path string or null, not ${describe(value)}`;
  if (problem) ctx.problems.schema(pointer(at, field), problem);
}

function checkDataFlow(ctx: CheckContext, state: JsonObject, at: string, language: QueryLanguage): void {
  if (state.Assign !== undefined)
    checkAssign(ctx, state.Assign, pointer(at, 'Assign'), language === 'JSONata');
  if (language === 'JSONata') {
    for (const field of ['Arguments', 'Output']) {
      if (state[field] !== undefined) checkJsonataValue(ctx, state[field], pointer(at, field));
    }
    const args = state.Arguments;
    if (args !== undefined && !isJsonObject(args) && jsonataExpression(args) === undefined) {
      ctx.problems.schema(
        pointer(at, 'Arguments'),
        `Arguments must be an object or a JSONata expression, not ${describe(args)}`,
      );
    }
    return;
  }
  checkPathField(ctx, state, at, 'InputPath', false);
  checkPathField(ctx, state, at, 'OutputPath', false);
  checkPathField(ctx, state, at, 'ResultPath', true);
  for (const field of ['Parameters', 'ResultSelector', 'ItemSelector']) {
    const value = state[field];
    if (value === undefined) continue;
    if (field !== 'Parameters' && !isJsonObject(value)) {
      ctx.problems.schema(pointer(at, field), `${field} must be an object, not ${describe(value)}`);
    }
    checkPayloadTemplate(ctx, value, pointer(at, field));
  }
}

/** A count of seconds: an integer in range, or (JSONata) an expression. */
function checkSeconds(
  ctx: CheckContext,
  value: unknown,
  at: string,
  field: string,
  language: QueryLanguage,
  min: number,
): void {
  if (value === undefined) return;
  if (language === 'JSONata' && jsonataExpression(value) !== undefined) {
    checkJsonataValue(ctx, value, at);
    return;
  }
  if (!isInteger(value) || value < min || value > MAX_SECONDS) {
    ctx.problems.schema(
      at,
      `${field} must be an integer from ${min} to ${MAX_SECONDS}, not ${describe(value)}`,
    );
  }
}

function atMostOne(ctx: CheckContext, state: JsonObject, at: string, fields: string[]): void {
  const present = fields.filter((field) => state[field] !== undefined);
  if (present.length > 1) ctx.problems.schema(at, `A state may have only one of ${present.join(', ')}`);
}

function checkTask(ctx: CheckContext, state: JsonObject, at: string, language: QueryLanguage): void {
  const resource = state.Resource;
  if (typeof resource !== 'string') {
    ctx.problems.schema(pointer(at, 'Resource'), 'A Task state must have a string "Resource" (an ARN)');
  } else if (!/^arn:[^:]+:[^:]+:[^:]*:[^:]*:.+/.test(resource)) {
    ctx.problems.schema(
      pointer(at, 'Resource'),
      `The resource provided ${resource} is not a valid resource ARN`,
    );
  }
  checkSeconds(ctx, state.TimeoutSeconds, pointer(at, 'TimeoutSeconds'), 'TimeoutSeconds', language, 1);
  checkSeconds(ctx, state.HeartbeatSeconds, pointer(at, 'HeartbeatSeconds'), 'HeartbeatSeconds', language, 1);
  atMostOne(ctx, state, at, ['TimeoutSeconds', 'TimeoutSecondsPath']);
  atMostOne(ctx, state, at, ['HeartbeatSeconds', 'HeartbeatSecondsPath']);
  if (
    isInteger(state.TimeoutSeconds) &&
    isInteger(state.HeartbeatSeconds) &&
    state.HeartbeatSeconds >= state.TimeoutSeconds
  ) {
    ctx.problems.schema(
      pointer(at, 'HeartbeatSeconds'),
      'HeartbeatSeconds must be smaller than TimeoutSeconds',
    );
  }
  if (language === 'JSONPath') {
    checkPathField(ctx, state, at, 'TimeoutSecondsPath', true);
    checkPathField(ctx, state, at, 'HeartbeatSecondsPath', true);
  }
  if (state.Credentials !== undefined && !isJsonObject(state.Credentials)) {
    ctx.problems.schema(pointer(at, 'Credentials'), 'Credentials must be an object');
  }
}

function checkWait(ctx: CheckContext, state: JsonObject, at: string, language: QueryLanguage): void {
  const fields =
    language === 'JSONata'
      ? ['Seconds', 'Timestamp']
      : ['Seconds', 'Timestamp', 'SecondsPath', 'TimestampPath'];
  const present = fields.filter((field) => state[field] !== undefined);
  if (present.length !== 1) {
    ctx.problems.schema(
      at,
      `A Wait state must have exactly one of ${fields.join(', ')}${present.length ? ` (found ${present.join(', ')})` : ''}`,
    );
  }
  checkSeconds(ctx, state.Seconds, pointer(at, 'Seconds'), 'Seconds', language, 0);
  const timestamp = state.Timestamp;
  if (timestamp !== undefined) {
    if (language === 'JSONata' && jsonataExpression(timestamp) !== undefined) {
      checkJsonataValue(ctx, timestamp, pointer(at, 'Timestamp'));
    } else if (typeof timestamp !== 'string' || !RFC3339.test(timestamp)) {
      ctx.problems.schema(
        pointer(at, 'Timestamp'),
        `Timestamp must be an ISO-8601 timestamp string, not ${describe(timestamp)}`,
      );
    }
  }
  if (language === 'JSONPath') {
    checkPathField(ctx, state, at, 'SecondsPath', true);
    checkPathField(ctx, state, at, 'TimestampPath', true);
  }
}

function checkFail(ctx: CheckContext, state: JsonObject, at: string, language: QueryLanguage): void {
  for (const field of ['Error', 'Cause']) {
    const value = state[field];
    if (value === undefined) continue;
    if (typeof value !== 'string')
      ctx.problems.schema(pointer(at, field), `${field} must be a string, not ${describe(value)}`);
    else if (language === 'JSONata') checkJsonataValue(ctx, value, pointer(at, field));
  }
  if (language === 'JSONata') return;
  atMostOne(ctx, state, at, ['Error', 'ErrorPath']);
  atMostOne(ctx, state, at, ['Cause', 'CausePath']);
  for (const field of ['ErrorPath', 'CausePath']) {
    if (state[field] === undefined) continue;
    const problem = dynamicValueError(state[field]);
    if (problem) ctx.problems.schema(pointer(at, field), problem);
  }
}

function checkParallel(ctx: CheckContext, state: JsonObject, at: string, checkScope: ScopeChecker): void {
  const branches = state.Branches;
  if (!Array.isArray(branches) || branches.length === 0) {
    ctx.problems.schema(pointer(at, 'Branches'), 'A Parallel state must have a non-empty "Branches" array');
    return;
  }
  for (const [index, branch] of branches.entries())
    checkScope(ctx, branch, pointer(at, 'Branches', index), []);
}

function checkMap(
  ctx: CheckContext,
  state: JsonObject,
  at: string,
  language: QueryLanguage,
  checkScope: ScopeChecker,
): void {
  const processors = ['ItemProcessor', 'Iterator'].filter((field) => state[field] !== undefined);
  if (processors.length !== 1)
    ctx.problems.schema(at, 'A Map state must have exactly one of ItemProcessor, Iterator');
  for (const field of processors) checkScope(ctx, state[field], pointer(at, field), ['ProcessorConfig']);
  const processor = state.ItemProcessor;
  if (isJsonObject(processor) && processor.ProcessorConfig !== undefined) {
    const config = processor.ProcessorConfig;
    const configAt = pointer(at, 'ItemProcessor', 'ProcessorConfig');
    if (!isJsonObject(config)) ctx.problems.schema(configAt, 'ProcessorConfig must be an object');
    else {
      if (config.Mode !== undefined && config.Mode !== 'INLINE' && config.Mode !== 'DISTRIBUTED') {
        ctx.problems.schema(pointer(configAt, 'Mode'), 'Mode must be "INLINE" or "DISTRIBUTED"');
      }
      if (
        config.ExecutionType !== undefined &&
        config.ExecutionType !== 'STANDARD' &&
        config.ExecutionType !== 'EXPRESS'
      ) {
        ctx.problems.schema(
          pointer(configAt, 'ExecutionType'),
          'ExecutionType must be "STANDARD" or "EXPRESS"',
        );
      }
    }
  }
  atMostOne(ctx, state, at, ['Parameters', 'ItemSelector']);
  atMostOne(ctx, state, at, ['MaxConcurrency', 'MaxConcurrencyPath']);
  atMostOne(ctx, state, at, ['ToleratedFailureCount', 'ToleratedFailureCountPath']);
  atMostOne(ctx, state, at, ['ToleratedFailurePercentage', 'ToleratedFailurePercentagePath']);
  const expression = (value: unknown) => language === 'JSONata' && jsonataExpression(value) !== undefined;
  const { MaxConcurrency, ToleratedFailureCount, ToleratedFailurePercentage, Items, Label } = state;
  if (
    MaxConcurrency !== undefined &&
    !expression(MaxConcurrency) &&
    !(isInteger(MaxConcurrency) && MaxConcurrency >= 0)
  ) {
    ctx.problems.schema(pointer(at, 'MaxConcurrency'), 'MaxConcurrency must be a non-negative integer');
  }
  if (
    ToleratedFailureCount !== undefined &&
    !expression(ToleratedFailureCount) &&
    !(isInteger(ToleratedFailureCount) && ToleratedFailureCount >= 0)
  ) {
    ctx.problems.schema(
      pointer(at, 'ToleratedFailureCount'),
      'ToleratedFailureCount must be a non-negative integer',
    );
  }
  if (
    ToleratedFailurePercentage !== undefined &&
    !expression(ToleratedFailurePercentage) &&
    !(
      typeof ToleratedFailurePercentage === 'number' &&
      ToleratedFailurePercentage >= 0 &&
      ToleratedFailurePercentage <= 100
    )
  ) {
    ctx.problems.schema(
      pointer(at, 'ToleratedFailurePercentage'),
      'ToleratedFailurePercentage must be a number from 0 to 100',
    );
  }
  if (Label !== undefined && (typeof Label !== 'string' || Label.length > 40)) {
    ctx.problems.schema(pointer(at, 'Label'), 'Label must be a string of at most 40 characters');
  }
  if (language === 'JSONata') {
    for (const field of [
      'Items',
      'ItemSelector',
      'MaxConcurrency',
      'ToleratedFailureCount',
      'ToleratedFailurePercentage',
    ]) {
      if (state[field] !== undefined) checkJsonataValue(ctx, state[field], pointer(at, field));
    }
    if (Items !== undefined && !Array.isArray(Items) && jsonataExpression(Items) === undefined) {
      ctx.problems.schema(
        pointer(at, 'Items'),
        `Items must be an array or a JSONata expression, not ${describe(Items)}`,
      );
    }
    return;
  }
  checkPathField(ctx, state, at, 'ItemsPath', true);
  for (const field of ['MaxConcurrencyPath', 'ToleratedFailureCountPath', 'ToleratedFailurePercentagePath']) {
    checkPathField(ctx, state, at, field, true);
  }
}

/**
 * The engine's pure data-flow layer: JSONPath (InputPath, Parameters, ResultSelector, ResultPath,
 * OutputPath, intrinsic functions, Choice rules) and JSONata (Arguments, Output, Assign, Condition),
 * with AWS's error names and messages. Every failure is a StatesError.
 */
export { evaluateAssign } from './assign.ts';
export { evaluateChoiceRule, stringMatches } from './choice.ts';
export {
  intrinsicFailure,
  jsonataResultTypeError,
  locateError,
  queryEvaluationError,
  runtimeError,
  type StateLocation,
  statePrefix,
} from './errors.ts';
export { evaluateIntrinsic } from './intrinsics/evaluate.ts';
export { isIntrinsicExpression } from './intrinsics/parse.ts';
export { canonicalJsonSize, type Json, jsonText, jsonTypeName } from './json.ts';
export {
  evaluateJsonataCondition,
  evaluateJsonataExpression,
  evaluateJsonataTemplate,
  type JsonataBindings,
  jsonataExpressionOf,
} from './jsonata/evaluate.ts';
export {
  applyInputPath,
  applyOutputPath,
  applyResultPath,
  canonicalPathText,
  type FieldName,
  selectPath,
  type Variables,
} from './paths.ts';
export { resolveDynamicValue, resolvePayloadTemplate } from './payload-template.ts';
export { compareInstants, type Instant, parseTimestamp } from './timestamp.ts';

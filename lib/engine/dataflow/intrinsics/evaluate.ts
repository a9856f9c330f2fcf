/** Evaluates an intrinsic function expression against the state's input, context and variables. */
import { StatesError } from '../../types.ts';
import { intrinsicFailure } from '../errors.ts';
import type { ExpressionCache } from '../expression-cache.ts';
import { type FieldName, selectPath, type Variables } from '../paths.ts';
import { INTRINSIC_FUNCTIONS, type IntrinsicValue } from './functions.ts';
import { type IntrinsicArgument, type IntrinsicCall, parseIntrinsic } from './parse.ts';

/**
 * Evaluates e.g. `States.Format('{}', $.name)`. Failures are StatesErrors: States.IntrinsicFailure
 * for bad calls and arguments, States.Runtime for paths that name nothing.
 */
export function evaluateIntrinsic(
  expression: string,
  input: unknown,
  context: unknown,
  variables: Variables,
  field: FieldName,
  cache?: ExpressionCache,
): unknown {
  try {
    return call(parseIntrinsic(expression), { input, context, variables, field, cache });
  } catch (error) {
    if (error instanceof StatesError) throw error;
    // A bug or an engine limit (e.g. stack) must still surface as a States error, never as a crash.
    throw intrinsicFailure(`The intrinsic function '${expression}' failed: ${(error as Error).message}`);
  }
}

interface Scope {
  readonly input: unknown;
  readonly context: unknown;
  readonly variables: Variables;
  readonly field: FieldName;
  readonly cache: ExpressionCache | undefined;
}

function call(node: IntrinsicCall, scope: Scope): unknown {
  const implementation = INTRINSIC_FUNCTIONS.get(node.name);
  if (!implementation) throw intrinsicFailure(`The intrinsic function '${node.name}' is not supported.`);
  return implementation(
    node.args.map((arg) => argumentValue(arg, scope)),
    node.name,
  );
}

function argumentValue(arg: IntrinsicArgument, scope: Scope): IntrinsicValue {
  switch (arg.kind) {
    case 'literal':
      return arg.raw === undefined ? { value: arg.value } : { value: arg.value, raw: arg.raw };
    case 'path':
      return {
        value: selectPath(scope.input, arg.path, scope.context, scope.variables, scope.field, scope.cache),
      };
    case 'call':
      return { value: call(arg, scope) };
  }
}

import { type DefinitionProblem, isJsonObject, type QueryLanguage } from '../types.ts';
import { describe, isInteger } from './context.ts';
import { parseJsonText } from './json-text.ts';
import { ProblemCode, ProblemList, pointer } from './problems.ts';
import { checkScope } from './scope.ts';

/** AWS's limit on a state machine definition, in bytes of UTF-8. */
export const MAX_DEFINITION_BYTES = 1_048_576;

/**
 * Every problem of an Amazon States Language definition, each located by a JSON pointer, as AWS's
 * CreateStateMachine / ValidateStateMachineDefinition would refuse it. Empty when the definition is
 * valid. Never throws, whatever the text.
 */
export function validateDefinition(definition: string): DefinitionProblem[] {
  const problems = new ProblemList();
  const bytes = Buffer.byteLength(definition, 'utf8');
  if (bytes > MAX_DEFINITION_BYTES) {
    problems.add(
      '',
      ProblemCode.tooLarge,
      `The definition is ${bytes} bytes; the limit is ${MAX_DEFINITION_BYTES} bytes`,
    );
    return problems.items;
  }
  const parsed = parseJsonText(definition);
  if (!parsed.ok) {
    problems.add('', ProblemCode.invalidJson, parsed.message);
    return problems.items;
  }
  const machine = parsed.value;
  if (!isJsonObject(machine)) {
    problems.schema('', `A state machine definition must be a JSON object, not ${describe(machine)}`);
    return problems.items;
  }
  let machineLanguage: QueryLanguage = 'JSONPath';
  if (machine.QueryLanguage === 'JSONata') machineLanguage = 'JSONata';
  else if (machine.QueryLanguage !== undefined && machine.QueryLanguage !== 'JSONPath') {
    problems.schema(
      '/QueryLanguage',
      `QueryLanguage must be "JSONPath" or "JSONata", not ${describe(machine.QueryLanguage)}`,
    );
  }
  if (machine.Version !== undefined && machine.Version !== '1.0') {
    problems.schema(pointer('', 'Version'), `Version must be "1.0", not ${describe(machine.Version)}`);
  }
  const timeout = machine.TimeoutSeconds;
  if (timeout !== undefined && !(isInteger(timeout) && timeout >= 1 && timeout <= 99_999_999)) {
    problems.schema(
      '/TimeoutSeconds',
      `TimeoutSeconds must be an integer from 1 to 99999999, not ${describe(timeout)}`,
    );
  }
  if (machine.Comment !== undefined && typeof machine.Comment !== 'string') {
    problems.schema('/Comment', 'Comment must be a string');
  }
  checkScope({ problems, machineLanguage, stateNames: new Map() }, machine, '', [
    'Version',
    'TimeoutSeconds',
    'QueryLanguage',
  ]);
  return problems.items;
}

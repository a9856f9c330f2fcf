export { ProblemCode } from './problems.ts';
export { MAX_DEFINITION_BYTES, validateDefinition } from './validate-definition.ts';

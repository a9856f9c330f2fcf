export { type LambdaErrorPayload, LambdaFunctionError } from './lambda-errors.ts';
export {
  LambdaHandlerRegistry,
  type LambdaHandlerRegistryProps,
  parseFunctionName,
} from './lambda-registry.ts';
export { parseResource, type ResourceTarget } from './resource-arn.ts';
export {
  createResourceInvoker,
  type ResourceInvokerOptions,
  unknownResourceError,
} from './resource-invoker.ts';

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { type LambdaHandler, type ResourceInvoker, StatesError, type TaskInvocation } from '../types.ts';
import {
  invokeDynamoDbOptimized,
  invokeDynamoDbSdk,
  isDynamoDbAction,
  OPTIMIZED_DYNAMODB_ACTIONS,
} from './dynamodb.ts';
import { invokePutEvents } from './eventbridge.ts';
import { InProcessLambda } from './lambda-invoke.ts';
import { LambdaHandlerRegistry } from './lambda-registry.ts';
import { parseResource, type ResourceTarget } from './resource-arn.ts';

export interface ResourceInvokerOptions {
  /** In-process Lambda functions: a registry, or handlers keyed by function name or ARN. @default no functions */
  readonly lambdaHandlers?: LambdaHandlerRegistry | Readonly<Record<string, LambdaHandler>>;
  /** Handler modules loaded on first invocation, function name → `path/to/module.ts#export`. @default none */
  readonly lambdaModules?: Readonly<Record<string, string>>;
  /** Client for `dynamodb:*` and `aws-sdk:dynamodb:*` tasks (e.g. pointed at the local DynamoDB). @default none: those tasks fail */
  readonly dynamodb?: DynamoDBClient;
  /** Client for `events:putEvents` tasks (e.g. pointed at the local event bus). @default none: those tasks fail */
  readonly eventBridge?: EventBridgeClient;
  /** Region in the function ARNs reported to handlers and in errors. @default 'us-east-1' */
  readonly region?: string;
  /** Account in the function ARNs reported to handlers and in errors. @default '123456789012' */
  readonly accountId?: string;
  /** Invoker for resources this one does not serve (e.g. an engine's own `states:startExecution`). @default none */
  readonly fallback?: ResourceInvoker;
}

/** The error for a resource nobody serves, worded as AWS words an unrecognized resource. */
export function unknownResourceError(resource: string): StatesError {
  return new StatesError(
    'States.Runtime',
    `The resource provided ${resource} not recognized. The value is not a valid resource ARN, or the resource is not available in this region.`,
  );
}

function missingClient(resource: string, service: string): StatesError {
  return new StatesError(
    'States.Runtime',
    `The resource provided ${resource} is not available: no ${service} endpoint is configured for this engine.`,
  );
}

function registryFrom(options: ResourceInvokerOptions): LambdaHandlerRegistry {
  const given = options.lambdaHandlers;
  const registry =
    given instanceof LambdaHandlerRegistry
      ? given
      : new LambdaHandlerRegistry({
          ...(options.region ? { region: options.region } : {}),
          ...(options.accountId ? { accountId: options.accountId } : {}),
        });
  if (given && !(given instanceof LambdaHandlerRegistry)) {
    for (const [name, handler] of Object.entries(given)) registry.register(name, handler);
  }
  for (const [name, spec] of Object.entries(options.lambdaModules ?? {})) registry.registerModule(name, spec);
  return registry;
}

/**
 * The service integrations of the embedded engine: Lambda (in-process handlers), DynamoDB and
 * EventBridge (through the given SDK clients). Anything else fails with States.Runtime naming the resource.
 */
export function createResourceInvoker(options: ResourceInvokerOptions = {}): ResourceInvoker {
  const lambda = new InProcessLambda(registryFrom(options));
  // Resources come from definitions: parse each once (bounded, should callers invent them without end)
  const targets = new Map<string, ResourceTarget>();
  const remember = (resource: string): ResourceTarget => {
    if (targets.size >= 1024) targets.clear();
    const target = parseResource(resource);
    targets.set(resource, target);
    return target;
  };
  // not an async function: the Lambda call's own promise is handed back without another hop
  return (invocation: TaskInvocation): Promise<unknown> => {
    try {
      return dispatch(invocation);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  function dispatch(invocation: TaskInvocation): Promise<unknown> {
    const { resource, parameters, signal } = invocation;
    const target = targets.get(resource) ?? remember(resource);
    if (target.kind === 'lambda-function') return lambda.invokeFunction(invocation);
    if (target.kind === 'integration' && target.pattern !== 'sync') {
      if (target.service === 'lambda' && target.action === 'invoke')
        return lambda.invokeIntegration(invocation);
      if (target.service === 'events' && target.action === 'putEvents') {
        if (!options.eventBridge) throw missingClient(resource, 'EventBridge');
        return invokePutEvents(options.eventBridge, parameters, signal);
      }
      if (
        target.service === 'dynamodb' &&
        target.pattern === 'request-response' &&
        (OPTIMIZED_DYNAMODB_ACTIONS as readonly string[]).includes(target.action)
      ) {
        if (!options.dynamodb) throw missingClient(resource, 'DynamoDB');
        return invokeDynamoDbOptimized(options.dynamodb, target.action, parameters, signal);
      }
    }
    if (
      target.kind === 'aws-sdk' &&
      target.service === 'dynamodb' &&
      target.pattern === 'request-response' &&
      isDynamoDbAction(target.action)
    ) {
      if (!options.dynamodb) throw missingClient(resource, 'DynamoDB');
      return invokeDynamoDbSdk(options.dynamodb, target.action, parameters, signal);
    }
    if (options.fallback) return options.fallback(invocation);
    throw unknownResourceError(resource);
  }
}

/**
 * The `handler` each Lambda module exports for AWS: built once per container, at its first
 * invocation (cold start). The environment is parsed with the handler's schema from the catalog
 * (lib/runtime/catalog.ts), so a missing or malformed variable is one NotConfigured error naming
 * it; the logger, metrics and tracer and the traced clients are made then, once; every invocation
 * then runs the module's `makeHandler(deps)`, which logs it with its correlation keys.
 */
import type { Context } from 'aws-lambda';
import {
  HARNESS_HANDLERS,
  type HandlerEnv,
  type HarnessHandlerName,
  type HarnessHandlerSpec,
  parseHandlerEnv,
} from '../lib/runtime/catalog.ts';
import { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';

type Handler<E, R> = (event: E, context?: Context) => Promise<R>;

export function awsHandler<N extends HarnessHandlerName, D, E, R>(
  name: N,
  makeHandler: (deps: D) => Handler<E, R>,
  makeDeps: (env: HandlerEnv<N>, telemetry: Telemetry) => D | Promise<D>,
): Handler<E, R> {
  let ready: Promise<Handler<E, R>> | undefined;
  const coldStart = async (): Promise<Handler<E, R>> => {
    // Only Lambda loads X-Ray's SDK (the local stack imports these modules too), and only where traced.
    const traced = (HARNESS_HANDLERS[name] as HarnessHandlerSpec).traced ?? true;
    const tracer = traced ? new (await import('@aws-lambda-powertools/tracer')).Tracer() : undefined;
    const telemetry = new Telemetry({ handler: name, ...(tracer ? { tracer } : {}) });
    try {
      return makeHandler(await makeDeps(parseHandlerEnv(name, process.env), telemetry));
    } catch (error) {
      telemetry.reportError({}, `${name} could not start`, error);
      throw error;
    }
  };
  return async (event, context) => {
    // A failed start (a secret that could not be read) is tried again by the next invocation.
    ready ??= coldStart().catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return (await ready)(event, context);
  };
}

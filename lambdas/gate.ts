/**
 * Gate Lambda (lambda:invoke.waitForTaskToken): stores the token, records the request, notifies.
 * Returns nothing: the approval id goes only to the notifier, never into execution history.
 */
import type { Context } from 'aws-lambda';
import { type GateDeps, openGate } from '../lib/runtime/gate/gate.ts';
import { GateRequestSchema } from '../lib/runtime/payloads/index.ts';
import { awsHandler } from './aws-handler.ts';
import { defaultGateDeps } from './default-deps.ts';
import { instrumented, parseEvent } from './edge.ts';

export const makeHandler = (deps: GateDeps | Promise<GateDeps>) =>
  instrumented(deps, async (event: unknown, _context?: Context): Promise<Record<string, never>> => {
    await openGate(parseEvent(GateRequestSchema, event), await deps);
    return {};
  });

/** The signing key may come from Secrets Manager: fetched once per container, at cold start. */
export const handler = awsHandler('gate', makeHandler, defaultGateDeps);

/** Join Lambda: exact joins across Parallel branches (wait with a task token, or signal). */
import type { Context } from 'aws-lambda';
import { JoinRequestSchema, type JoinSignalResult } from '../lib/runtime/payloads/index.ts';
import { type JoinDeps, joinSignal, joinWait } from '../lib/runtime/steps/join.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { awsHandler } from './aws-handler.ts';
import { defaultHarnessDeps } from './default-deps.ts';
import { instrumented, parseEvent } from './edge.ts';

export const makeHandler = (deps: JoinDeps & { readonly telemetry?: Telemetry }) =>
  instrumented(
    deps,
    async (event: unknown, _context?: Context): Promise<JoinSignalResult | Record<string, never>> => {
      const req = parseEvent(JoinRequestSchema, event);
      if (req.action === 'signal') return joinSignal(req, deps);
      await joinWait(req, deps);
      return {};
    },
  );

export const handler = awsHandler('join', makeHandler, (env, telemetry) => {
  const harness = defaultHarnessDeps(env, telemetry);
  return { dynamo: harness.dynamo, joinsTable: harness.tables.joins, sfn: harness.sfn, telemetry };
});

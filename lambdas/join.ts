/** Join Lambda: exact joins across Parallel branches (wait with a task token, or signal). */
import type { Context } from 'aws-lambda';
import { JoinRequestSchema, type JoinSignalResult } from '../lib/runtime/payloads/index.ts';
import { type JoinDeps, joinSignal, joinWait } from '../lib/runtime/steps/join.ts';
import { defaultHarnessDeps } from './default-deps.ts';
import { parseEvent } from './edge.ts';

export const makeHandler =
  (deps: JoinDeps) =>
  async (event: unknown, _context?: Context): Promise<JoinSignalResult | Record<string, never>> => {
    const req = parseEvent(JoinRequestSchema, event);
    if (req.action === 'signal') return joinSignal(req, deps);
    await joinWait(req, deps);
    return {};
  };

const harness = defaultHarnessDeps();
export const handler = makeHandler({
  dynamo: harness.dynamo,
  joinsTable: harness.tables.joins,
  sfn: harness.sfn,
});

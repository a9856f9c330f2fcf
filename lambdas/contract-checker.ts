/** Contract-checker Lambda: the only thing that completes a step; also finalizes a run (postconditions). */
import type { Context } from 'aws-lambda';
import { checkStep, finalizeExecution } from '../lib/runtime/contracts/check-step.ts';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import {
  CheckRequestSchema,
  type CheckResult,
  FinalizeRequestSchema,
  type FinalizeResult,
} from '../lib/runtime/payloads/index.ts';
import { defaultHarnessDeps } from './default-deps.ts';
import { parseEvent } from './edge.ts';

export const makeHandler =
  (deps: HarnessDeps) =>
  async (event: unknown, _context?: Context): Promise<CheckResult | FinalizeResult> =>
    (event as { kind?: unknown } | null)?.kind === 'finalize'
      ? finalizeExecution(parseEvent(FinalizeRequestSchema, event), deps)
      : checkStep(parseEvent(CheckRequestSchema, event), deps);

export const handler = makeHandler(defaultHarnessDeps());

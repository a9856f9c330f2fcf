/** Step-runner Lambda: runs one step's tool (never completes it). */
import type { Context } from 'aws-lambda';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import { RunnerRequestSchema, type RunnerResult } from '../lib/runtime/payloads/index.ts';
import { runStep } from '../lib/runtime/steps/step-runner.ts';
import { defaultHarnessDeps } from './default-deps.ts';
import { parseEvent } from './edge.ts';

export const makeHandler =
  (deps: HarnessDeps) =>
  async (event: unknown, _context?: Context): Promise<RunnerResult> =>
    runStep(parseEvent(RunnerRequestSchema, event), deps);

export const handler = makeHandler(defaultHarnessDeps());

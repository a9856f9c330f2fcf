/** Step-runner Lambda: runs one step's tool (never completes it), or the next rollback procedure. */
import type { Context } from 'aws-lambda';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import {
  RollbackRunRequestSchema,
  type RollbackRunResult,
  RunnerRequestSchema,
  type RunnerResult,
} from '../lib/runtime/payloads/index.ts';
import { runRollback } from '../lib/runtime/steps/rollback.ts';
import { runStep } from '../lib/runtime/steps/step-runner.ts';
import { awsHandler } from './aws-handler.ts';
import { stepDeps } from './default-deps.ts';
import { instrumented, parseEvent } from './edge.ts';

export const makeHandler = (deps: HarnessDeps) =>
  instrumented(
    deps,
    async (event: unknown, _context?: Context): Promise<RunnerResult | RollbackRunResult> =>
      (event as { kind?: unknown } | null)?.kind === 'rollback'
        ? runRollback(parseEvent(RollbackRunRequestSchema, event), deps)
        : runStep(parseEvent(RunnerRequestSchema, event), deps),
  );

export const handler = awsHandler('stepRunner', makeHandler, stepDeps);

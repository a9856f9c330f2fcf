/** Contract-checker Lambda: the only thing that completes a step (or proves its rollback); also finalizes a run (postconditions). */
import type { Context } from 'aws-lambda';
import { checkRollback } from '../lib/runtime/contracts/check-rollback.ts';
import { checkStep, finalizeExecution } from '../lib/runtime/contracts/check-step.ts';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import {
  CheckRequestSchema,
  type CheckResult,
  FinalizeRequestSchema,
  type FinalizeResult,
  RollbackCheckRequestSchema,
  type RollbackCheckResult,
} from '../lib/runtime/payloads/index.ts';
import { awsHandler } from './aws-handler.ts';
import { stepDeps } from './default-deps.ts';
import { instrumented, parseEvent } from './edge.ts';

export const makeHandler = (deps: HarnessDeps) =>
  instrumented(
    deps,
    async (
      event: unknown,
      _context?: Context,
    ): Promise<CheckResult | FinalizeResult | RollbackCheckResult> => {
      const kind = (event as { kind?: unknown } | null)?.kind;
      if (kind === 'finalize' || kind === 'postconditions')
        return finalizeExecution(parseEvent(FinalizeRequestSchema, event), deps);
      if (kind === 'rollback') return checkRollback(parseEvent(RollbackCheckRequestSchema, event), deps);
      return checkStep(parseEvent(CheckRequestSchema, event), deps);
    },
  );

export const handler = awsHandler('contractChecker', makeHandler, stepDeps);

/**
 * Contract-checker Lambda: the only thing that completes a step (or proves its rollback); also
 * finalizes a run (postconditions). Its plan processes run in the run's workspace, where the
 * step runner's ran (docs/deploy.md, "Where steps run on AWS").
 */
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
import { withSandboxScope } from '../lib/runtime/sandbox/sandbox.ts';
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
      const inWorkspace = <T>(executionId: string, use: () => Promise<T>) =>
        withSandboxScope({ workspace: executionId }, use);
      if (kind === 'finalize' || kind === 'postconditions') {
        const req = parseEvent(FinalizeRequestSchema, event);
        return inWorkspace(req.executionId, () => finalizeExecution(req, deps));
      }
      if (kind === 'rollback') {
        const req = parseEvent(RollbackCheckRequestSchema, event);
        return inWorkspace(req.executionId, () => checkRollback(req, deps));
      }
      const req = parseEvent(CheckRequestSchema, event);
      return inWorkspace(req.executionId, () => checkStep(req, deps));
    },
  );

export const handler = awsHandler('contractChecker', makeHandler, stepDeps);

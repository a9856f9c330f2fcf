/**
 * Step-runner Lambda: runs one step's tool (never completes it), or the next rollback procedure;
 * every plan process of the call runs in the run's workspace (the execution's, shared with its
 * contracts and postconditions: docs/deploy.md, "Where steps run on AWS").
 */
import type { Context } from 'aws-lambda';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import {
  RollbackRunRequestSchema,
  type RollbackRunResult,
  RunnerRequestSchema,
  type RunnerResult,
} from '../lib/runtime/payloads/index.ts';
import { withSandboxScope } from '../lib/runtime/sandbox/sandbox.ts';
import { runRollback } from '../lib/runtime/steps/rollback.ts';
import { runStep } from '../lib/runtime/steps/step-runner.ts';
import { awsHandler } from './aws-handler.ts';
import { stepDeps } from './default-deps.ts';
import { instrumented, parseEvent } from './edge.ts';

export const makeHandler = (deps: HarnessDeps) =>
  instrumented(
    deps,
    async (event: unknown, _context?: Context): Promise<RunnerResult | RollbackRunResult> => {
      if ((event as { kind?: unknown } | null)?.kind === 'rollback') {
        const req = parseEvent(RollbackRunRequestSchema, event);
        return withSandboxScope({ workspace: req.executionId }, () => runRollback(req, deps));
      }
      const req = parseEvent(RunnerRequestSchema, event);
      return withSandboxScope({ workspace: req.executionId }, () => runStep(req, deps));
    },
  );

export const handler = awsHandler('stepRunner', makeHandler, stepDeps);

/** Classifier Lambda: classifies a step's failure and says RETRY or ESCALATE. */
import type { Context } from 'aws-lambda';
import type { HarnessDeps } from '../lib/runtime/deps.ts';
import { ClassifyRequestSchema, type ClassifyResult } from '../lib/runtime/payloads/index.ts';
import { classifyStepFailure } from '../lib/runtime/recovery/classify-step.ts';
import { awsHandler } from './aws-handler.ts';
import { defaultHarnessDeps } from './default-deps.ts';
import { instrumented, parseEvent } from './edge.ts';

export const makeHandler = (deps: HarnessDeps) =>
  instrumented(
    deps,
    async (event: unknown, _context?: Context): Promise<ClassifyResult> =>
      classifyStepFailure(parseEvent(ClassifyRequestSchema, event), deps),
  );

export const handler = awsHandler('classifier', makeHandler, defaultHarnessDeps);

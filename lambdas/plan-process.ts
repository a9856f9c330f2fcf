/**
 * Plan-process Lambda: runs one plan command (a shell step, command contract, postcondition or
 * rollback) the step runner or the contract checker hands it, as a principal without the
 * harness's authority (its role: its own logs, nothing else). A command that declares AWS comes
 * with the plan AWS role's session the harness assumed for it; this function assumes nothing.
 */
import type { Context } from 'aws-lambda';
import type { HandlerEnv } from '../lib/runtime/catalog.ts';
import { PlanProcessEventSchema, type PlanProcessResult } from '../lib/runtime/sandbox/plan-process-call.ts';
import {
  type PlanProcessHostDeps,
  servePlanProcessCall,
} from '../lib/runtime/shared/plan-process-function.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { awsHandler } from './aws-handler.ts';
import { instrumented, parseEvent } from './edge.ts';

export const makeHandler = (deps: PlanProcessHostDeps & { readonly telemetry?: Telemetry }) =>
  instrumented(
    deps,
    async (event: unknown, _context?: Context): Promise<PlanProcessResult> =>
      servePlanProcessCall(parseEvent(PlanProcessEventSchema, event), deps),
  );

/** Where calls run (a run's in its workspace), and the region the credentials a call carries are for. */
export function planProcessDeps(
  env: HandlerEnv<'planProcess'>,
  telemetry: Telemetry,
): PlanProcessHostDeps & { readonly telemetry: Telemetry } {
  const region = process.env.AWS_REGION;
  return {
    workdir: env.PLANGATE_WORKDIR ?? '/tmp',
    ...(env.PLANGATE_WORKSPACE_ROOT ? { workspaceRoot: env.PLANGATE_WORKSPACE_ROOT } : {}),
    ...(region ? { region } : {}),
    telemetry,
  };
}

export const handler = awsHandler('planProcess', makeHandler, planProcessDeps);

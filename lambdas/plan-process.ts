/**
 * Plan-process Lambda: runs one plan command (a shell step, command contract, postcondition or
 * rollback) the step runner or the contract checker hands it, as a principal without the
 * harness's authority (its role: its own logs and sts:AssumeRole on the plan AWS role).
 */
import { fromTemporaryCredentials } from '@aws-sdk/credential-providers';
import type { Context } from 'aws-lambda';
import type { HandlerEnv } from '../lib/runtime/catalog.ts';
import { PlanProcessCallSchema, type PlanProcessResult } from '../lib/runtime/sandbox/plan-process-call.ts';
import { NotConfiguredError } from '../lib/runtime/shared/errors.ts';
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
      servePlanProcessCall(parseEvent(PlanProcessCallSchema, event), deps),
  );

/** Where calls run, and the plan AWS role assumed (with the call's session policy) for calls that declare AWS. */
export function planProcessDeps(
  env: HandlerEnv<'planProcess'>,
  telemetry: Telemetry,
): PlanProcessHostDeps & { readonly telemetry: Telemetry } {
  const region = process.env.AWS_REGION;
  return {
    workdir: env.PLANGATE_WORKDIR ?? '/tmp',
    ...(region ? { region } : {}),
    telemetry,
    assumeRole: async (session, durationSeconds) => {
      const roleArn = env.PLANGATE_PLAN_AWS_ROLE_ARN;
      if (!roleArn)
        throw new NotConfiguredError(
          'a step declares AWS access but the plan-process function has no plan AWS role: set PLANGATE_PLAN_AWS_ROLE_ARN',
        );
      const credentials = await fromTemporaryCredentials({
        params: {
          RoleArn: roleArn,
          RoleSessionName: session.sessionName,
          Policy: session.policy,
          DurationSeconds: durationSeconds,
        },
        ...(region ? { clientConfig: { region } } : {}),
      })();
      if (!credentials.sessionToken) throw new NotConfiguredError('sts:AssumeRole returned no session token');
      return {
        accessKeyId: credentials.accessKeyId,
        secretAccessKey: credentials.secretAccessKey,
        sessionToken: credentials.sessionToken,
      };
    },
  };
}

export const handler = awsHandler('planProcess', makeHandler, planProcessDeps);

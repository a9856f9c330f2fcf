/**
 * Planner Lambda: drafts the plan a `POST /plans {goal}` asked for and launches it to its gate
 * (lib/launch/plan-drafts.ts). The Plans API invokes it asynchronously with `{draftId}`.
 *
 * Environment: the Plans API's launch settings (PLANGATE_RUNTIME_PLAN_ROLE_ARN,
 * PLANGATE_SUBSTITUTIONS, PLANGATE_NAME_PREFIX, PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN, the tables and
 * bus), PLANGATE_PLANNER_PROVIDER (bedrock | openai), PLANGATE_PLANNER_MODEL,
 * PLANGATE_PLANNER_MAX_ROUNDS, OPENAI_BASE_URL, and an OpenAI-compatible key as OPENAI_API_KEY or
 * the Secrets Manager secret OPENAI_API_KEY_SECRET_ARN names.
 */
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { type DraftRunDeps, runDraft } from '../lib/launch/plan-drafts.ts';
import { providerFrom } from '../lib/planner/providers.ts';
import type { HandlerEnv } from '../lib/runtime/catalog.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { awsHandler } from './aws-handler.ts';
import { defaultHarnessDeps, runtimeLaunchDeps, secretFromEnv } from './default-deps.ts';
import { instrumented } from './edge.ts';

export const PlannerEventSchema = z.object({ draftId: z.string().min(1).max(100) });

export const makeHandler = (deps: DraftRunDeps) =>
  instrumented(
    deps,
    async (event: unknown, _context?: Context): Promise<{ draftId: string; status: string }> => {
      const { draftId } = PlannerEventSchema.parse(event);
      const draft = await runDraft(deps, draftId);
      return { draftId, status: draft?.status ?? 'missing' };
    },
  );

export async function defaultPlannerDeps(
  env: HandlerEnv<'planner'>,
  telemetry: Telemetry,
): Promise<DraftRunDeps> {
  const base = defaultHarnessDeps(env, telemetry);
  const apiKey = secretFromEnv(env, 'OPENAI_API_KEY', base.secretsManager);
  const providerEnv = apiKey ? { ...env, OPENAI_API_KEY: await apiKey() } : env;
  return {
    ...runtimeLaunchDeps(base, env),
    provider: providerFrom({}, providerEnv),
    ...(env.PLANGATE_PLANNER_MAX_ROUNDS ? { maxRounds: Number(env.PLANGATE_PLANNER_MAX_ROUNDS) } : {}),
  };
}

export const handler = awsHandler('planner', makeHandler, defaultPlannerDeps);

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
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { type DraftRunDeps, runDraft } from '../lib/launch/plan-drafts.ts';
import { providerFrom } from '../lib/planner/providers.ts';
import { defaultHarnessDeps, runtimeLaunchDeps, secretFromEnv } from './default-deps.ts';

export const PlannerEventSchema = z.object({ draftId: z.string().min(1).max(100) });

export const makeHandler =
  (deps: DraftRunDeps) =>
  async (event: unknown, _context?: Context): Promise<{ draftId: string; status: string }> => {
    const { draftId } = PlannerEventSchema.parse(event);
    const draft = await runDraft(deps, draftId);
    return { draftId, status: draft?.status ?? 'missing' };
  };

export async function defaultPlannerDeps(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<DraftRunDeps> {
  const base = defaultHarnessDeps(env);
  const apiKey = secretFromEnv(env, 'OPENAI_API_KEY', base.secretsManager as SecretsManagerClient);
  const providerEnv = apiKey ? { ...env, OPENAI_API_KEY: await apiKey() } : env;
  const maxRounds = Number(env.PLANGATE_PLANNER_MAX_ROUNDS ?? 4);
  return {
    ...runtimeLaunchDeps(base, env),
    provider: providerFrom({}, providerEnv),
    ...(Number.isInteger(maxRounds) && maxRounds > 0 ? { maxRounds } : {}),
  };
}

let deps: Promise<DraftRunDeps> | undefined;
export const handler = async (event: unknown, context?: Context) => {
  deps ??= defaultPlannerDeps();
  return makeHandler(await deps)(event, context);
};

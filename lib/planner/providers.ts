/** Chooses and builds the planner's provider from options and the environment. */
import { BedrockProvider } from './bedrock-provider.ts';
import { OpenAiProvider } from './openai-provider.ts';
import { type PlannerProvider, PlannerProviderError } from './provider.ts';

export interface ProviderChoice {
  /** @default PLANGATE_PLANNER_PROVIDER, else `openai` when OPENAI_API_KEY or OPENAI_BASE_URL is set, else `bedrock` */
  readonly provider?: string;
  /** @default PLANGATE_PLANNER_MODEL */
  readonly model?: string;
  /** OpenAI-compatible servers only. @default OPENAI_BASE_URL */
  readonly baseUrl?: string;
}

export function providerFrom(
  choice: ProviderChoice,
  env: Readonly<Record<string, string | undefined>> = process.env,
): PlannerProvider {
  const name =
    choice.provider ??
    env.PLANGATE_PLANNER_PROVIDER ??
    (env.OPENAI_API_KEY || env.OPENAI_BASE_URL || choice.baseUrl ? 'openai' : 'bedrock');
  const model = choice.model ?? env.PLANGATE_PLANNER_MODEL;
  if (!model) throw new PlannerProviderError(`${name}: no model: pass --model or set PLANGATE_PLANNER_MODEL`);
  if (name === 'openai')
    return new OpenAiProvider({ model, ...(choice.baseUrl ? { baseUrl: choice.baseUrl } : {}) }, env);
  if (name === 'bedrock') return new BedrockProvider({ model });
  throw new PlannerProviderError(`unknown provider "${name}": use bedrock or openai`);
}

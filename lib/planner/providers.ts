/** Chooses and builds the planner's provider from options and the environment. */
import { BedrockProvider } from './bedrock-provider.ts';
import { OpenAiProvider } from './openai-provider.ts';
import { type PlannerProvider, PlannerProviderError } from './provider.ts';

export interface ProviderChoice {
  /** @default PLANGATE_PLANNER_PROVIDER, else `openai` when OPENAI_API_KEY or OPENAI_BASE_URL is set, else `bedrock` */
  readonly provider?: string;
  /** @default PLANGATE_PLANNER_MODEL */
  readonly model?: string;
  /** OpenAI-compatible servers only (Bedrock's is AWS_ENDPOINT_URL_BEDROCK_RUNTIME). @default OPENAI_BASE_URL */
  readonly baseUrl?: string;
  /** How long one request may take. @default DEFAULT_REQUEST_TIMEOUT_SECONDS */
  readonly timeoutSeconds?: number;
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
  const timeout = choice.timeoutSeconds !== undefined ? { timeoutSeconds: choice.timeoutSeconds } : {};
  if (name === 'openai')
    return new OpenAiProvider(
      { model, ...(choice.baseUrl ? { baseUrl: choice.baseUrl } : {}), ...timeout },
      env,
    );
  if (name === 'bedrock') {
    if (choice.baseUrl)
      throw new PlannerProviderError(
        'bedrock: --base-url is for OpenAI-compatible servers; point Bedrock at another endpoint with AWS_ENDPOINT_URL_BEDROCK_RUNTIME',
      );
    return new BedrockProvider({ model, ...timeout });
  }
  throw new PlannerProviderError(`unknown provider "${name}": use bedrock or openai`);
}

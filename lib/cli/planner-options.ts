/**
 * The planner's options, once: `plangate plan` and `plangate run --goal` take the same ones, parse
 * them the same way and hand the same settings to the provider and the planning loop.
 */
import { readFile } from 'node:fs/promises';
import type { PlanFromGoalOptions } from '../planner/loop.ts';
import { DEFAULT_REQUEST_TIMEOUT_SECONDS, type PlannerProvider } from '../planner/provider.ts';
import { providerFrom } from '../planner/providers.ts';

/** `parseArgs` options of the planner. */
export const PLANNER_OPTIONS = {
  context: { type: 'string' },
  workspace: { type: 'string' },
  provider: { type: 'string' },
  model: { type: 'string' },
  'base-url': { type: 'string' },
  'max-rounds': { type: 'string' },
  'token-budget': { type: 'string' },
  'time-budget': { type: 'string' },
  'request-timeout': { type: 'string' },
  'no-shell-check': { type: 'boolean' },
} as const;

/** The options' help lines, for each command's usage. */
export const PLANNER_OPTIONS_HELP = `  --context FILE        more about the goal (constraints, conventions), sent to the provider
                        verbatim: never a .env or a key file (see docs/planner.md)
  --workspace DIR       a directory whose file names and sizes (never contents) the model sees
  --provider NAME       bedrock or openai (default: PLANGATE_PLANNER_PROVIDER; openai when
                        OPENAI_API_KEY or OPENAI_BASE_URL is set, else bedrock)
  --model ID            model id (default: PLANGATE_PLANNER_MODEL)
  --base-url URL        an OpenAI-compatible server (Ollama, vLLM, llama.cpp): e.g.
                        http://127.0.0.1:11434/v1 (default: OPENAI_BASE_URL); refused for
                        Bedrock, whose endpoint is AWS_ENDPOINT_URL_BEDROCK_RUNTIME
  --max-rounds N        rounds before giving up (default 4)
  --token-budget N      tokens one planning call may spend, checked before each round (default 200000)
  --time-budget S       seconds one planning call may take (default 300)
  --request-timeout S   seconds one request to the model may take (default ${DEFAULT_REQUEST_TIMEOUT_SECONDS})
  --no-shell-check      do not report the drafts' commands that are not valid shell`;

export type PlannerOptionValues = {
  readonly [K in keyof typeof PLANNER_OPTIONS]?: (typeof PLANNER_OPTIONS)[K]['type'] extends 'boolean'
    ? boolean
    : string;
};

/** What the options choose: the provider and the loop's settings (the goal and callbacks are the command's). */
export interface PlannerSettings {
  readonly provider: PlannerProvider;
  readonly loop: Pick<
    PlanFromGoalOptions,
    'context' | 'workspace' | 'maxRounds' | 'tokenBudget' | 'timeBudgetSeconds' | 'checkShell'
  >;
}

/** A usage problem as one line (exit 2), or the settings. Throws PlannerProviderError for the provider. */
export async function plannerSettings(values: PlannerOptionValues): Promise<PlannerSettings | string> {
  const number = (
    name: 'max-rounds' | 'token-budget' | 'time-budget' | 'request-timeout',
    fallback: number,
  ) => {
    const value = Number(values[name] ?? fallback);
    return Number.isInteger(value) && value > 0 ? value : undefined;
  };
  const maxRounds = number('max-rounds', 4);
  const tokenBudget = number('token-budget', 200_000);
  const timeBudgetSeconds = number('time-budget', 300);
  const timeoutSeconds = number('request-timeout', DEFAULT_REQUEST_TIMEOUT_SECONDS);
  if (
    maxRounds === undefined ||
    tokenBudget === undefined ||
    timeBudgetSeconds === undefined ||
    timeoutSeconds === undefined
  )
    return '--max-rounds, --token-budget, --time-budget and --request-timeout take positive integers';
  const provider = providerFrom({
    ...(values.provider ? { provider: values.provider } : {}),
    ...(values.model ? { model: values.model } : {}),
    ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
    timeoutSeconds,
  });
  return {
    provider,
    loop: {
      ...(values.context ? { context: await readFile(values.context, 'utf8') } : {}),
      ...(values.workspace ? { workspace: values.workspace } : {}),
      maxRounds,
      tokenBudget,
      timeBudgetSeconds,
      checkShell: !values['no-shell-check'],
    },
  };
}

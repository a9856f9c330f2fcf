/**
 * OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, llama.cpp server) through the `openai`
 * package, with a JSON-schema response format. The SDK retries throttling and 5xx with backoff.
 */
import OpenAI from 'openai';
import {
  type PlannerProvider,
  PlannerProviderError,
  type Proposal,
  type ProposalRequest,
} from './provider.ts';

export interface OpenAiProviderOptions {
  readonly model: string;
  /** @default OPENAI_API_KEY */
  readonly apiKey?: string;
  /** e.g. http://127.0.0.1:11434/v1 for Ollama. @default OPENAI_BASE_URL, else OpenAI */
  readonly baseUrl?: string;
  /** @default 3 */
  readonly maxRetries?: number;
  /** @default 120 */
  readonly timeoutSeconds?: number;
}

export class OpenAiProvider implements PlannerProvider {
  readonly name = 'openai' as const;
  readonly model: string;
  private readonly client: OpenAI;
  private readonly apiKey: string;

  constructor(
    options: OpenAiProviderOptions,
    env: Readonly<Record<string, string | undefined>> = process.env,
  ) {
    this.model = options.model;
    const baseURL = options.baseUrl ?? env.OPENAI_BASE_URL;
    // Local servers (Ollama, llama.cpp) take any key; OpenAI itself needs one.
    const apiKey = options.apiKey ?? env.OPENAI_API_KEY ?? (baseURL ? 'local' : undefined);
    if (!apiKey)
      throw new PlannerProviderError(
        'openai: no API key: set OPENAI_API_KEY (or --base-url for a local OpenAI-compatible server)',
      );
    this.apiKey = apiKey;
    this.client = new OpenAI({
      apiKey,
      ...(baseURL ? { baseURL } : {}),
      maxRetries: options.maxRetries ?? 3,
      timeout: (options.timeoutSeconds ?? 120) * 1000,
    });
  }

  async propose(request: ProposalRequest): Promise<Proposal> {
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.client.chat.completions.create(
        {
          model: this.model,
          max_tokens: request.maxOutputTokens,
          messages: [{ role: 'system', content: request.system }, ...request.messages],
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'plan', schema: request.planSchema, strict: false },
          },
        },
        request.signal ? { signal: request.signal } : {},
      );
    } catch (error) {
      throw this.explain(error);
    }
    const message = completion.choices[0]?.message;
    if (message?.refusal) throw new PlannerProviderError(`openai: the model refused: ${message.refusal}`);
    return {
      ...(message?.content ? { text: message.content } : {}),
      inputTokens: completion.usage?.prompt_tokens ?? 0,
      outputTokens: completion.usage?.completion_tokens ?? 0,
    };
  }

  /** One line a person can act on; the key never appears in it. */
  private explain(error: unknown): Error {
    const hide = (text: string) => text.split(this.apiKey).join('***');
    if (error instanceof OpenAI.AuthenticationError)
      return new PlannerProviderError('openai: the API key was refused (401): check OPENAI_API_KEY');
    if (error instanceof OpenAI.NotFoundError)
      return new PlannerProviderError(`openai: unknown model "${this.model}" (404)`);
    if (error instanceof OpenAI.APIError)
      return new PlannerProviderError(hide(`openai: ${error.status ?? 'error'}: ${error.message}`));
    return new PlannerProviderError(hide(`openai: ${(error as Error).message}`));
  }
}

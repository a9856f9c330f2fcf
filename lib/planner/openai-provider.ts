/**
 * OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, llama.cpp server) through the `openai`
 * package, with a JSON-schema response format. The SDK retries throttling and 5xx with backoff.
 */
import OpenAI from 'openai';
import {
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
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
  /** How long one request may take before it is given up (each retry gets as long). @default 60 */
  readonly timeoutSeconds?: number;
}

export class OpenAiProvider implements PlannerProvider {
  readonly name = 'openai' as const;
  readonly model: string;
  private readonly client: OpenAI;
  private readonly apiKey: string;
  /** Where requests go, named in every error. */
  private readonly baseUrl: string;
  private readonly timeoutSeconds: number;

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
    this.timeoutSeconds = options.timeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS;
    this.client = new OpenAI({
      apiKey,
      ...(baseURL ? { baseURL } : {}),
      maxRetries: options.maxRetries ?? 3,
      timeout: this.timeoutSeconds * 1000,
    });
    this.baseUrl = this.client.baseURL;
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
            json_schema: { name: request.answer?.name ?? 'plan', schema: request.planSchema, strict: false },
          },
        },
        request.signal ? { signal: request.signal } : {},
      );
    } catch (error) {
      throw this.explain(error, request.signal);
    }
    // A server that answers 200 with something else (an HTML error page, a proxy's login form).
    if (!Array.isArray((completion as Partial<typeof completion> | undefined)?.choices))
      throw this.failure(`the answer is not a Chat Completions response: ${excerpt(completion)}`);
    const message = completion.choices[0]?.message;
    if (message?.refusal) throw this.failure(`the model refused: ${message.refusal}`);
    return {
      ...(message?.content ? { text: message.content } : {}),
      inputTokens: completion.usage?.prompt_tokens ?? 0,
      outputTokens: completion.usage?.completion_tokens ?? 0,
    };
  }

  /** One line a person can act on: the provider, the URL and the cause; the key never appears in it. */
  private explain(error: unknown, signal: AbortSignal | undefined): PlannerProviderError {
    if (error instanceof OpenAI.AuthenticationError)
      return this.failure('the API key was refused (HTTP 401): check OPENAI_API_KEY');
    if (error instanceof OpenAI.NotFoundError)
      return this.failure(`unknown model "${this.model}" (HTTP 404)`);
    if (error instanceof OpenAI.APIConnectionTimeoutError)
      return this.failure(`no answer: timeout after ${this.timeoutSeconds} s per request`);
    if (error instanceof OpenAI.APIUserAbortError || signal?.aborted)
      return this.failure('no answer within the planning time budget (--time-budget)');
    if (error instanceof OpenAI.APIConnectionError)
      return this.failure(`cannot connect: ${connectionCause(error)}`);
    if (error instanceof OpenAI.APIError)
      return this.failure(`HTTP ${error.status ?? 'error'}: ${error.message}`);
    return this.failure((error as Error).message);
  }

  private failure(cause: string): PlannerProviderError {
    return new PlannerProviderError(`openai (${this.baseUrl}): ${cause}`.split(this.apiKey).join('***'));
  }
}

/** The system's reason under the SDK's "Connection error.", e.g. `connection refused (ECONNREFUSED)`. */
function connectionCause(error: Error): string {
  for (let cause: unknown = error.cause; cause instanceof Error; cause = cause.cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED): is the server running?';
    if (code === 'ENOTFOUND') return 'unknown host (ENOTFOUND)';
    if (code) return `${cause.message} (${code})`;
  }
  return error.message;
}

/** The start of an answer that was not what was asked for, on one line. */
function excerpt(answer: unknown): string {
  const text = (typeof answer === 'string' ? answer : (JSON.stringify(answer) ?? String(answer)))
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > 120 ? `"${text.slice(0, 120)}…"` : `"${text}"`;
}

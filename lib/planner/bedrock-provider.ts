/**
 * Amazon Bedrock's Converse API through @aws-sdk/client-bedrock-runtime: the plan is asked for as
 * the input of one tool (`submit_plan`) whose input schema is the plan's JSON Schema, so the model
 * answers with structured output. Credentials come from the default chain; the client retries
 * throttling and 5xx.
 */
import {
  AccessDeniedException,
  BedrockRuntimeClient,
  type BedrockRuntimeClientConfig,
  ConverseCommand,
  type ConverseCommandOutput,
  ResourceNotFoundException,
  ValidationException,
} from '@aws-sdk/client-bedrock-runtime';
import type { DocumentType } from '@smithy/types';
import {
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  type PlannerProvider,
  PlannerProviderError,
  type Proposal,
  type ProposalRequest,
} from './provider.ts';

export const SUBMIT_PLAN_TOOL = 'submit_plan';

export interface BedrockProviderOptions {
  /** A model id or inference profile, e.g. `anthropic.claude-sonnet-4-5-20250929-v1:0`. */
  readonly model: string;
  /** Client settings (region, endpoint for tests); credentials from the default chain. */
  readonly client?: BedrockRuntimeClientConfig;
  /** How long one request may take before it is given up. @default 60 */
  readonly timeoutSeconds?: number;
}

export class BedrockProvider implements PlannerProvider {
  readonly name = 'bedrock' as const;
  readonly model: string;
  private readonly client: BedrockRuntimeClient;
  private readonly timeoutSeconds: number;

  constructor(options: BedrockProviderOptions) {
    this.model = options.model;
    this.timeoutSeconds = options.timeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS;
    this.client = new BedrockRuntimeClient({ maxAttempts: 4, ...(options.client ?? {}) });
  }

  async propose(request: ProposalRequest): Promise<Proposal> {
    let out: ConverseCommandOutput;
    // The request timeout is a signal, as the time budget is: the HTTP/2 handler's own would
    // replace the client's handler settings.
    const timeout = AbortSignal.timeout(this.timeoutSeconds * 1000);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    const tool = request.answer ? `submit_${request.answer.name}` : SUBMIT_PLAN_TOOL;
    try {
      out = await this.client.send(
        new ConverseCommand({
          modelId: this.model,
          system: [{ text: request.system }],
          messages: request.messages.map((m) => ({ role: m.role, content: [{ text: m.content }] })),
          inferenceConfig: { maxTokens: request.maxOutputTokens },
          toolConfig: {
            tools: [
              {
                toolSpec: {
                  name: tool,
                  description: request.answer
                    ? `Submit the ${request.answer.description}.`
                    : 'Submit the plan. Its input is the whole plan document.',
                  inputSchema: { json: request.planSchema as DocumentType },
                },
              },
            ],
            toolChoice: { tool: { name: tool } },
          },
        }),
        { abortSignal: signal },
      );
    } catch (error) {
      throw await this.explain(error, request.signal, timeout);
    }
    const blocks = out.output?.message?.content ?? [];
    const toolUse = blocks.find((b) => b.toolUse?.name === tool)?.toolUse;
    const text = blocks.flatMap((b) => (b.text ? [b.text] : [])).join('\n');
    if (!toolUse && out.stopReason === 'content_filtered')
      throw await this.failure('the model refused (content filtered)');
    return {
      structured: toolUse?.input,
      ...(text ? { text } : {}),
      inputTokens: out.usage?.inputTokens ?? 0,
      outputTokens: out.usage?.outputTokens ?? 0,
    };
  }

  /** One line a person can act on: the provider, where it was asked and the cause. */
  private async explain(
    error: unknown,
    budget: AbortSignal | undefined,
    timeout: AbortSignal,
  ): Promise<PlannerProviderError> {
    const name = (error as Error).name;
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof ResourceNotFoundException) return this.failure(`unknown model "${this.model}"`);
    if (error instanceof ValidationException)
      return this.failure(`the request was refused: ${error.message}`);
    if (error instanceof AccessDeniedException)
      return this.failure(`access denied to "${this.model}": ${error.message}`);
    if (name === 'CredentialsProviderError')
      return this.failure('no AWS credentials (the default chain found none)');
    if (budget?.aborted) return this.failure('no answer within the planning time budget (--time-budget)');
    if (timeout.aborted || code === 'ETIMEDOUT')
      return this.failure(`no answer: timeout after ${this.timeoutSeconds} s per request`);
    if (code === 'ECONNREFUSED')
      return this.failure('cannot connect: connection refused (ECONNREFUSED): is the endpoint right?');
    if (code) return this.failure(`cannot connect: ${(error as Error).message} (${code})`);
    return this.failure((error as Error).message);
  }

  private async failure(cause: string): Promise<PlannerProviderError> {
    return new PlannerProviderError(`bedrock (${await this.where()}): ${cause}`);
  }

  /** The endpoint the client calls (AWS_ENDPOINT_URL_BEDROCK_RUNTIME, a test's), else its region. */
  private async where(): Promise<string> {
    try {
      const endpoint = await this.client.config.endpoint?.();
      if (endpoint)
        return `${endpoint.protocol}//${endpoint.hostname}${endpoint.port ? `:${endpoint.port}` : ''}${endpoint.path === '/' ? '' : endpoint.path}`;
      return `region ${await this.client.config.region()}`;
    } catch {
      return 'no region configured';
    }
  }
}

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
}

export class BedrockProvider implements PlannerProvider {
  readonly name = 'bedrock' as const;
  readonly model: string;
  private readonly client: BedrockRuntimeClient;

  constructor(options: BedrockProviderOptions) {
    this.model = options.model;
    this.client = new BedrockRuntimeClient({ maxAttempts: 4, ...(options.client ?? {}) });
  }

  async propose(request: ProposalRequest): Promise<Proposal> {
    let out: ConverseCommandOutput;
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
                  name: SUBMIT_PLAN_TOOL,
                  description: 'Submit the plan. Its input is the whole plan document.',
                  inputSchema: { json: request.planSchema as DocumentType },
                },
              },
            ],
            toolChoice: { tool: { name: SUBMIT_PLAN_TOOL } },
          },
        }),
        request.signal ? { abortSignal: request.signal } : {},
      );
    } catch (error) {
      throw this.explain(error);
    }
    const blocks = out.output?.message?.content ?? [];
    const toolUse = blocks.find((b) => b.toolUse?.name === SUBMIT_PLAN_TOOL)?.toolUse;
    const text = blocks.flatMap((b) => (b.text ? [b.text] : [])).join('\n');
    if (!toolUse && out.stopReason === 'content_filtered')
      throw new PlannerProviderError('bedrock: the model refused (content filtered)');
    return {
      ...(toolUse ? { structured: toolUse.input } : {}),
      ...(text ? { text } : {}),
      inputTokens: out.usage?.inputTokens ?? 0,
      outputTokens: out.usage?.outputTokens ?? 0,
    };
  }

  private explain(error: unknown): Error {
    if (error instanceof ResourceNotFoundException)
      return new PlannerProviderError(`bedrock: unknown model "${this.model}"`);
    if (error instanceof ValidationException)
      return new PlannerProviderError(`bedrock: the request was refused: ${error.message}`);
    if (error instanceof AccessDeniedException)
      return new PlannerProviderError(`bedrock: access denied to "${this.model}": ${error.message}`);
    const name = (error as Error).name;
    if (name === 'CredentialsProviderError')
      return new PlannerProviderError('bedrock: no AWS credentials (the default chain found none)');
    return new PlannerProviderError(`bedrock: ${(error as Error).message}`);
  }
}

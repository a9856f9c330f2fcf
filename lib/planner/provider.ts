/**
 * What the planner asks of a model, whichever serves it: one small interface with an Amazon
 * Bedrock (Converse) and an OpenAI-compatible (Chat Completions) implementation. A provider
 * returns what the model said; the loop (loop.ts) decides whether it is a plan.
 */

export interface ChatMessage {
  readonly role: 'user' | 'assistant';
  readonly content: string;
}

export interface ProposalRequest {
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  /** The JSON Schema of the structured answer the model is asked for: the plan's, unless `answer` says. */
  readonly planSchema: Record<string, unknown>;
  /**
   * What the structured answer is, when not a plan (a recovery suggestion): its name (OpenAI's
   * response format, Bedrock's `submit_<name>` tool) and what it is.
   * @default - a plan
   */
  readonly answer?: { readonly name: string; readonly description: string };
  readonly maxOutputTokens: number;
  readonly signal?: AbortSignal;
}

export interface Proposal {
  /** The answer as structured output (a tool call's input, a JSON-schema response), when given. */
  readonly structured?: unknown;
  /** The answer as text, when the model wrote text instead (parsed leniently). */
  readonly text?: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export interface PlannerProvider {
  readonly name: 'bedrock' | 'openai';
  readonly model: string;
  propose(request: ProposalRequest): Promise<Proposal>;
}

/** Long enough for a model to write a plan, short enough that a hung server is noticed at a prompt. */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 60;

/**
 * A provider failure the user can act on, as one line: a missing credential, an unknown model, a
 * refusal. Never holds an API key.
 */
export class PlannerProviderError extends Error {
  override readonly name = 'PlannerProviderError';
}

/** What every tool executor receives and returns. */
import type { LambdaClient } from '@aws-sdk/client-lambda';

/** The call-time environment a tool runs in. */
export interface ToolContext {
  readonly stepId: string;
  /** Seed 004's task text and agent role, for the agent tool. */
  readonly task?: string;
  readonly target?: string;
  readonly subscriptions: readonly string[];
  /** The step's time limit; a tool's own timeout may be shorter. */
  readonly timeoutMs: number;
  /**
   * Working directory for process-based tools.
   * @default process.cwd()
   */
  readonly cwd?: string;
  /**
   * Environment the harness runs with (agent command, secrets sourced from env).
   * @default process.env
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Needed by the lambda tool and by tools registered as Lambda functions. */
  readonly lambda?: LambdaClient;
  readonly signal?: AbortSignal;
}

/** A tool's result: a JSON object whose keys a step may capture as outputs. */
export type ToolOutput = Readonly<Record<string, unknown>>;

/** Runs one tool call with already-resolved, already-validated input. */
export type ToolExecutor<I> = (input: I, ctx: ToolContext) => Promise<ToolOutput>;

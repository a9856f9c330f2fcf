/** The `echo` tool: returns its input, so plans can set outputs and tests can run without side effects. */
import type { ToolContext, ToolOutput } from './types.ts';

export async function runEcho(
  input: Readonly<Record<string, unknown>>,
  _ctx: ToolContext,
): Promise<ToolOutput> {
  return { ...input };
}

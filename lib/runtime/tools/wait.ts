/** The `wait` tool: sleeps, abortably. */
import { setTimeout as sleep } from 'node:timers/promises';
import { ToolFailedError } from '../shared/errors.ts';
import type { ToolContext, ToolOutput } from './types.ts';

export interface WaitInput {
  readonly seconds: number;
}

export async function runWait(input: WaitInput, ctx: ToolContext): Promise<ToolOutput> {
  const ms = Math.min(input.seconds * 1000, ctx.timeoutMs);
  try {
    await sleep(ms, undefined, { signal: ctx.signal });
  } catch {
    throw new ToolFailedError('wait was aborted', { location: `steps.${ctx.stepId}` });
  }
  return { waitedSeconds: ms / 1000 };
}

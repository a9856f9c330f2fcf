/**
 * The tokens and cost an agent says it used, read from the last line of its stdout (seed 004 §7:
 * the harness counts them against the plan's budget). Two forms are understood:
 *
 * - Claude Code's result (`claude -p --output-format json`, or the last line of `stream-json`):
 *   `{"usage": {"input_tokens": …, "output_tokens": …, "cache_creation_input_tokens": …,
 *   "cache_read_input_tokens": …}, "total_cost_usd": …}`; tokens are all four summed.
 * - The simple form any agent can print last: `{"usage": {"tokens": 1200, "cost_usd": 0.03}}`.
 *
 * A last line that is not a JSON object with `usage` or `total_cost_usd` reports nothing; one that
 * has them with values that are not non-negative numbers is a problem the worker logs.
 */
import { z } from 'zod';
import type { Usage } from '../payloads/index.ts';

const Count = z.number().nonnegative();

const ReportSchema = z.object({
  usage: z
    .object({
      tokens: Count.optional(),
      input_tokens: Count.optional(),
      output_tokens: Count.optional(),
      cache_creation_input_tokens: Count.optional(),
      cache_read_input_tokens: Count.optional(),
      cost_usd: Count.optional(),
    })
    .optional(),
  total_cost_usd: Count.optional(),
});

export type UsageReport =
  | { readonly kind: 'none' }
  | { readonly kind: 'usage'; readonly usage: Usage }
  | { readonly kind: 'invalid'; readonly problem: string };

/** What the agent's stdout says it used (its last non-empty line, or the whole output as one JSON value). */
export function agentUsage(stdout: string): UsageReport {
  const trimmed = stdout.trim();
  const last = trimmed.slice(trimmed.lastIndexOf('\n') + 1);
  const value = jsonObject(last) ?? jsonObject(trimmed);
  if (!value || !('usage' in value || 'total_cost_usd' in value)) return { kind: 'none' };
  const parsed = ReportSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      kind: 'invalid',
      problem: `the usage line's ${issue?.path.join('.') || 'value'} is not a non-negative number`,
    };
  }
  const { usage, total_cost_usd } = parsed.data;
  const parts = [
    usage?.input_tokens,
    usage?.output_tokens,
    usage?.cache_creation_input_tokens,
    usage?.cache_read_input_tokens,
  ].filter((n): n is number => n !== undefined);
  const tokens = usage?.tokens ?? (parts.length > 0 ? parts.reduce((a, b) => a + b, 0) : undefined);
  const costUsd = total_cost_usd ?? usage?.cost_usd;
  if (tokens === undefined && costUsd === undefined) return { kind: 'none' };
  return {
    kind: 'usage',
    usage: { ...(tokens !== undefined ? { tokens } : {}), ...(costUsd !== undefined ? { costUsd } : {}) },
  };
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Budgets (seed 004 §7): the limits the harness enforces and the usage steps report. */
import { z } from 'zod';

export const BudgetLimitsSchema = z.object({
  wallClockSeconds: z.number().positive().optional(),
  costUsd: z.number().nonnegative().optional(),
  tokens: z.number().int().positive().optional(),
});
export type BudgetLimits = z.infer<typeof BudgetLimitsSchema>;

/** Tokens and cost an agent reports in its result (`usage: {tokens, costUsd}`). */
export const UsageSchema = z.object({
  tokens: z.number().nonnegative().optional(),
  costUsd: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

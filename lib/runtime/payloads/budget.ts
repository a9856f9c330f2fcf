/** Budgets (seed 004 §7): the limits the harness enforces and the usage steps report. */
import { z } from 'zod';

export const BudgetLimitsSchema = z.object({
  wallClockSeconds: z.number().positive().optional(),
  costUsd: z.number().nonnegative().optional(),
  tokens: z.number().int().positive().optional(),
  /** Seed 003's command limit per task: not counted by the harness, told to the agent in its handoff. */
  maxCommands: z.number().int().positive().optional(),
});
export type BudgetLimits = z.infer<typeof BudgetLimitsSchema>;

/** Tokens and cost an agent reports in its result (`usage: {tokens, costUsd}`). */
export const UsageSchema = z.object({
  tokens: z.number().nonnegative().optional(),
  costUsd: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/**
 * What an agent step's handoff says of the budget: what was left of each limit when the step
 * started (a person's raise included) and the command limit. The worker cuts the agent's time
 * to the wall clock left.
 */
export const RemainingBudgetSchema = z.object({
  wallClockSeconds: z.number().nonnegative().optional(),
  tokens: z.number().nonnegative().optional(),
  costUsd: z.number().nonnegative().optional(),
  maxCommands: z.number().int().positive().optional(),
});
export type RemainingBudget = z.infer<typeof RemainingBudgetSchema>;

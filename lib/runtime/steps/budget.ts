/**
 * The budget check before a step runs (seed 004 §7), from the journal alone: wall clock since
 * the plan gate approved the run, tokens and cost every attempt's agent reported (a failed
 * attempt's too: it was spent). A limit a person raised (RETRY after BUDGET_EXCEEDED) counts as
 * raised from then on.
 */
import type { Journal, JournalEventInput } from '../journal/journal.ts';
import {
  BUDGET_EXCEEDED,
  type BudgetLimits,
  HarnessFailure,
  type JournalRecord,
  type RemainingBudget,
} from '../payloads/index.ts';

/** The limits the harness counts (`maxCommands` is the agent's to keep). */
type Limit = 'wallClockSeconds' | 'tokens' | 'costUsd';
const LIMITS: readonly Limit[] = ['wallClockSeconds', 'tokens', 'costUsd'];

/** What has been used so far, per limit. */
export function budgetUsed(events: readonly JournalRecord[], now: Date): Record<Limit, number> {
  const approved = events.find((e) => e.event === 'GATE_APPROVED' && e.details.gate === 'plan');
  const since = approved ? Date.parse(approved.timestamp) : now.getTime();
  let tokens = 0;
  let costUsd = 0;
  for (const e of events) {
    if (e.event !== 'TASK_COMPLETED' && e.event !== 'TASK_FAILED') continue;
    const usage = e.details.usage as { tokens?: number; costUsd?: number } | undefined;
    tokens += usage?.tokens ?? 0;
    costUsd += usage?.costUsd ?? 0;
  }
  return { wallClockSeconds: (now.getTime() - since) / 1000, tokens, costUsd };
}

/** The plan's limits, raised where a person answered RETRY to a BUDGET_EXCEEDED. */
export function effectiveLimits(budget: BudgetLimits, events: readonly JournalRecord[]): BudgetLimits {
  const limits: BudgetLimits = { ...budget };
  events.forEach((e, i) => {
    if (e.event !== 'BUDGET_EXCEEDED') return;
    const continued = events
      .slice(i + 1)
      .some(
        (a) =>
          a.event === 'RECOVERY_ESCALATION' && a.task_id === e.task_id && a.details.user_decision === 'RETRY',
      );
    const limit = e.details.limit as Limit;
    if (continued) limits[limit] = Math.max(limits[limit] ?? 0, Number(e.details.raised_to));
  });
  return limits;
}

/** Writes BUDGET_EXCEEDED and throws when a limit is reached; returns quietly otherwise. */
export async function enforceBudget(
  budget: BudgetLimits,
  events: readonly JournalRecord[],
  journal: Journal,
  identity: Omit<JournalEventInput, 'event' | 'details'>,
  now = new Date(),
): Promise<void> {
  const used = budgetUsed(events, now);
  const limits = effectiveLimits(budget, events);
  for (const limit of LIMITS) {
    const allowed = limits[limit];
    const original = budget[limit];
    if (allowed === undefined || original === undefined || used[limit] < allowed) continue;
    const spent = round(used[limit]);
    const raisedTo = round(spent + original);
    await journal.append({
      ...identity,
      event: 'BUDGET_EXCEEDED',
      details: { limit, budget: allowed, used: spent, raised_to: raisedTo },
    });
    throw new HarnessFailure(BUDGET_EXCEEDED, {
      message: `budget exceeded: ${limit} used ${spent} of ${allowed}; retry continues with it raised to ${raisedTo}, abort stops the run (and rolls back)`,
      failureClass: 'unrecoverable',
    });
  }
}

/** What is left of each limit now (never below zero), and the command limit, for an agent's handoff. */
export function remainingBudget(
  budget: BudgetLimits,
  events: readonly JournalRecord[],
  now = new Date(),
): RemainingBudget {
  const used = budgetUsed(events, now);
  const limits = effectiveLimits(budget, events);
  const remaining: RemainingBudget = {};
  for (const limit of LIMITS) {
    const allowed = limits[limit];
    if (allowed !== undefined) remaining[limit] = Math.max(0, round(allowed - used[limit]));
  }
  if (budget.maxCommands !== undefined) remaining.maxCommands = budget.maxCommands;
  return remaining;
}

const round = (n: number): number => Math.round(n * 1000) / 1000;

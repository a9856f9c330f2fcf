/**
 * The plan's budget (seed 004 §7), from the journal alone: wall clock since the plan gate
 * approved the run, tokens and cost every attempt's agent reported (a failed attempt's too: it
 * was spent). A limit a person raised (RETRY after BUDGET_EXCEEDED) counts as raised from then
 * on. Checked before a step runs, and after an attempt failed: an attempt the budget stopped (or
 * that used it up) is not retried by its recipe; a person is asked once.
 */
import type { Journal, JournalEventInput } from '../journal/journal.ts';
import {
  BUDGET_EXCEEDED,
  type BudgetLimits,
  HarnessFailure,
  type JournalRecord,
  type RemainingBudget,
  type Usage,
} from '../payloads/index.ts';
import { recordFailure } from './failure-events.ts';

/** The limits the harness counts (`maxCommands` is the agent's to keep). */
type Limit = 'wallClockSeconds' | 'tokens' | 'costUsd';
const LIMITS: readonly Limit[] = ['wallClockSeconds', 'tokens', 'costUsd'];

/**
 * A worker gives its agent whole seconds of the wall clock left (lib/worker/handoff.ts rounds
 * down), so an agent the budget stopped may leave up to this much unused: after a worker's failed
 * attempt, less than this left counts as none.
 */
export const WORKER_TIME_GRAIN_SECONDS = 1;

type Identity = Omit<JournalEventInput, 'event' | 'details'>;

/** What has been used so far, per limit (`spent`: what a failed attempt used that is not journaled yet). */
export function budgetUsed(
  events: readonly JournalRecord[],
  now: Date,
  spent: Usage = {},
): Record<Limit, number> {
  const approved = events.find((e) => e.event === 'GATE_APPROVED' && e.details.gate === 'plan');
  const since = approved ? Date.parse(approved.timestamp) : now.getTime();
  let tokens = spent.tokens ?? 0;
  let costUsd = spent.costUsd ?? 0;
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

/** BUDGET_EXCEEDED's details for the first limit used up, or undefined while every limit holds. */
function exceeded(
  budget: BudgetLimits,
  events: readonly JournalRecord[],
  now: Date,
  { spent, wallClockGraceSeconds = 0 }: { spent?: Usage; wallClockGraceSeconds?: number } = {},
): { limit: Limit; budget: number; used: number; raised_to: number } | undefined {
  const used = budgetUsed(events, now, spent);
  const limits = effectiveLimits(budget, events);
  for (const limit of LIMITS) {
    const allowed = limits[limit];
    const original = budget[limit];
    const grace = limit === 'wallClockSeconds' ? wallClockGraceSeconds : 0;
    if (allowed === undefined || original === undefined || used[limit] < allowed - grace) continue;
    const spentSoFar = round(used[limit]);
    return { limit, budget: allowed, used: spentSoFar, raised_to: round(spentSoFar + original) };
  }
  return undefined;
}

/** Whether a limit of the plan's budget is used up (`spent`: a failed attempt's usage not journaled yet). */
export function budgetUsedUp(
  budget: BudgetLimits,
  events: readonly JournalRecord[],
  now: Date,
  spent?: Usage,
): boolean {
  return exceeded(budget, events, now, spent ? { spent } : {}) !== undefined;
}

function budgetFailure(details: NonNullable<ReturnType<typeof exceeded>>, prefix = ''): HarnessFailure {
  return new HarnessFailure(BUDGET_EXCEEDED, {
    message: `${prefix}budget exceeded: ${details.limit} used ${details.used} of ${details.budget}; retry continues with it raised to ${details.raised_to}, abort stops the run (and rolls back)`,
    failureClass: 'unrecoverable',
  });
}

/** Writes BUDGET_EXCEEDED and throws when a limit is reached; returns quietly otherwise. */
export async function enforceBudget(
  budget: BudgetLimits,
  events: readonly JournalRecord[],
  journal: Journal,
  identity: Identity,
  now = new Date(),
): Promise<void> {
  const details = exceeded(budget, events, now);
  if (!details) return;
  await journal.append({ ...identity, event: 'BUDGET_EXCEEDED', details });
  throw budgetFailure(details);
}

/** A step's failed attempt, as the Lambda that detected it knows it. */
export interface FailedAttempt {
  readonly attempt: number;
  /** The start of TASK_FAILED's progress line: `[Task N/M] ✗ <description>`. */
  readonly progress: string;
  /** Why the attempt failed (redacted). */
  readonly message: string;
  /** What the attempt's agent reported it used. */
  readonly usage?: Usage;
  /** Wall clock left that counts as none (see {@link WORKER_TIME_GRAIN_SECONDS}). @default 0 */
  readonly wallClockGraceSeconds?: number;
}

/**
 * After a failed attempt: when the plan's budget is used up (this attempt's usage counted), the attempt is recorded failed as
 * BudgetExceeded (TASK_FAILED, FAILURE_DETECTED, FAILURE_CLASSIFIED unrecoverable), then
 * BUDGET_EXCEEDED, and the failure to escalate is returned: no recipe retries it, a person
 * decides once. Undefined while the budget holds (the recipe decides).
 */
export async function budgetStop(
  budget: BudgetLimits,
  events: readonly JournalRecord[],
  journal: Journal,
  identity: Identity,
  failed: FailedAttempt,
  now = new Date(),
): Promise<HarnessFailure | undefined> {
  const details = exceeded(budget, events, now, {
    spent: failed.usage,
    wallClockGraceSeconds: failed.wallClockGraceSeconds ?? 0,
  });
  if (!details) return undefined;
  const failure = budgetFailure(details, `${failed.message}; `);
  await recordFailure(journal, identity, {
    error: BUDGET_EXCEEDED,
    message: failure.failureCause.message,
    attempt: failed.attempt,
    failureClass: 'unrecoverable',
    taskFailed: {
      progress: `${failed.progress}: budget exceeded (${details.limit})`,
      ...(failed.usage ? { usage: failed.usage } : {}),
    },
  });
  await journal.append({ ...identity, event: 'BUDGET_EXCEEDED', details });
  return failure;
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

/**
 * The revision the plan gate approved, as the journal recorded it: a step gate opened later shows
 * and binds that content (the step's call as revised, the revision's digest), since it is what the
 * step runner will call (the machine's `$mods` are that decision's modifications).
 */
import { EVENT_DETAILS, type GateRevision, type JournalRecord } from '../payloads/index.ts';

/**
 * The plan gate's approved revision among an execution's events: the modifications of its
 * GATE_APPROVED, numbered and attributed by the GATE_PLAN_MODIFIED that made its digest.
 * Undefined when the plan was approved as submitted (or not yet).
 */
export function approvedRevisionOf(events: readonly JournalRecord[]): GateRevision | undefined {
  const approved = events
    .filter((e) => e.event === 'GATE_APPROVED')
    .map((e) => EVENT_DETAILS.GATE_APPROVED.safeParse(e.details))
    .find((d) => d.success && d.data.gate === 'plan')?.data;
  if (!approved?.modifications || approved.digest === undefined) return undefined;
  const digest = approved.digest;
  const made = events
    .filter((e) => e.event === 'GATE_PLAN_MODIFIED')
    .map((e) => ({ at: e.timestamp, details: EVENT_DETAILS.GATE_PLAN_MODIFIED.safeParse(e.details).data }))
    .find((m) => m.details?.to === digest);
  return {
    // Journaled together; the fallbacks only keep an approved revision from ever going unshown.
    number: made?.details?.revision ?? 1,
    digest,
    skipSteps: [...approved.modifications.skipSteps],
    argOverrides: approved.modifications.argOverrides,
    by: made?.details?.by ?? approved.approver ?? 'an approver',
    at: made?.at ?? '',
  };
}

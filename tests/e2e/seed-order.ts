/**
 * Seed 000's event list and order, as checks over one execution's stored events: the plan is
 * created first, the gate is requested before it is answered, nothing runs before the plan is
 * approved, a task starts before it ends, a failure is detected then classified before a
 * recovery is applied, an escalation follows the recipe giving up (or the budget running out), and EXECUTION_COMPLETE
 * closes the log.
 */
import { EVENT_TYPES, type JournalRecord } from '../../lib/runtime/payloads/index.ts';

export function seedOrderProblems(events: readonly JournalRecord[]): string[] {
  const problems: string[] = [];
  const types = events.map((e) => e.event);
  const index = (type: string, from = 0) => types.indexOf(type as (typeof types)[number], from);
  for (const t of types)
    if (!(EVENT_TYPES as readonly string[]).includes(t)) problems.push(`unknown event ${t}`);
  if (types[0] !== 'PLAN_CREATED') problems.push(`first event is ${types[0]}, not PLAN_CREATED`);
  const requested = events.findIndex(
    (e) => e.event === 'GATE_APPROVAL_REQUESTED' && e.details.gate === 'plan',
  );
  const decided = events.findIndex(
    (e) => (e.event === 'GATE_APPROVED' || e.event === 'GATE_REJECTED') && e.details.gate === 'plan',
  );
  if (requested < 0) problems.push('no plan GATE_APPROVAL_REQUESTED');
  if (decided >= 0 && decided < requested) problems.push('plan gate decided before it was requested');
  const firstTask = types.findIndex((t) => t.startsWith('TASK_'));
  if (firstTask >= 0 && (decided < 0 || firstTask < decided || events[decided]?.event !== 'GATE_APPROVED'))
    problems.push(`${types[firstTask]} before the plan gate was approved`);
  events.forEach((e, i) => {
    if ((e.event === 'TASK_COMPLETED' || e.event === 'TASK_FAILED') && e.task_id) {
      const started = events.slice(0, i).some((p) => p.event === 'TASK_STARTED' && p.task_id === e.task_id);
      if (!started) problems.push(`${e.event} of ${e.task_id} (seq ${e.seq}) without TASK_STARTED before it`);
    }
    if (e.event === 'RECOVERY_APPLIED') {
      // What is recovered from: a classified failure, or a budget a person raised.
      const classified = events
        .slice(0, i)
        .some(
          (p) =>
            (p.event === 'FAILURE_CLASSIFIED' || p.event === 'BUDGET_EXCEEDED') && p.task_id === e.task_id,
        );
      if (!classified)
        problems.push(`RECOVERY_APPLIED of ${e.task_id} (seq ${e.seq}) before FAILURE_CLASSIFIED`);
    }
  });
  const complete = index('EXECUTION_COMPLETE');
  if (complete < 0) problems.push('no EXECUTION_COMPLETE');
  else if (complete !== types.length - 1) problems.push('events after EXECUTION_COMPLETE');
  const tasks = new Set(events.flatMap((e) => (e.task_id ? [e.task_id] : [])));
  for (const task of tasks) problems.push(...recoveryProblems(events.filter((e) => e.task_id === task)));
  return problems;
}

/**
 * Stage 4 for one task: each failed task is detected, then classified; a recipe's outcome follows its
 * classification (`success` right before the task completes); an escalation follows the recipe's
 * `escalated` outcome; attempts never go down.
 */
function recoveryProblems(own: readonly JournalRecord[]): string[] {
  const problems: string[] = [];
  const at = (e: JournalRecord) => `${e.event} of ${e.task_id} (seq ${e.seq})`;
  let lastAttempt = 0;
  own.forEach((e, i) => {
    const before = own[i - 1];
    const after = own[i + 1];
    if (e.event === 'TASK_STARTED') {
      const attempt = Number(e.details.attempt);
      // The same attempt may start again (a resumed run redelivers the task it was in); never an older one.
      if (!(attempt >= lastAttempt)) problems.push(`${at(e)}: attempt ${attempt} after ${lastAttempt}`);
      lastAttempt = attempt;
    }
    // Seed 000: "if no event was emitted, it didn't happen" — every detected failure is a TASK_FAILED first.
    if (e.event === 'FAILURE_DETECTED' && before?.event !== 'TASK_FAILED')
      problems.push(`${at(e)} without TASK_FAILED right before it`);
    if (e.event === 'FAILURE_DETECTED' && after?.event !== 'FAILURE_CLASSIFIED')
      problems.push(`${at(e)} not followed by FAILURE_CLASSIFIED`);
    if (e.event === 'FAILURE_CLASSIFIED' && before?.event !== 'FAILURE_DETECTED')
      problems.push(`${at(e)} without FAILURE_DETECTED right before it`);
    if (
      e.event === 'RECOVERY_APPLIED' &&
      e.details.outcome === 'success' &&
      after?.event !== 'TASK_COMPLETED'
    )
      problems.push(`${at(e)}: success not followed by TASK_COMPLETED`);
    if (e.event === 'RECOVERY_ESCALATION') {
      // A person is asked when a recipe gave up, or when the budget ran out before the step.
      const cause = own
        .slice(0, i)
        .findLast((p) => p.event === 'RECOVERY_APPLIED' || p.event === 'BUDGET_EXCEEDED');
      if (cause?.event !== 'BUDGET_EXCEEDED' && cause?.details.outcome !== 'escalated')
        problems.push(`${at(e)} without RECOVERY_APPLIED {outcome: escalated} or BUDGET_EXCEEDED before it`);
    }
  });
  return problems;
}

/** What the rollback loop and the budget check read from the journal: pure functions over events. */
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { budgetUsed, effectiveLimits } from '../../lib/runtime/recovery/budget.ts';
import { nextRollback } from '../../lib/runtime/steps/rollback.ts';

let seq = 0;
const event = (
  type: string,
  taskId?: string,
  details: Record<string, unknown> = {},
  at = '2026-01-01T00:00:00.000Z',
) =>
  ({
    seq: ++seq,
    event: type,
    timestamp: at,
    executionId: 'x',
    planId: 'p',
    planVersion: 1,
    planDigest: 'sha256:0',
    ...(taskId ? { task_id: taskId } : {}),
    details,
    prevHash: '',
    hash: '',
  }) as JournalRecord;

describe('nextRollback', () => {
  it('undoes the most recently completed step first, whatever the plan order (parallel branches)', () => {
    const events = [event('TASK_COMPLETED', 'b'), event('TASK_COMPLETED', 'a'), event('TASK_COMPLETED', 'c')];
    expect(nextRollback(events, ['a', 'b', 'c'])).toBe('c');
    expect(nextRollback([...events, event('ROLLBACK_COMPLETED', 'c')], ['a', 'b', 'c'])).toBe('a');
    // Steps without a procedure are passed over; those that never completed are not undone.
    expect(nextRollback(events, ['b', 'd'])).toBe('b');
  });

  it('stops after a failed rollback and is done when nothing is left', () => {
    const events = [
      event('TASK_COMPLETED', 'a'),
      event('TASK_COMPLETED', 'b'),
      event('ROLLBACK_FAILED', 'b'),
    ];
    expect(nextRollback(events, ['a', 'b'])).toBeUndefined();
    expect(
      nextRollback([event('TASK_COMPLETED', 'a'), event('ROLLBACK_COMPLETED', 'a')], ['a']),
    ).toBeUndefined();
  });

  it('runs a started rollback again when it has not ended (a redelivered call)', () => {
    expect(nextRollback([event('TASK_COMPLETED', 'a'), event('ROLLBACK_STARTED', 'a')], ['a'])).toBe('a');
  });
});

describe('budget from the journal', () => {
  it('counts wall clock from the plan approval and the usage steps reported', () => {
    const events = [
      event('GATE_APPROVED', undefined, { gate: 'plan' }, '2026-01-01T00:00:10.000Z'),
      event('TASK_COMPLETED', 'a', { usage: { tokens: 100, costUsd: 0.5 } }),
      event('TASK_COMPLETED', 'b', { usage: { tokens: 20 } }),
    ];
    expect(budgetUsed(events, new Date('2026-01-01T00:00:13.500Z'))).toEqual({
      wallClockSeconds: 3.5,
      tokens: 120,
      costUsd: 0.5,
    });
  });

  it('raises a limit only when a person answered RETRY to its BUDGET_EXCEEDED', () => {
    const exceeded = event('BUDGET_EXCEEDED', 'c', {
      limit: 'tokens',
      budget: 100,
      used: 120,
      raised_to: 220,
    });
    expect(effectiveLimits({ tokens: 100 }, [exceeded])).toEqual({ tokens: 100 });
    expect(
      effectiveLimits({ tokens: 100 }, [
        exceeded,
        event('RECOVERY_ESCALATION', 'c', { user_decision: 'ABORT' }),
      ]),
    ).toEqual({ tokens: 100 });
    expect(
      effectiveLimits({ tokens: 100 }, [
        exceeded,
        event('RECOVERY_ESCALATION', 'c', { user_decision: 'RETRY' }),
      ]),
    ).toEqual({ tokens: 220 });
  });
});

import { describe, expect, it } from 'vitest';
import {
  classifyByDetection,
  DEFAULT_DETECTION,
  DEFAULT_RECOVERY,
  effectiveRecovery,
} from '../../lib/plan/recovery.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';

describe('recovery recipes', () => {
  it('follows seed 000: transient retries twice after 5 s then 30 s; others ask a person', () => {
    const t = DEFAULT_RECOVERY.transient;
    expect([t.maxAttempts, t.intervalSeconds, t.intervalSeconds * t.backoffRate]).toEqual([2, 5, 30]);
    expect(DEFAULT_RECOVERY.logic.maxAttempts).toBe(1);
    for (const c of ['permission', 'invalid_input', 'unrecoverable', 'unknown'] as const) {
      expect(DEFAULT_RECOVERY[c]).toMatchObject({ maxAttempts: 0, escalation: 'ask' });
    }
    expect(DEFAULT_DETECTION.unknown).toEqual({
      errorNames: [],
      messagePatterns: [],
      httpStatuses: [],
      exitCodes: [],
    });
  });

  it.each([
    [{ message: 'read ECONNRESET' }, 'transient'],
    [{ message: 'Request timed out after 30s' }, 'transient'],
    [{ httpStatus: 503 }, 'transient'],
    [{ errorName: 'ThrottlingException' }, 'transient'],
    [{ httpStatus: 403, message: 'Forbidden (timed out waiting)' }, 'permission'],
    [{ message: 'EACCES: permission denied, open /etc/shadow' }, 'permission'],
    [{ errorName: 'AccessDeniedException' }, 'permission'],
    [{ httpStatus: 422 }, 'invalid_input'],
    [{ exitCode: 1 }, 'logic'],
    [{ exitCode: 127, message: 'uv: command not found' }, 'unrecoverable'],
    [{ message: 'something odd' }, 'unknown'],
  ] as const)('classifies %o as %s', (facts, expected) => {
    expect(classifyByDetection(facts)).toBe(expected);
  });

  it("merges the plan's overrides and each step's onFail", () => {
    const plan = PlanSchema.parse({
      id: 'p',
      objective: 'o',
      recovery: { transient: { maxAttempts: 4, intervalSeconds: 2 } },
      steps: [
        { id: 'a', description: 'A', tool: 'echo' },
        { id: 'b', description: 'B', tool: 'echo', onFail: { retries: 3, escalation: 'abort' } },
      ],
    });
    const recovery = effectiveRecovery(plan);
    expect(recovery.plan.transient).toMatchObject({ maxAttempts: 4, intervalSeconds: 2, backoffRate: 2 });
    expect(recovery.plan.logic).toBe(DEFAULT_RECOVERY.logic);
    expect(recovery.steps.get('a')).toBe(recovery.plan);
    const b = recovery.steps.get('b')!;
    expect(b.logic).toMatchObject({ maxAttempts: 3, escalation: 'abort' });
    expect(b.unknown).toMatchObject({ maxAttempts: 3, escalation: 'abort' });
    expect(b.transient).toMatchObject({ maxAttempts: 4, escalation: 'abort' });
    expect(b.permission).toMatchObject({ maxAttempts: 0, escalation: 'abort' });
  });
});

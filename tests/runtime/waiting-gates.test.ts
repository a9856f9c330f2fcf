/**
 * An execution's waiting gates read back from its journal (what GET /plans/{id} shows): a gate
 * escalated to the next group is that group's, with its own link and policy; a step waiting for a
 * person and an escalation of another step wait side by side; answers close them; the next rung
 * is the plan's ladder from where the gate stands. And what a gate asks, as its opening event says.
 */
import { describe, expect, it } from 'vitest';
import { gateAsks } from '../../lib/runtime/gate/notice.ts';
import { nextRung, waitingGates } from '../../lib/runtime/gate/waiting-gates.ts';
import type {
  ApprovalNotice,
  EventType,
  GateOpened,
  JournalRecord,
} from '../../lib/runtime/payloads/index.ts';

let seq = 0;
function record(
  event: EventType,
  details: Record<string, unknown>,
  step?: string,
  timestamp = '2026-01-01T10:00:00.000Z',
): JournalRecord {
  seq += 1;
  return {
    timestamp,
    event,
    executionId: 'arn:aws:states:us-east-1:123456789012:execution:m:e',
    planId: 'p',
    planVersion: 1,
    planDigest: 'sha256:p',
    ...(step ? { task_id: step, task_name: `the ${step} step` } : {}),
    details,
    seq,
    prevHash: 'sha256:0',
    hash: `sha256:${seq}`,
  };
}

const opened = (link: string, approvers: string[], quorum = 1): GateOpened => ({
  link_id: link,
  expires_at: '2026-01-01T11:00:00.000Z',
  policy: { approvers, forbiddenApprovers: [], quorum },
  asks: `asks through ${link}`,
});

const LADDER = {
  remindAfterSeconds: 600,
  escalateTo: [{ approvers: ['ops@example.test'], quorum: 1 }],
};

describe('waitingGates', () => {
  it("follows a plan gate up its ladder: reminded, then the next group's, with its own link", () => {
    const records = [
      record('GATE_APPROVAL_REQUESTED', {
        plan_id: 'p',
        gate: 'plan',
        round: 1,
        opened: opened('first', ['dana'], 2),
      }),
      record('GATE_VOTE', { gate: 'plan', voter: 'dana', decision: 'APPROVE', digest: 'sha256:p' }),
    ];
    const [voted] = waitingGates(records);
    expect(voted?.votes).toEqual([{ by: 'dana' }]);
    expect(nextRung(voted as never, LADDER)).toEqual({ action: 'remind', at: '2026-01-01T10:10:00.000Z' });

    records.push(record('GATE_REMINDED', { gate: 'plan', level: 0 }));
    // The reminder reached nobody: the gate says so (the next group's gate, below, does not).
    records.push(
      record('GATE_NOTICE_UNDELIVERED', {
        gate: 'plan',
        link_id: 'first',
        stage: 'reminder',
        reason: 'no-channel',
        message: 'no channel is configured',
      }),
    );
    expect(waitingGates(records)[0]?.undelivered).toMatchObject({ reason: 'no-channel' });
    expect(nextRung(waitingGates(records)[0] as never, LADDER)).toEqual({
      action: 'escalate',
      at: '2026-01-01T11:00:00.000Z',
      approvers: ['ops@example.test'],
      quorum: 1,
    });

    records.push(
      record(
        'GATE_ESCALATED',
        { gate: 'plan', level: 1, approvers: ['ops'], opened: opened('second', ['ops']) },
        undefined,
        '2026-01-01T11:00:01.000Z',
      ),
    );
    const escalated = waitingGates(records);
    expect(escalated).toHaveLength(1);
    expect(escalated[0]).toMatchObject({ level: 1, round: 1, votes: [], policy: { approvers: ['ops'] } });
    expect(escalated[0]?.opened.link_id).toBe('second');
    expect(escalated[0]?.undelivered).toBeUndefined();
    // The last group was not reminded yet; once it is, only the rejection is left.
    records.push(record('GATE_REMINDED', { gate: 'plan', level: 1 }));
    expect(nextRung(waitingGates(records)[0] as never, LADDER)).toEqual({
      action: 'reject',
      at: '2026-01-01T11:00:00.000Z',
    });
    records.push(
      record('GATE_REJECTED', { gate: 'plan', approver: 'plangate-timeout', reason: 'timed out' }),
    );
    expect(waitingGates(records)).toEqual([]);
  });

  it('keeps a human step and an escalation apart, closes each by its answer, and forgets a modified vote', () => {
    const records = [
      record('TASK_STARTED', { attempt: 1, progress: '[Task 1/3] ▶', opened: opened('human', []) }, 'a'),
      record('RECOVERY_ESCALATION', { reason: 'logic failure', opened: opened('esc', ['sre']) }, 'b'),
      record(
        'GATE_APPROVAL_REQUESTED',
        { plan_id: 'p', gate: 'step', round: 1, opened: opened('s', ['x', 'y'], 2) },
        'c',
      ),
      record(
        'GATE_VOTE',
        { gate: 'step', voter: 'x', decision: 'APPROVE_WITH_MODIFICATIONS', digest: 'd' },
        'c',
      ),
      record(
        'GATE_PLAN_MODIFIED',
        { gate: 'step', by: 'x', from: 'd', to: 'e', revision: 1, skipSteps: [], argOverrides: {} },
        'c',
      ),
    ];
    const gates = waitingGates(records);
    expect(gates.map((g) => [g.kind, g.stepId, g.votes.length])).toEqual([
      ['human', 'a', 0],
      ['escalation', 'b', 0],
      ['step', 'c', 0],
    ]);
    expect(nextRung(gates[1] as never, undefined)).toEqual({
      action: 'fail',
      at: '2026-01-01T11:00:00.000Z',
    });
    // A step gate's ladder is unknown without the stored plan.
    expect(nextRung(gates[2] as never, undefined)).toBeUndefined();
    records.push(
      record(
        'RECOVERY_ESCALATION',
        { reason: 'logic failure', user_decision: 'RETRY', decided_by: 'person' },
        'b',
      ),
      record('HUMAN_TASK_ANSWERED', { decision: 'DONE', answered_by: 'ann' }, 'a'),
    );
    expect(waitingGates(records).map((g) => g.kind)).toEqual(['step']);
  });
});

describe('gateAsks', () => {
  const notice = (over: Partial<ApprovalNotice>): ApprovalNotice => ({
    approvalId: 'l',
    kind: 'plan',
    executionId: 'e',
    plan: { id: 'p', version: 2, digest: 'sha256:p' },
    round: 1,
    expiresAt: '2026-01-01T11:00:00.000Z',
    policy: { approvers: [], forbiddenApprovers: [], quorum: 1 },
    ...over,
  });

  it('says what each kind of gate asks, in one line, as its messages title it', () => {
    expect(gateAsks(notice({ summary: { objective: 'Ship\nthe report', steps: 2 } }))).toBe(
      'Plan approval requested: Ship the report',
    );
    expect(gateAsks(notice({ kind: 'step', stepId: 'deploy', description: 'Deploy it' }))).toBe(
      'Step approval requested: deploy (Deploy it)',
    );
    expect(
      gateAsks(
        notice({
          kind: 'escalation',
          stepId: 'fetch',
          failure: { failureClass: 'logic', phase: 'run', error: 'Plangate.ToolFailed', message: 'exit 1' },
        } as Partial<ApprovalNotice>),
      ),
    ).toBe('A step failed: retry, skip or abort?: fetch: logic (Plangate.ToolFailed): exit 1');
    expect(
      gateAsks(
        notice({ kind: 'human', stepId: 'key', human: { instructions: 'Rotate the key', outputs: [] } }),
      ),
    ).toBe('A step needs you to do it: key: Rotate the key');
  });

  it('never carries a credential a plan author wrote, and stays short', () => {
    const asks = gateAsks(
      notice({ summary: { objective: `Use AKIAIOSFODNN7EXAMPLE then ${'word '.repeat(200)}`, steps: 1 } }),
    );
    expect(asks).not.toContain('AKIAIOSFODNN7EXAMPLE');
    expect([...asks].length).toBeLessThanOrEqual(500);
    expect(asks.endsWith('…')).toBe(true);
  });
});

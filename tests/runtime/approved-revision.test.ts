/** The revision a plan gate approved, read back from the journal for the step gates after it. */
import { describe, expect, it } from 'vitest';
import { approvedRevisionOf } from '../../lib/runtime/gate/approved-revision.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';

let seq = 0;
const record = (event: string, details: Record<string, unknown>, taskId?: string): JournalRecord =>
  ({
    event,
    details,
    executionId: 'exec',
    planId: 'p',
    planVersion: 1,
    planDigest: 'sha256:base',
    timestamp: `2026-01-01T00:00:0${seq}Z`,
    seq: ++seq,
    prevHash: '',
    hash: '',
    ...(taskId ? { task_id: taskId } : {}),
  }) as unknown as JournalRecord;

const modifications = { skipSteps: ['docs'], argOverrides: { clean: { command: 'rm -rf ./victim' } } };

describe('approvedRevisionOf', () => {
  it('is the plan gate’s approved modifications, numbered and attributed by the revision that made them', () => {
    const events = [
      record('GATE_PLAN_MODIFIED', {
        gate: 'plan',
        by: 'bob',
        from: 'sha256:base',
        to: 'sha256:r1',
        revision: 1,
        ...modifications,
      }),
      record('GATE_APPROVED', {
        gate: 'plan',
        approver: 'alice',
        approvers: ['alice'],
        digest: 'sha256:r1',
        modifications,
      }),
      // A step gate's approval later on is not the plan gate's.
      record(
        'GATE_APPROVED',
        {
          gate: 'step',
          approver: 'alice',
          digest: 'sha256:r2',
          modifications: { skipSteps: [], argOverrides: {} },
        },
        'clean',
      ),
    ];
    expect(approvedRevisionOf(events)).toEqual({
      number: 1,
      digest: 'sha256:r1',
      by: 'bob',
      at: events[0]?.timestamp,
      ...modifications,
    });
  });

  it('is nothing when the plan was approved as submitted, or not yet', () => {
    expect(
      approvedRevisionOf([record('GATE_APPROVED', { gate: 'plan', digest: 'sha256:base' })]),
    ).toBeUndefined();
    expect(
      approvedRevisionOf([
        record('GATE_PLAN_MODIFIED', {
          gate: 'plan',
          by: 'bob',
          from: 'a',
          to: 'sha256:r1',
          revision: 1,
          ...modifications,
        }),
      ]),
    ).toBeUndefined();
  });
});

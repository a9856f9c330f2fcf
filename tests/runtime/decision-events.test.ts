/**
 * GATE_APPROVED names the groups each approver's verified request proved, so the step runner can
 * judge the gate's completion again at run time with the same groups (steps/covering-gate.ts).
 */
import { describe, expect, it } from 'vitest';
import { recordDecision } from '../../lib/runtime/gate/decision-events.ts';
import type { GateItem } from '../../lib/runtime/gate/gate-item.ts';
import type { Journal, JournalEventInput } from '../../lib/runtime/journal/journal.ts';
import { EVENT_DETAILS } from '../../lib/runtime/payloads/index.ts';

/** A journal that keeps what is appended (the one function under test writes through it). */
function keptJournal(): { journal: Journal; appended: JournalEventInput[] } {
  const appended: JournalEventInput[] = [];
  const journal = { append: async (event: JournalEventInput) => void appended.push(event) };
  return { journal: journal as unknown as Journal, appended };
}

const item = {
  kind: 'plan',
  executionId: 'exec-1',
  planId: 'p',
  planVersion: 1,
  planDigest: 'sha256:beef',
  createdAt: new Date(0).toISOString(),
} as unknown as GateItem;

describe('recordDecision', () => {
  it("keeps each vote's proven groups in GATE_APPROVED, and none when no request proved any", async () => {
    const { journal, appended } = keptJournal();
    const votes = [{ by: 'ann', groups: ['sre'] }, { by: 'sam' }];
    await recordDecision(journal, item, { decision: 'APPROVE' }, 'ann, sam', votes);
    await recordDecision(journal, item, { decision: 'APPROVE' }, 'sam', [{ by: 'sam', groups: [] }]);
    const [both, none] = appended.map((e) => EVENT_DETAILS.GATE_APPROVED.parse(e.details));
    expect(both?.approvers).toEqual(['ann', 'sam']);
    expect(both?.approver_groups).toEqual([{ approver: 'ann', groups: ['sre'] }]);
    expect(none?.approver_groups).toBeUndefined();
  });
});

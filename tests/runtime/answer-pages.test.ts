/** The pages around an answer: plain refusal titles, what happens next, the run's progress. */
import { describe, expect, it } from 'vitest';
import { outcomePage, progressPage, refusalTitle } from '../../lib/runtime/gate/answer-pages.ts';
import type { GateView } from '../../lib/runtime/gate/gate-item.ts';
import { ApprovalError } from '../../lib/runtime/gate/links.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { TIMEOUT_DECIDER } from '../../lib/runtime/payloads/index.ts';

const gate = (over: Partial<GateView> = {}): GateView => ({
  approvalId: 'g',
  kind: 'plan',
  executionId: 'e',
  planId: 'release',
  planVersion: 1,
  planDigest: 'sha256:aa',
  round: 1,
  createdAt: '2026-01-01T00:00:00.000Z',
  expiresAt: '2026-01-02T00:00:00.000Z',
  expiresAtEpoch: 1,
  status: 'pending',
  policy: { approvers: ['ana', 'ben', 'cy'], forbiddenApprovers: [], quorum: 2 },
  votes: [],
  submittedBy: 'cy',
  ...over,
});
const used = new ApprovalError('used', 'this gate was already answered');

describe('refusal titles', () => {
  it('says who answered and when, not "Not recorded"', () => {
    expect(
      refusalTitle(used, {
        decided: { decision: { decision: 'APPROVE', by: 'ana' }, decidedAt: '2026-01-01T10:15:30.000Z' },
      }),
    ).toEqual({
      title: 'Already answered by ana at 2026-01-01 10:15 UTC',
      message: 'The answer was APPROVE. There is nothing left to answer here.',
    });
    expect(
      refusalTitle(used, {
        decided: {
          decision: { decision: 'REJECT', by: TIMEOUT_DECIDER, reason: 'timed out' },
          decidedAt: '2026-01-01T10:15:30.000Z',
        },
      }).title,
    ).toBe('Expired');
  });

  it('names an expired, a forged and a superseded link plainly, with what to do', () => {
    expect(refusalTitle(new ApprovalError('expired', 'this approval link has expired'))).toEqual({
      title: 'Expired',
      message: expect.stringMatching(
        /^This approval link has expired\. If the plan should still run, ask whoever submitted it/,
      ),
    });
    for (const reason of ['forged', 'malformed', 'not-found'] as const)
      expect(refusalTitle(new ApprovalError(reason, 'x')).title).toBe('Not valid');
    expect(refusalTitle(used, { supersededBy: { version: 2, linkId: 'l.1.m' } })).toEqual({
      title: 'Superseded by v2',
      message: expect.stringContaining('Review v2 instead (link below)'),
    });
  });
});

describe('what happens next', () => {
  it('tells a quorum still short who it waits for', () => {
    const html = outcomePage(
      gate(),
      { status: 'pending', votes: 1 },
      { by: 'ana', progressHref: '/approvals/h/progress' },
    );
    expect(html).toContain('<h1>Your approval was recorded.</h1>');
    expect(html).toContain('1 more approval needed (quorum 2): waiting for ben. Nothing runs until then.');
    expect(html).toContain('<a href="/approvals/h/progress">');
  });

  it('says the plan runs, or will not start', () => {
    expect(
      outcomePage(
        gate(),
        { status: 'decided', decision: { decision: 'APPROVE', by: 'ana, ben' } },
        { by: 'ben' },
      ),
    ).toContain('The plan runs now.');
    expect(
      outcomePage(
        gate(),
        { status: 'decided', decision: { decision: 'REJECT', by: 'ana', reason: 'no' } },
        { by: 'ana' },
      ),
    ).toContain('The run was rejected and will not start.');
  });
});

describe('the progress page', () => {
  const record = (seq: number, event: JournalRecord['event'], details: Record<string, unknown>) =>
    ({ seq, event, details }) as unknown as JournalRecord;

  it('lists the progress lines and reloads itself until the run ends', () => {
    const running = progressPage(gate(), [
      record(1, 'TASK_COMPLETED', { progress: '[Task 1/2] ✓ <b>collect</b>' }),
    ]);
    expect(running).toContain('<meta http-equiv="refresh" content="5">');
    expect(running).toContain('<pre>[Task 1/2] ✓ &lt;b&gt;collect&lt;/b&gt;</pre>');
    const done = progressPage(gate(), [
      record(1, 'TASK_COMPLETED', { progress: '[Task 1/1] ✓ collect' }),
      record(2, 'EXECUTION_COMPLETE', { succeeded: true, summary: { completed: 1, failed: 0, skipped: 0 } }),
    ]);
    expect(done).not.toContain('http-equiv="refresh"');
    expect(done).toContain('Finished: the run succeeded.');
  });
});

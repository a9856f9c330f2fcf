/** Unit tests of the run session's pure parts: progress lines, typed gate answers, status summaries. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderChecklist } from '../../lib/plan/render.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { planFeedbackReviser } from '../../lib/run/approvals-desk.ts';
import { parseApproval, parseEscalation } from '../../lib/run/decisions.ts';
import { identityHint } from '../../lib/run/gate-desk.ts';
import { checklistStateOf, ProgressFormatter, seconds, summaryLine } from '../../lib/run/progress.ts';
import type { GateView } from '../../lib/runtime/gate/gate-item.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { summarise } from '../../lib/serve/store-reader.ts';

const outline = {
  id: 'p',
  steps: [
    { id: 'build', description: 'Build image' },
    { id: 'test', description: 'Run tests' },
  ],
};

let seq = 0;
function event(
  type: JournalRecord['event'],
  at: string,
  details: Record<string, unknown>,
  task_id?: string,
): JournalRecord {
  seq++;
  return {
    timestamp: at,
    event: type,
    executionId: 'arn:x',
    planId: 'p',
    planVersion: 1,
    planDigest: 'sha256:00',
    ...(task_id ? { task_id } : {}),
    details,
    seq,
    prevHash: '',
    hash: '',
  };
}

describe('progress lines (seed 000 form)', () => {
  it('prints [Task N/M] ✓ with the duration from TASK_STARTED to TASK_COMPLETED', () => {
    const f = new ProgressFormatter(outline);
    expect(
      f.lines(event('TASK_STARTED', '2024-01-01T00:00:00.000Z', { attempt: 1, progress: '' }, 'test')),
    ).toEqual([]);
    expect(f.running()).toHaveLength(1);
    const lines = f.lines(
      event(
        'TASK_COMPLETED',
        '2024-01-01T00:00:04.100Z',
        { evidence: { summary: 'exit 0' }, result: {}, progress: '' },
        'test',
      ),
    );
    expect(lines).toEqual(['[Task 2/2] ✓ Run tests (4.1s) — exit 0']);
    expect(f.running()).toEqual([]);
  });

  it('prints failures, recoveries and the final summary', () => {
    const f = new ProgressFormatter(outline);
    expect(
      f.lines(
        event(
          'TASK_FAILED',
          '2024-01-01T00:00:00Z',
          { error: 'x', error_message: 'exit 1', progress: '' },
          'test',
        ),
      ),
    ).toEqual(['[Task 2/2] ✗ Run tests: exit 1']);
    expect(
      f.lines(
        event(
          'RECOVERY_APPLIED',
          '2024-01-01T00:00:00Z',
          { recipe_name: 'retry_transient', outcome: 'success' },
          'test',
        ),
      ),
    ).toEqual(['RECOVERY_APPLIED: retry_transient → success']);
    expect(summaryLine(5, { summary: { completed: 5, failed: 0, skipped: 0 } })).toBe(
      '5/5 tasks completed. 0 failures.',
    );
    expect(
      summaryLine(3, { summary: { completed: 1, failed: 1, skipped: 1 }, error: 'Plangate.Aborted' }),
    ).toBe('1/3 tasks completed. 1 failure. 1 skipped or blocked. Stopped: Plangate.Aborted.');
  });

  it('says when a gate notice reached nobody, naming the gate', () => {
    const f = new ProgressFormatter(outline);
    const undelivered = (gate: string, task?: string) =>
      f.lines(
        event(
          'GATE_NOTICE_UNDELIVERED',
          '2024-01-01T00:00:00Z',
          { gate, link_id: 'l', reason: 'no-channel', message: 'no channel is configured' },
          task,
        ),
      );
    expect(undelivered('plan')).toEqual([
      'GATE_NOTICE_UNDELIVERED: plan gate: nobody was told (no channel is configured)',
    ]);
    expect(undelivered('human', 'test')).toEqual([
      'GATE_NOTICE_UNDELIVERED: human step "Run tests": nobody was told (no channel is configured)',
    ]);
  });

  it('formats any duration without throwing', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e6, max: 1e9 }), (ms) =>
        /^\d+(\.\d)?s$|^\d+m \d\ds$/.test(seconds(ms)),
      ),
    );
  });
});

describe('gate answers typed in the terminal', () => {
  const opts = { kind: 'plan' as const, stepIds: ['a', 'b'], by: 'ann' };
  it('reads approve / skip / ask / reject', () => {
    expect(parseApproval('yes', opts)).toEqual({ decision: 'APPROVE', by: 'ann' });
    expect(parseApproval('skip b', opts)).toEqual({
      decision: 'APPROVE_WITH_MODIFICATIONS',
      by: 'ann',
      skipSteps: ['b'],
      argOverrides: {},
    });
    expect(parseApproval('ask why b?', opts)).toEqual({
      decision: 'ASK_FOR_CLARIFICATION',
      by: 'ann',
      question: 'why b?',
    });
    expect(parseApproval('reject wrong approach', opts)).toEqual({
      decision: 'REJECT',
      by: 'ann',
      reason: 'wrong approach',
    });
  });
  it('reads `change <step> <arg> <value>` as a modification: JSON where it is JSON, else the text as typed', () => {
    const change = (line: string) => parseApproval(line, opts);
    expect(change('change b command rm -rf  ./x')).toEqual({
      decision: 'APPROVE_WITH_MODIFICATIONS',
      by: 'ann',
      skipSteps: [],
      argOverrides: { b: { command: 'rm -rf  ./x' } },
    });
    expect(change('change b command 123')).toMatchObject({ argOverrides: { b: { command: 123 } } });
    expect(change('change b env {"BASH_ENV": "./x"}')).toMatchObject({
      argOverrides: { b: { env: { BASH_ENV: './x' } } },
    });
    // An empty value is sent as such: the gate refuses it, located.
    expect(change('change b command')).toMatchObject({ argOverrides: { b: { command: '' } } });
    expect(change('change zz command ls')).toMatch(/no step "zz"/);
    expect(change('change b')).toMatch(/change <step> <arg> <value>/);
  });
  it('refuses unknown steps, skips at a step gate, and anything else, saying why', () => {
    expect(parseApproval('skip zz', opts)).toMatch(/no step "zz"/);
    expect(parseApproval('skip a', { ...opts, kind: 'step' })).toMatch(/only the plan gate/);
    expect(parseApproval('maybe', opts)).toMatch(/not an answer/);
    expect(parseEscalation('retry', 'ann')).toEqual({ decision: 'RETRY', by: 'ann' });
    expect(parseEscalation('later', 'ann')).toMatch(/retry, skip or abort/);
  });
  it('never throws on any line', () => {
    fc.assert(
      fc.property(fc.string(), (line) => {
        parseApproval(line, opts);
        parseEscalation(line, 'ann');
      }),
    );
  });
});

describe('status from the journal alone', () => {
  it('says WAITING at a gate, UNFINISHED when nobody is attached, and SUCCEEDED at the end', () => {
    const created = event('PLAN_CREATED', '2024-01-01T00:00:00Z', { task_count: 2, dependencies: {} });
    const asked = event('GATE_APPROVAL_REQUESTED', '2024-01-01T00:00:01Z', {
      plan_id: 'p',
      gate: 'plan',
      round: 1,
    });
    const done = event('TASK_COMPLETED', '2024-01-01T00:00:02Z', {}, 'build');
    const end = event('EXECUTION_COMPLETE', '2024-01-01T00:00:03Z', { succeeded: true, summary: {} });
    expect(summarise([created, asked], false)?.status).toBe('WAITING');
    expect(summarise([created, asked, done], false)).toMatchObject({
      status: 'UNFINISHED',
      completed: 1,
      total: 2,
    });
    expect(summarise([created, asked, done], true)?.status).toBe('RUNNING');
    expect(summarise([created, asked, done, end], false)?.status).toBe('SUCCEEDED');
    expect(summarise([], false)).toBeUndefined();
  });
});

describe("the page's checklist, from the journal", () => {
  const plan = PlanSchema.parse({
    id: 'p',
    objective: 'Build and test',
    sizePolicy: { minSteps: 1 },
    steps: [
      {
        id: 'build',
        description: 'Build image',
        tool: 'echo',
        args: { message: 'b' },
        contract: { kind: 'assert', expression: 'true' },
      },
      {
        id: 'test',
        description: 'Run tests',
        dependsOn: ['build'],
        requiresApproval: true,
        tool: 'echo',
        args: { message: 't' },
        contract: { kind: 'assert', expression: 'true' },
      },
    ],
  });

  it('marks done steps with their evidence and a step waiting for its gate as pending, not in trouble', () => {
    const events = [
      event('TASK_STARTED', '2024-01-01T00:00:00Z', { attempt: 1, progress: '' }, 'build'),
      event(
        'TASK_COMPLETED',
        '2024-01-01T00:00:01Z',
        { evidence: { summary: 'exit 0' }, progress: '' },
        'build',
      ),
      event('GATE_APPROVAL_REQUESTED', '2024-01-01T00:00:02Z', { gate: 'step', round: 1 }, 'test'),
    ];
    const text = renderChecklist(plan, checklistStateOf(plan, events));
    expect(text).toContain('1. [x] Build image');
    expect(text).toContain('   evidence: exit 0');
    expect(text).toContain('2. [ ] Run tests');
    expect(text).toContain('   notes: awaiting approval');
  });
});

describe('who may answer, said before trying', () => {
  const gate = (policy: { approvers?: string[]; forbiddenApprovers?: string[] }, submittedBy?: string) => ({
    kind: 'plan' as const,
    policy: { approvers: policy.approvers ?? [], forbiddenApprovers: policy.forbiddenApprovers ?? [] },
    ...(submittedBy ? { submittedBy } : {}),
  });

  it('names the approvers and the documented way to answer as one of them', () => {
    expect(identityHint(gate({ approvers: ['alice'] }), 'bob')).toBe(
      'alice may approve this gate; you are bob: rerun with --as alice',
    );
    expect(identityHint(gate({ approvers: ['alice', 'carol'] }), 'bob')).toMatch(
      /^alice or carol may approve/,
    );
    expect(identityHint(gate({ approvers: ['alice'] }), 'alice')).toBeUndefined();
  });

  it('tells the submitter they may not approve, and a forbidden approver that they may not answer', () => {
    expect(identityHint(gate({}, 'root'), 'root')).toContain(
      'submitted this plan, so you may not approve it',
    );
    expect(identityHint({ ...gate({}, 'root'), kind: 'escalation' }, 'root')).toBeUndefined();
    expect(identityHint(gate({ forbiddenApprovers: ['mallory'] }), 'mallory')).toContain('may not answer');
  });
});

describe('a planned plan sent back to its planner', () => {
  const planGate = { kind: 'plan' } as GateView;

  it('records a question at the plan gate as the rejection that ends this version, and tells once recorded', () => {
    const told: string[] = [];
    const revise = planFeedbackReviser((text) => told.push(text));
    const revised = revise(planGate, { decision: 'ASK_FOR_CLARIFICATION', question: 'Which port?' });
    expect(revised?.decision).toEqual({ decision: 'REJECT', reason: 'clarification requested: Which port?' });
    expect(told).toEqual([]);
    revised?.onRecorded();
    expect(told).toEqual(['Which port?']);
    expect(revise(planGate, { decision: 'APPROVE' })).toBeUndefined();
    expect(revise({ kind: 'step' } as GateView, { decision: 'REJECT', reason: 'no' })).toBeUndefined();
  });
});

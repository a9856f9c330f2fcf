/**
 * Agent steps and marks on what they describe, on the channels the e2e test does not drive
 * (the email's text and HTML parts, Slack): an agent step's run facts and its "effect unknown";
 * a destructive rollback marked under the rollback, never at the step's head; what the gate adds
 * of who runs an agent; a revision of an agent tool's command; a policy denial in the email.
 */
import { describe, expect, it } from 'vitest';
import { loadPlan } from '../../lib/plan/load.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { withAgentRunners } from '../../lib/runtime/gate/agent-runners.ts';
import { approvalView } from '../../lib/runtime/gate/approval-view.ts';
import { revisedStep } from '../../lib/runtime/gate/revised-view.ts';
import { approvalMessage } from '../../lib/runtime/notify/message.ts';
import type { ApprovalNotice, ApprovalView, GateRequest } from '../../lib/runtime/payloads/index.ts';
import { policyDenial, policyDenialOf } from '../../lib/runtime/recovery/policy-denial.ts';

const plan = PlanSchema.parse({
  id: 'agent-marks',
  objective: 'An agent step and a step with a destructive rollback',
  sizePolicy: { minSteps: 1 },
  budget: { tokens: 90_000, costUsd: 3, wallClockSeconds: 600 },
  steps: [
    {
      id: 'make',
      description: 'Create out.txt',
      tool: 'shell',
      args: { command: 'echo made > out.txt' },
      contract: { kind: 'command', command: 'test -f out.txt' },
      rollback: { tool: 'shell', args: { command: 'rm -rf out.txt' } },
    },
    {
      id: 'fix',
      description: 'Fix the bug',
      dependsOn: ['make'],
      target: 'coder',
      task: 'Fix the bug in out.txt.',
      timeoutSeconds: 1200,
      contract: { kind: 'command', command: 'grep -q fixed out.txt' },
    },
    {
      id: 'review',
      description: 'Review the fix',
      dependsOn: ['fix'],
      tool: 'agent',
      task: 'Review out.txt.',
      args: { command: 'claude -p' },
      contract: { kind: 'command', command: 'test -f out.txt' },
    },
  ],
});

const notice = (view: ApprovalView, over: Partial<ApprovalNotice> = {}): ApprovalNotice => ({
  approvalId: 'link-id',
  kind: 'plan',
  executionId: 'arn:aws:states:us-east-1:123456789012:execution:agent-marks:run-1',
  plan: { id: plan.id, version: 1, digest: 'sha256:feed' },
  summary: { objective: plan.objective, steps: plan.steps.length, view },
  round: 1,
  expiresAt: '2030-01-02T13:00:00.000Z',
  policy: { approvers: [], forbiddenApprovers: [], quorum: 1 },
  ...over,
});

function slackText(message: ReturnType<typeof approvalMessage>): string {
  return message.slackBlocks
    .map((b) => (b.text as { text?: string } | undefined)?.text ?? '')
    .join('\n')
    .replace(/&gt;/g, '>')
    .replace(/&lt;/g, '<')
    .replace(/&amp;/g, '&');
}

describe('an agent step at the gate', () => {
  const view = approvalView(plan);
  const fix = view.steps[1];
  const review = view.steps[2];

  it('says who runs it, its time limit and budget, and that its effect is unknown; the plan knows no command for a worker', () => {
    expect(fix?.agent).toEqual({
      runsOn: 'worker',
      runs: 'the worker taking target coder (plangate worker --target coder: its --agent-command, in its --workspace)',
      reach: expect.stringMatching(/^not known at this gate: /),
      // The step's 1200 s, cut to the plan's 600 s of wall clock.
      timeLimitSeconds: 600,
      budget: { tokens: 90_000, costUsd: 3 },
    });
    expect(fix?.risks.unknown).toEqual([expect.stringMatching(/^agent \S+ decides at run time/)]);
    // An agent tool step names its own command.
    expect(review?.agent).toMatchObject({ runsOn: 'runner', command: 'claude -p' });
    expect(view.steps[0]?.agent).toBeUndefined();
    expect(view.steps[0]?.risks.unknown ?? []).not.toContainEqual(
      expect.stringMatching(/decides at run time/),
    );
  });

  it('shows all of it in the email (text and HTML) and in Slack', () => {
    const message = approvalMessage(notice(view), 'https://approvals.example.test');
    for (const text of [message.text, slackText(message)]) {
      expect(text).toContain('effect unknown: agent coder decides at run time what it runs');
      expect(text).toContain('agent run by: the worker taking target coder');
      expect(text).toContain('time limit: 600 s');
      expect(text).toContain('budget: $3 cost, 90000 tokens');
      expect(text).toContain('may reach: not known at this gate: ');
      expect(text).toContain('claude -p');
    }
    expect(message.html).toContain('<dt>agent command</dt><dd><pre><code>claude -p</code></pre></dd>');
    expect(message.html).toMatch(/<article class="pg-step pg-risky" id="step-fix">/);
  });

  it('is completed by what the host knows of its runner, the step’s own command kept', () => {
    const request = {
      kind: 'plan',
      summary: { objective: plan.objective, steps: 3, view },
    } as unknown as GateRequest;
    const completed = withAgentRunners(request, (target, runsOn) => ({
      runs: `${runsOn}${target ? ` of ${target}` : ''}`,
      command: 'my-agent --yes',
      workspace: '/work/repo',
    }));
    const steps = completed.summary?.view?.steps ?? [];
    expect(steps[1]?.agent).toMatchObject({
      runs: 'worker of coder',
      command: 'my-agent --yes',
      workspace: '/work/repo',
    });
    expect(steps[2]?.agent).toMatchObject({ runs: 'runner', command: 'claude -p' });
    expect(steps[0]).toBe(view.steps[0]);
  });

  it('shows a revision’s agent command, not the one it replaced', () => {
    const revised = revisedStep(review as NonNullable<typeof review>, {
      number: 1,
      digest: 'sha256:rev',
      skipSteps: [],
      argOverrides: { review: { command: 'other-agent' } },
      by: 'bob',
      at: '2030-01-01T00:00:00.000Z',
    });
    expect(revised.agent?.command).toBe('other-agent');
  });
});

describe('marks on what they describe', () => {
  it('rollback.yaml: each step harmless at its head, its destructive rollback marked under the rollback, in the email and Slack', async () => {
    const loaded = await loadPlan('examples/scenarios/rollback.yaml');
    if (!loaded.plan) throw new Error('rollback.yaml does not load');
    const message = approvalMessage(notice(approvalView(loaded.plan)), 'https://approvals.example.test');
    const text = message.text;
    const one = text.slice(text.indexOf('1. one:'), text.indexOf('2. two:'));
    expect(one).not.toMatch(/^ {3}!! destructive/m);
    expect(one).toMatch(
      /rollback \(shell\) \(command\):\n\s+rm one\.txt[^\n]*\n\s+!! destructive rollback: /,
    );
    // Its own call writes one.txt (effect unknown: not proven read-only), never "destructive".
    const card = message.html.slice(message.html.indexOf('id="step-one"'));
    expect(card.slice(0, card.indexOf('Rollback'))).not.toContain('destructive');
    const slack = slackText(message);
    const slackOne = slack.slice(slack.indexOf('*1. one*'), slack.indexOf('*2. two*'));
    expect(slackOne.slice(0, slackOne.indexOf('Rollback'))).not.toContain(':warning: *destructive');
    expect(slackOne.slice(slackOne.indexOf('Rollback'))).toContain(':warning: *destructive rollback: ');
  });
});

describe('a policy denial', () => {
  const details = {
    action: 'RunStep' as const,
    principal: 'carol',
    resource: 'Step "p@v1#publish"',
    decision: 'deny' as const,
    policies: ['no-publishing'],
    outcome: 'the step did not run',
    reasons: [{ policy: 'no-publishing', reason: "publishing is the release team's" }],
  };
  const event = (event: string, extra: Record<string, unknown> = {}) =>
    ({ event, task_id: 'publish', details: {}, ...extra }) as never;

  it('is the attempt’s: a denial before the latest start is not this failure’s', () => {
    const denied = event('POLICY_DECISION', { details: details });
    expect(
      policyDenialOf([event('TASK_STARTED'), denied, event('FAILURE_DETECTED')], 'publish', '/p'),
    ).toEqual(policyDenial(details, '/p'));
    expect(
      policyDenialOf([event('TASK_STARTED'), denied, event('TASK_STARTED')], 'publish', '/p'),
    ).toBeUndefined();
    expect(policyDenialOf([event('TASK_STARTED'), denied], 'other', '/p')).toBeUndefined();
  });

  it('names the policy and what would allow it, never credentials, in the email', () => {
    const denial = policyDenial(details, '/etc/plangate/policies');
    expect(denial.advice).toContain("no-publishing: publishing is the release team's");
    expect(denial.advice).toContain('change or lift no-publishing');
    expect(denial.advice).toContain('/etc/plangate/policies');
    expect(denial.advice).not.toMatch(/credential(s)? (out of band|before)/);
    const message = approvalMessage(
      notice(approvalView(plan), {
        kind: 'escalation',
        summary: undefined,
        stepId: 'publish',
        failure: {
          failureClass: 'permission',
          error: 'Plangate.Permission',
          message: 'policy denies carol RunStep',
          phase: 'run',
          policyDenial: denial,
        },
      }),
      'https://approvals.example.test',
    );
    expect(message.text).toContain(`Denied by policy: ${denial.advice}`);
  });
});

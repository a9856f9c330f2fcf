/**
 * Values shown where they are approved, one function at a time: the plan's context in the view
 * (its marks, cut values) and in the digest; a rollback filled in for the escalation (secrets by
 * reference, values not produced, marks of the filled call and of each value); the approval
 * message (email text and HTML, Slack) rendering both; and what POLICY_DECISION records.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planDigest } from '../../lib/plan/digest.ts';
import { valueReach } from '../../lib/plan/risks.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { decisionDetails } from '../../lib/policy/decisions.ts';
import { abortRollback } from '../../lib/runtime/gate/abort-rollbacks.ts';
import { approvalView, CONTEXT_VALUE_LIMIT } from '../../lib/runtime/gate/approval-view.ts';
import { approvalMessage } from '../../lib/runtime/notify/message.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';

const planWith = (context: Record<string, unknown>) =>
  PlanSchema.parse({
    id: 'shown-values',
    objective: 'Show the values',
    sizePolicy: { minSteps: 1 },
    context,
    steps: [
      {
        id: 'mk',
        description: 'Make it',
        tool: 'shell',
        args: { command: 'mkdir -p "${context.dir}"' },
        contract: { kind: 'command', command: 'test -d "${context.dir}"' },
      },
    ],
  });

const notice = (over: Partial<ApprovalNotice>): ApprovalNotice => ({
  approvalId: 'link-id',
  kind: 'plan',
  executionId: 'arn:aws:states:us-east-1:123456789012:execution:shown:run-1',
  plan: { id: 'shown-values', version: 1, digest: 'sha256:feed' },
  round: 1,
  expiresAt: '2030-01-02T13:00:00.000Z',
  policy: { approvers: [], forbiddenApprovers: [], quorum: 1 },
  ...over,
});

describe('the context in the approval view and the digest', () => {
  it('is part of the digest: any change of a context value is a new plan', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        fc.pre(JSON.stringify(a) !== JSON.stringify(b));
        expect(planDigest(planWith({ dir: a }))).not.toBe(planDigest(planWith({ dir: b })));
      }),
      { numRuns: 200 },
    );
  });

  it('lists each key with its value as text and its marks, nested paths and cut values included', () => {
    const long = 'x'.repeat(CONTEXT_VALUE_LIMIT + 10);
    const view = approvalView(
      planWith({
        dir: '/etc',
        nested: { paths: ['ok', '~/.ssh'] },
        n: 3,
        hidden: 'a\u2066b',
        long: `${long}/../../..`,
      }),
    );
    expect(view.context).toEqual([
      { key: 'dir', value: '/etc', outsideWorkspace: ['context.dir: uses /etc, outside the workspace'] },
      {
        key: 'nested',
        value: '{"paths":["ok","~/.ssh"]}',
        outsideWorkspace: ['context.nested.paths[1]: uses ~/.ssh, in a home directory outside the workspace'],
      },
      { key: 'n', value: '3' },
      { key: 'hidden', value: 'a\u2066b' },
      {
        key: 'long',
        value: `${long.slice(0, CONTEXT_VALUE_LIMIT - 1)}…`,
        cut: true,
        outsideWorkspace: [`context.long: uses ${long}/../../.., above the workspace`],
      },
    ]);
    expect(approvalView(planWith({})).context).toBeUndefined();
  });

  it('marks a value that climbs, is absolute or is a home directory; not a plain word', () => {
    expect(valueReach('v', '../../victim')).toEqual(['v: uses ../../victim, above the workspace']);
    expect(valueReach('v', '~')).toEqual(['v: uses ~, in a home directory outside the workspace']);
    expect(valueReach('v', 'release-42')).toEqual([]);
    expect(valueReach('v', 'a/../b')).toEqual([]);
  });
});

describe('a rollback as the escalation shows it', () => {
  const scope = {
    steps: { mk: { dir: '../../victim', n: 2 } },
    context: { label: 'x', deep: { where: '/srv' } },
  };

  it('fills step outputs and context, keeps a secret as its reference and says what is not produced', () => {
    const shown = abortRollback(
      'mk',
      JSON.stringify({
        tool: 'shell',
        args: {
          command:
            'rm -rf "${steps.mk.dir}" && echo ${steps.mk.n} ${context.label} ${secrets.tok} ${steps.mk.gone}',
        },
      }),
      scope,
    );
    expect(shown.filled).toEqual({
      form: 'command',
      text: 'rm -rf "../../victim" && echo 2 x ${secrets.tok} ${steps.mk.gone}',
    });
    expect(shown.call?.text).toContain('${steps.mk.dir}');
    expect(shown.values).toEqual([
      { raw: '${steps.mk.dir}', value: '../../victim' },
      { raw: '${steps.mk.n}', value: '2' },
      { raw: '${context.label}', value: 'x' },
      { raw: '${secrets.tok}', secret: true },
      { raw: '${steps.mk.gone}' },
    ]);
    expect(shown.risks?.destructive.join(' ')).toContain('rm -rf "../../victim"');
    expect(shown.risks?.outsideWorkspace).toHaveLength(1);
    expect(shown.risks?.outsideWorkspace[0]).toContain('../../victim');
  });

  it('marks a value outside the workspace that the command analysis cannot see (an http call, a piped word)', () => {
    const http = abortRollback(
      'mk',
      JSON.stringify({
        tool: 'http',
        args: { method: 'POST', url: 'https://x.test/undo', body: '${context.deep.where}' },
      }),
      scope,
    );
    expect(http.filled?.text).toContain('"body":"/srv"');
    expect(http.risks?.outsideWorkspace).toEqual(['${context.deep.where}: uses /srv, outside the workspace']);
    const piped = abortRollback(
      'mk',
      JSON.stringify({ tool: 'shell', args: { command: 'printf %s "${steps.mk.dir}" | xargs rm -rf' } }),
      scope,
    );
    expect(piped.risks?.outsideWorkspace).toEqual([
      '${steps.mk.dir}: uses ../../victim, above the workspace',
    ]);
  });

  it('shows a record it cannot read as recorded, with nothing filled', () => {
    expect(abortRollback('mk', '{"tool":"shell","args":{"command":"rm -rf x…', scope)).toEqual({
      stepId: 'mk',
      tool: 'unknown',
      call: { form: 'json', text: '{"tool":"shell","args":{"command":"rm -rf x…' },
    });
  });
});

describe('the approval message renders both (email text and HTML, Slack)', () => {
  const rollback = abortRollback(
    'mk',
    JSON.stringify({ tool: 'shell', args: { command: 'rm -rf "${steps.mk.dir}"' } }),
    { steps: { mk: { dir: '../../victim\u202e' } }, context: {} },
  );

  it('an escalation: the filled rollback, its marks and values, control characters escaped', () => {
    const message = approvalMessage(
      notice({
        kind: 'escalation',
        stepId: 'fail',
        failure: { failureClass: 'logic', error: 'Plangate.ContractFailed', message: 'no', phase: 'check' },
        abortRollsBack: [rollback],
      }),
      'http://127.0.0.1:1',
    );
    expect(message.text).toContain('rm -rf "../../victim⟨U+202E RLO⟩"');
    expect(message.html).toContain(
      'rm -rf &quot;../../victim<span class="pg-char">⟨U+202E RLO⟩</span>&quot;',
    );
    for (const part of [message.text, message.html]) {
      expect(part).toContain('reaches outside the workspace');
      expect(part).not.toContain('\u202e');
    }
    expect(message.text).toContain('${steps.mk.dir} = ../../victim⟨U+202E RLO⟩');
    const slack = JSON.stringify(message.slackBlocks);
    expect(slack).toContain('rm -rf \\"../../victim');
    expect(slack).toContain('reaches outside the workspace');
    expect(slack).not.toContain('\u202e');
  });

  it('a plan gate: the context with its marks', () => {
    const view = approvalView(planWith({ dir: '../out' }));
    const message = approvalMessage(
      notice({ summary: { objective: 'Show the values', steps: 1, view } }),
      'http://127.0.0.1:1',
    );
    expect(message.text).toContain('- dir = ../out');
    expect(message.text).toContain(
      '!! reaches outside the workspace: context.dir: uses ../out, above the workspace',
    );
    expect(message.html).toContain('<section class="pg-context"');
    expect(message.html).toContain('context.dir: uses ../out, above the workspace');
    expect(JSON.stringify(message.slackBlocks)).toContain('context.dir: uses ../out, above the workspace');
  });
});

describe('POLICY_DECISION', () => {
  const request = {
    principal: { name: 'alice' },
    action: 'RunStep' as const,
    resource: { type: 'Step', id: 'p@v1#say', attrs: {} },
  };

  it('names the call, the policies, what they say and the decision in a sentence', () => {
    const details = decisionDetails(
      request,
      {
        decision: 'deny',
        determiningPolicies: ['no-x'],
        reasons: [{ policy: 'no-x', reason: 'x is quarantined', annotations: { owner: 'sre' } }],
        errors: [],
      },
      'the step did not run',
      { tool: 'shell', args: { command: `echo ${'y'.repeat(5000)}` } },
    );
    expect(details).toMatchObject({
      policies: ['no-x'],
      reasons: [{ policy: 'no-x', reason: 'x is quarantined', annotations: { owner: 'sre' } }],
      reason: 'policy denies alice RunStep on Step "p@v1#say" (forbidden by no-x: x is quarantined)',
      call: { tool: 'shell' },
    });
    expect(String(details.call?.args.command).length).toBe(4096);
  });

  it('says why when nothing permits it, and who permitted an allow', () => {
    expect(
      decisionDetails(request, { decision: 'deny', determiningPolicies: [], errors: [] }, 'refused').reason,
    ).toBe('policy denies alice RunStep on Step "p@v1#say" (no policy permits it)');
    expect(
      decisionDetails(request, { decision: 'allow', determiningPolicies: ['ok'], errors: [] }, 'done').reason,
    ).toBe('policy permits alice RunStep on Step "p@v1#say" (permitted by ok)');
  });
});

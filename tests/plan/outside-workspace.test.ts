/**
 * Contracts and rollbacks that reach outside the workspace (issue 22): the shell analysis finds
 * the places (absolute paths, the home directory, `..`), the plan's risks carry them per place,
 * and every channel of the gate marks them as a warning, beside the destructive marks and not as
 * one of them.
 */
import { describe, expect, it } from 'vitest';
import { planRisks } from '../../lib/plan/risks.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { analyzeShell } from '../../lib/plan/shell/index.ts';
import { approvalView } from '../../lib/runtime/gate/approval-view.ts';
import { shownOfNotice } from '../../lib/runtime/gate/shown-gate.ts';
import { stepCardsHtml } from '../../lib/runtime/gate/view-html.ts';
import { gateText } from '../../lib/runtime/gate/view-text.ts';
import { gateViewBlocks } from '../../lib/runtime/notify/view-slack.ts';

const outside = (command: string) => analyzeShell(command).outsideWorkspace.map((f) => f.reason);

describe('what reaches outside the workspace', () => {
  it.each([
    ['cat /etc/passwd', 'uses /etc/passwd, outside the workspace'],
    ['grep -q root /etc/passwd', 'uses /etc/passwd, outside the workspace'],
    ['wc -l < /etc/hosts', 'uses /etc/hosts, outside the workspace'],
    ['cd .. && ls', 'uses .., above the workspace'],
    ['git -C ../other status', 'uses ../other, above the workspace'],
    ['cat ~/.ssh/id_rsa', 'uses ~/.ssh/id_rsa, in a home directory outside the workspace'],
    ['ls "$HOME/.aws"', 'uses the home directory, outside the workspace'],
    ['cd', '`cd` alone goes to the home directory, outside the workspace'],
    ['bash -c "cat /etc/shadow"', 'uses /etc/shadow, outside the workspace'],
    ['sudo cat /etc/passwd', 'uses /etc/passwd, outside the workspace'],
    ['curl -s file:///etc/hosts', 'uses /etc/hosts, outside the workspace'],
    ['diff --from-file=/etc/hosts hosts', 'uses /etc/hosts, outside the workspace'],
  ])('%s', (command, reason) => {
    expect(outside(command)).toEqual([reason]);
  });

  it.each([
    'test -f docs/analysis-423.md && test "$(wc -l < docs/analysis-423.md)" -gt 10',
    "sed -n '/^# config:begin/,/^# config:end/p' src/app.py",
    "grep -rn '/api/v1' src/",
    'echo hi > /dev/null 2>&1',
    'echo /etc/passwd',
    '/usr/bin/env python3 check.py',
    'cd src && ls ./sub/../x',
    'grep -qx "${steps.pick.version}" version.txt',
  ])('not: %s', (command) => {
    expect(outside(command)).toEqual([]);
  });

  it('is not destructive in itself', () => {
    expect(analyzeShell('cat /etc/passwd').destructive).toEqual([]);
  });
});

const plan = PlanSchema.parse({
  id: 'reach',
  objective: 'Check a file and undo it',
  sizePolicy: { minSteps: 2 },
  steps: [
    {
      id: 'write',
      description: 'Write the note',
      tool: 'shell',
      args: { command: 'echo hi > note.txt' },
      contract: { kind: 'command', command: 'grep -q root /etc/passwd && test -f note.txt' },
      rollback: {
        tool: 'shell',
        args: { command: 'cd .. && rm -f note.txt' },
        contract: { kind: 'command', command: 'test ! -e ~/note.txt' },
      },
    },
    {
      id: 'read',
      description: 'Read the note',
      dependsOn: ['write'],
      tool: 'shell',
      args: { command: 'cat note.txt' },
      contract: { kind: 'command', command: 'test -s note.txt' },
    },
  ],
});

describe('the gate marks it', () => {
  it('per place, in the plan risks and the approval view', () => {
    expect(planRisks(plan).steps.write?.outsideWorkspace).toEqual([
      'contract: `grep -q root /etc/passwd` uses /etc/passwd, outside the workspace',
      'rollback: `cd ..` uses .., above the workspace',
      'rollback contract: `test ! -e ~/note.txt` uses ~/note.txt, in a home directory outside the workspace',
    ]);
    const view = approvalView(plan);
    expect(view.steps[0]?.risks.outsideWorkspace).toHaveLength(3);
    // A step that stays inside carries no such mark (and its view no such field).
    expect(view.steps[1]?.risks).not.toHaveProperty('outsideWorkspace');
  });

  it('as a warning on every channel: terminal and email text, the page and email HTML, Slack', () => {
    const view = approvalView(plan);
    const shown = shownOfNotice({
      approvalId: 'link-id',
      kind: 'plan',
      executionId: 'arn:aws:states:us-east-1:123456789012:execution:reach:run-1',
      plan: { id: plan.id, version: 1, digest: 'sha256:feed' },
      summary: { objective: plan.objective, steps: plan.steps.length, view },
      round: 1,
      expiresAt: '2030-01-02T13:00:00.000Z',
      policy: { approvers: ['ana'], forbiddenApprovers: [], quorum: 1 },
      votes: [],
    });
    const text = gateText(shown, { timeZone: 'UTC', now: new Date('2030-01-01T14:00:00Z') });
    expect(text).toContain(
      '!! reaches outside the workspace: contract: `grep -q root /etc/passwd` uses /etc/passwd, outside the workspace; rollback: `cd ..` uses .., above the workspace',
    );
    // The rollback deletes (destructive); reaching outside is its own mark, not called destructive.
    expect(text).toMatch(/!! destructive rollback: `rm -f note.txt`/);
    expect(text).not.toMatch(/destructive[^\n]*etc\/passwd/);

    const html = stepCardsHtml(view, undefined);
    expect(html).toContain(
      '<li class="pg-risk">reaches outside the workspace: contract: `grep -q root /etc/passwd` uses /etc/passwd, outside the workspace;',
    );
    expect(html).toContain('pg-risky');

    const slack = JSON.stringify(gateViewBlocks(shown, 'https://example.com/a', 50).blocks);
    expect(slack).toContain(':warning: *reaches outside the workspace: contract:');
  });
});

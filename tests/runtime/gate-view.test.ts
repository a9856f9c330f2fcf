/**
 * One gate view, every channel: the text (terminal, email), the HTML cards (email, page), the
 * Slack blocks (within Slack's limits, saying what they cut) and the deadline, each escaped for
 * its medium, from the same view the compiler builds.
 */
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../lib/launch/openapi.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { planFacts } from '../../lib/policy/entities.ts';
import { approvalView, fitApprovalView } from '../../lib/runtime/gate/approval-view.ts';
import { deadlineText, type ShownGate, shownOfNotice } from '../../lib/runtime/gate/shown-gate.ts';
import { gateViewHtml, stepCardsHtml } from '../../lib/runtime/gate/view-html.ts';
import { gateText } from '../../lib/runtime/gate/view-text.ts';
import { approvalMessage } from '../../lib/runtime/notify/message.ts';
import { SLACK_LIMITS } from '../../lib/runtime/notify/view-slack.ts';
import type { ApprovalNotice, StepGateView } from '../../lib/runtime/payloads/index.ts';

const HOSTILE =
  'printf "\u001b[2J\u001b[31mall fine\u001b[0m\r" <script>alert(1)</script> ``` <!channel> & done';

const plan = PlanSchema.parse({
  id: 'render-test',
  objective: 'Render every part',
  secrets: [{ name: 'api_token', source: 'env', ref: 'SOME_VARIABLE' }],
  steps: [
    {
      id: 'make-dir',
      description: 'Create the directory',
      tool: 'shell',
      args: { command: 'mkdir -p out && find out -delete' },
      outputs: ['dir'],
      contract: { kind: 'command', command: 'test ! -e out' },
      rollback: { tool: 'shell', args: { command: 'rmdir out-rollback' } },
    },
    {
      id: 'cleanup',
      description: 'Remove the scratch directory tmpdir recursively',
      dependsOn: ['make-dir'],
      tool: 'shell',
      args: {
        command: 'rm -rf ./tmpdir',
        env: { WHERE: '${steps.make-dir.dir}', TOKEN: '${secrets.api_token}' },
      },
      requiresApproval: true,
    },
    { id: 'hostile', description: `Looks harmless \u001b[8m`, tool: 'shell', args: { command: HOSTILE } },
  ],
  postconditions: [
    {
      id: 'no-tmpdir',
      description: 'tmpdir is gone',
      contract: { kind: 'command', command: 'test ! -d tmpdir' },
    },
  ],
});
const view = approvalView(plan);

const notice = (over: Partial<ApprovalNotice> = {}): ApprovalNotice => ({
  approvalId: 'link-id',
  kind: 'plan',
  executionId: 'arn:aws:states:us-east-1:123456789012:execution:render:run-1',
  plan: { id: plan.id, version: 1, digest: 'sha256:feed' },
  summary: { objective: plan.objective, steps: plan.steps.length, view },
  round: 1,
  expiresAt: '2030-01-02T13:00:00.000Z',
  policy: { approvers: ['ana', 'ben'], forbiddenApprovers: ['mallory'], quorum: 2 },
  submittedBy: 'carol',
  votes: [{ by: 'ana', decision: 'APPROVE' }],
  ...over,
});

const STEP_GATE: StepGateView = {
  step: view.steps[1] as StepGateView['step'],
  completed: [
    {
      id: 'make-dir',
      progress: '[Task 1/3] ✔ Create the directory',
      evidence: { kind: 'command', passed: true, summary: 'exit 0', excerpt: 'made it' },
    },
  ],
  consumes: [{ raw: '${steps.make-dir.dir}', step: 'make-dir', output: 'dir', value: '"tmpdir"' }],
};

describe('the text view (terminal, email text)', () => {
  const text = gateText(shownOfNotice(notice()), {
    timeZone: 'Europe/Paris',
    now: new Date('2030-01-01T14:00:00Z'),
  });

  it('shows every command, contract, rollback and postcondition exactly, with risks and references', () => {
    for (const exact of [
      'mkdir -p out && find out -delete',
      'test ! -e out',
      'rmdir out-rollback',
      'rm -rf ./tmpdir',
      'test ! -d tmpdir',
      '${steps.make-dir.dir}: filled at run time from step make-dir',
      'TOKEN=${secrets.api_token}',
      'Secrets used (names only): api_token',
      'own gate before it runs',
    ])
      expect(text).toContain(exact);
    expect(text).toMatch(/!! destructive: .+/);
  });

  it('says who submitted, who may approve, the votes so far and the deadline in local time with UTC beside it', () => {
    expect(text).toContain('Submitted by: carol');
    expect(text).toContain('May approve: ana, ben (never mallory, carol)');
    expect(text).toContain('Approvals: 1 of 2 (ana: APPROVE)');
    expect(text).toContain('Answer by: 2030-01-02 14:00 Europe/Paris (13:00 UTC), in 23 h');
  });

  it('lets no control character of plan text reach the terminal', () => {
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(text).toContain('⟨U+001B ESC⟩[2J');
  });

  it('renders the fields other branches add, when present', () => {
    const revision = {
      number: 3,
      digest: 'sha256:rev3',
      skipSteps: ['cleanup'],
      argOverrides: { 'make-dir': { command: 'mkdir -p out2' } },
      by: 'ben',
      at: '2030-01-01T12:00:00.000Z',
    };
    const later = { ...shownOfNotice(notice()), revision, supersededBy: { version: 4 } } as ShownGate;
    const shown = gateText(later);
    expect(shown).toContain('SUPERSEDED by v4');
    expect(shown).toContain(
      'Modified: revision 3 by ben (sha256:rev3): skips cleanup; make-dir args {"command":"mkdir -p out2"}.',
    );
  });

  it('says first which steps’ commands a cut view leaves out, and that it cannot be approved', () => {
    const cut = fitApprovalView(view, 1500);
    const shown = gateText(shownOfNotice(notice({ summary: { objective: 'x', steps: 3, view: cut } })));
    const missing = cut.steps.filter((step) => step.detailsOmitted).map((step) => step.id);
    expect(missing.length).toBeGreaterThan(0);
    expect(
      shown.startsWith('!! This view does not show every command that runs, so the gate cannot be approved'),
    ).toBe(true);
    expect(shown).toContain(`the commands of step${missing.length === 1 ? '' : 's'} ${missing.join(', ')}`);
  });

  it('shows a step gate’s step, what already ran with its evidence, and the values it will consume', () => {
    const step = gateText(
      shownOfNotice(notice({ kind: 'step', stepId: 'cleanup', summary: undefined, stepGate: STEP_GATE })),
    );
    expect(step).toContain('rm -rf ./tmpdir');
    expect(step).toContain('- ${steps.make-dir.dir} = "tmpdir"');
    expect(step).toContain('- make-dir: passed command contract: exit 0');
    expect(step).toContain('made it');
  });
});

describe('deadlineText', () => {
  it('is UTC with how long is left when no zone is known, and survives a bad zone', () => {
    const now = new Date('2030-01-01T14:00:00Z');
    expect(deadlineText('2030-01-02T13:00:00.000Z', { now })).toBe('2030-01-02 13:00 UTC, in 23 h');
    expect(deadlineText('2030-01-01T13:30:00.000Z', { now, timeZone: 'Not/AZone' })).toBe(
      '2030-01-01 13:30 UTC, 30 min ago',
    );
  });
});

describe('the HTML cards (email, page)', () => {
  it('puts each step in a card with its command and contract in <pre><code>, escaped', () => {
    const html = stepCardsHtml(view);
    expect(html).toContain('<article class="pg-step pg-risky" id="step-make-dir">');
    expect(html).toContain('<pre><code>mkdir -p out &amp;&amp; find out -delete</code></pre>');
    expect(html).toContain('<pre><code>test ! -e out</code></pre>');
    expect(html).toContain('<article class="pg-step pg-risky" id="step-cleanup">');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>');
  });

  it('shows the people, postconditions, budget, secrets and a step gate', () => {
    const html = gateViewHtml(
      shownOfNotice(notice({ kind: 'step', stepId: 'cleanup', stepGate: STEP_GATE })),
      { timeZone: 'UTC', now: new Date('2030-01-01T13:00:00Z') },
    );
    expect(html).toContain('<dt>May approve</dt><dd>ana, ben (never mallory, carol)</dd>');
    expect(html).toContain('<time datetime="2030-01-02T13:00:00.000Z">2030-01-02 13:00 UTC, in 24 h</time>');
    expect(html).toContain('<pre><code>test ! -d tmpdir</code></pre>');
    expect(html).toContain('<code>api_token</code>');
    expect(html).toContain('<h2>Already done</h2>');
    expect(html).toContain('<pre><code>&quot;tmpdir&quot;</code></pre>');
  });
});

describe('the Slack blocks', () => {
  const blocksText = (blocks: readonly Record<string, unknown>[]) => JSON.stringify(blocks);

  it('shows the exact commands in code blocks, with Slack’s control characters escaped', () => {
    const message = approvalMessage(notice(), 'https://approvals.example.test');
    const all = message.slackBlocks
      .flatMap((b) => [
        (b.text as { text?: string } | undefined)?.text ?? '',
        ...((b.fields as { text: string }[] | undefined) ?? []).map((f) => f.text),
      ])
      .join('\n');
    expect(all).toContain('```mkdir -p out &amp;&amp; find out -delete```');
    expect(all).toContain('```rm -rf ./tmpdir```');
    expect(all).toContain('```test ! -d tmpdir```');
    // The plan's `<!channel>` and `<script>` are text, and its ``` cannot end the block early.
    expect(all).not.toMatch(/<!channel>|<script>/);
    expect(all).toContain('`\u200b`\u200b`');
    expect(blocksText(message.slackBlocks)).not.toContain('SOME_VARIABLE');
  });

  it('keeps to 50 blocks, 3000 characters a section and 10 fields, and says what it cut with a link to the page', () => {
    const many = PlanSchema.parse({
      id: 'many',
      objective: 'Many steps',
      steps: Array.from({ length: 80 }, (_, i) => ({
        id: `s${i}`,
        description: `Step ${i}`,
        tool: 'shell',
        // Quoted: the text needs escaping in Slack, and is valid shell (the analyser reads it fast).
        args: { command: `echo ${i} '${'<&>'.repeat(2000)}'` },
      })),
    });
    const message = approvalMessage(
      notice({ summary: { objective: 'Many', steps: 80, view: approvalView(many) } }),
      'https://approvals.example.test',
    );
    // One more (the status line) is added once the gate is decided.
    expect(message.slackBlocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks - 1);
    for (const block of message.slackBlocks) {
      const text = (block.text as { text?: string } | undefined)?.text ?? '';
      expect(text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
      // Never cut inside an entity or leave a code block open.
      expect(text).not.toMatch(/&(?!amp;|lt;|gt;)/);
      expect((text.match(/```/g) ?? []).length % 2).toBe(0);
      expect(((block.fields as unknown[]) ?? []).length).toBeLessThanOrEqual(SLACK_LIMITS.fields);
    }
    const last = message.slackBlocks.at(-2) as { text: { text: string } };
    // Exactly what was cut: which step, which part, how many characters; which steps are missing.
    expect(last.text.text).toMatch(
      /^:scissors: \*Slack cut this message:\* step s0 runs: \d+ of 6009 characters shown; /,
    );
    expect(last.text.text).toMatch(
      /steps s\d+, .* and \d+ more \(\d+ of 80\) not shown \(Slack's message limits\)\. <https:\/\/approvals\.example\.test\/approvals\/link-id\|Open the page>/,
    );
    expect(blocksText(message.slackBlocks)).toMatch(/\(cut here: \d+ of 6009 characters shown\)/);
    // A message that cut a command cannot approve: its Approve button is gone, the page is offered.
    const actions = message.slackBlocks.at(-1) as { elements: { action_id: string }[] };
    expect(actions.elements.map((e) => e.action_id)).toEqual([
      'plangate.REJECT',
      'plangate.ask',
      'plangate.page',
    ]);
  });
});

interface JsonSchema {
  readonly properties?: Record<string, { readonly $ref?: string }>;
}

describe('the gate JSON in the OpenAPI document', () => {
  it('describes the view from the same zod schemas: every step’s call, contract, rollback and risks', () => {
    const { schemas } = (openApiDocument() as { components: { schemas: Record<string, JsonSchema> } })
      .components;
    const gate = schemas.GateView as JsonSchema;
    for (const field of ['view', 'stepGate', 'policy', 'submittedBy', 'voters', 'expiresAt'])
      expect(Object.keys(gate.properties ?? {})).toContain(field);
    // The view is its own component (ApprovalView → StepView → ShownCall), referred to by the gate.
    expect(gate.properties?.view?.$ref).toBe('#/components/schemas/ApprovalView');
    const text = JSON.stringify([schemas.ApprovalView, schemas.StepView, schemas.ShownCall]);
    for (const field of [
      'call',
      'contract',
      'rollback',
      'risks',
      'references',
      'postconditions',
      'secrets',
      'truncated',
    ])
      expect(text).toContain(`"${field}"`);
  });
});

describe("a step's AWS access", () => {
  const awsPlan = PlanSchema.parse({
    id: 'reports',
    objective: 'Sync the reports',
    steps: [
      {
        id: 'sync',
        description: 'Sync the reports',
        tool: 'shell',
        args: { command: 'aws s3 sync s3://reports ./reports' },
        contract: { kind: 'command', command: 'test -d reports' },
        aws: {
          allow: [{ actions: ['s3:GetObject', 's3:ListBucket'], resources: ['arn:aws:s3:::reports/*'] }],
        },
      },
      { id: 'local', description: 'Count them', tool: 'shell', args: { command: 'ls reports | wc -l' } },
    ],
  });
  const awsView = approvalView(awsPlan);
  const line = 's3:GetObject, s3:ListBucket on arn:aws:s3:::reports/*';

  it('is produced once, as data of the view, and shown as a warning on the terminal, the page and Slack', () => {
    expect(awsView.steps[0]?.aws).toEqual([line]);
    expect(awsView.steps[1]?.aws).toBeUndefined();
    const shown = notice({
      plan: { id: awsPlan.id, version: 1, digest: 'sha256:feed' },
      summary: { objective: awsPlan.objective, steps: 2, view: awsView },
    });
    const phrase = `uses AWS (the plan AWS role, this run only): ${line}`;
    expect(gateText(shownOfNotice(shown))).toContain(`!! ${phrase}`);
    expect(stepCardsHtml(awsView)).toContain(`<li class="pg-risk">${phrase}</li>`);
    const message = approvalMessage(shown, 'https://approvals.example.test');
    // Slack's own markup (`*`) is escaped in the text.
    expect(JSON.stringify(message.slackBlocks)).toContain(`:warning: *${phrase.slice(0, -1)}`);
    // Only the step that declares it.
    expect(gateText(shownOfNotice(shown)).match(/uses AWS/g)).toHaveLength(1);
  });
});

describe("a step's declared hosts", () => {
  const netPlan = PlanSchema.parse({
    id: 'fetch',
    objective: 'Fetch the release notes',
    steps: [
      {
        id: 'get',
        description: 'Fetch the notes',
        tool: 'shell',
        args: { command: 'curl -sSf https://api.github.com/repos/x/y/releases -o notes.json' },
        contract: { kind: 'command', command: 'test -s notes.json' },
        network: { hosts: ['api.github.com', '*.pypi.org'] },
      },
      { id: 'local', description: 'Count them', tool: 'shell', args: { command: 'wc -l notes.json' } },
    ],
  });
  const netView = approvalView(netPlan);
  const phrase = "may reach: api.github.com, *.pypi.org (through plangate's proxy)";

  it('are produced once, as data of the view, and shown as a warning on the terminal, the page and Slack', () => {
    expect(netView.steps[0]?.network).toEqual(['api.github.com', '*.pypi.org']);
    expect(netView.steps[1]?.network).toBeUndefined();
    const shown = notice({
      plan: { id: netPlan.id, version: 1, digest: 'sha256:feed' },
      summary: { objective: netPlan.objective, steps: 2, view: netView },
    });
    expect(gateText(shownOfNotice(shown))).toContain(`!! ${phrase}`);
    expect(stepCardsHtml(netView)).toContain(`<li class="pg-risk">${phrase.replace("'", '&#39;')}</li>`);
    const message = approvalMessage(shown, 'https://approvals.example.test');
    expect(JSON.stringify(message.slackBlocks)).toMatch(/:warning: \*may reach: api\.github\.com, /);
    expect(gateText(shownOfNotice(shown)).match(/may reach: /g)).toHaveLength(1);
  });

  it('are in the policy facts of the step and the plan', () => {
    const facts = planFacts(netPlan);
    expect(facts.steps.get?.networkHosts).toEqual(['api.github.com', '*.pypi.org']);
    expect(facts.steps.local?.networkHosts).toEqual([]);
    expect(facts.networkHosts).toEqual(['*.pypi.org', 'api.github.com']);
  });
});

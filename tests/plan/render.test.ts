import { describe, expect, it } from 'vitest';
import { parsePlanFile } from '../../lib/plan/parse.ts';
import { mermaidLabel, renderChecklist, renderMermaid } from '../../lib/plan/render.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import { runCli } from './cli-harness.ts';

const plan = PlanSchema.parse({
  id: 'p',
  objective: 'Ship "v2" <safely>',
  steps: [
    { id: 'a', description: 'Build #1 [fast]', tool: 'echo' },
    { id: 'b', description: 'Deploy', tool: 'echo', dependsOn: ['a'], requiresApproval: true },
    { id: 'c', description: 'Notify', tool: 'echo', dependsOn: ['a'] },
    { id: 'end', description: 'Done', tool: 'echo', dependsOn: ['b', 'c'] },
  ],
  postconditions: [
    { id: 'pc', description: 'Users see v2', contract: { kind: 'assert', expression: 'true' } },
  ],
});

describe('render', () => {
  it("draws seed 002's checklist with statuses and evidence", () => {
    const text = renderChecklist(plan, {
      steps: new Map([
        ['a', { status: 'done', evidence: 'contract passed: exit 0' }],
        ['b', { status: 'in_progress' }],
        ['c', { status: 'blocked', notes: 'waiting on Slack' }],
      ]),
      postconditions: new Map([['pc', { satisfied: true, evidence: 'GET /version → 2.0.0' }]]),
    });
    expect(text).toBe(
      [
        '# Plan: Ship "v2" <safely>',
        '',
        '## Steps',
        '1. [x] Build #1 [fast]',
        '   via: echo',
        '   evidence: contract passed: exit 0',
        '2. [.] Deploy',
        '   via: echo; after: 1; needs approval',
        '3. [!] Notify',
        '   via: echo; after: 1',
        '   notes: waiting on Slack',
        '4. [ ] Done',
        '   via: echo; after: 2, 3',
        '',
        '## Postconditions',
        '1. [x] Users see v2',
        '   evidence: GET /version → 2.0.0',
      ].join('\n'),
    );
  });

  it('draws a Mermaid graph with positional node ids and escaped labels', () => {
    expect(renderMermaid(plan)).toBe(
      [
        'graph TD',
        '  s1["1. Build #35;1 #91;fast#93;"]',
        '  s2["2. Deploy 🔒"]',
        '  s3["3. Notify"]',
        '  s4["4. Done"]',
        '  s1 --> s2',
        '  s1 --> s3',
        '  s2 --> s4',
        '  s3 --> s4',
      ].join('\n'),
    );
    expect(mermaidLabel('a "b" <c>\n`d`')).toBe('a #quot;b#quot; #lt;c#gt; #96;d#96;');
  });

  it('renders an example through the CLI in every format', async () => {
    const { plan: demo } = await parsePlanFile('examples/local-demo.yaml');
    const json = await runCli(['render', 'examples/local-demo.yaml', '--format', 'json']);
    expect(JSON.parse(json.stdout)).toEqual(demo);
    const mermaid = await runCli(['render', 'examples/local-demo.yaml', '--format=mermaid']);
    expect(mermaid.stdout).toContain('s4 --> s6\n  s5 --> s6');
    const text = await runCli(['render', 'examples/fix-auth-timeout.md']);
    expect(text.stdout).toContain('4. [ ] Create PR\n   via: agent coder; after: 3');
  });
});

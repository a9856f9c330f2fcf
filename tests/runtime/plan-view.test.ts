/** The plan gate page's graph and changes: the diff as a plain function, the graph as SVG and as a list, HTML escaping. */
import { describe, expect, it } from 'vitest';
import { approvalPage } from '../../lib/runtime/gate/approval-page.ts';
import type { GateView } from '../../lib/runtime/gate/gate-item.ts';
import { diffPlanGraphs } from '../../lib/runtime/gate/plan-diff.ts';
import type { StepSketch } from '../../lib/runtime/payloads/index.ts';

const step = (id: string, over: Partial<StepSketch> = {}): StepSketch => ({
  id,
  name: `Do ${id}`,
  tool: 'shell',
  args: `args-${id}`,
  contract: `contract-${id}`,
  settings: 'settings',
  ...over,
});
const since = { version: 1, digest: 'sha256:v1' };

describe('diffPlanGraphs', () => {
  it('finds nothing between equal graphs', () => {
    const graph = [step('a'), step('b', { dependsOn: ['a'] })];
    expect(
      diffPlanGraphs(
        since,
        graph,
        graph.map((s) => ({ ...s })),
      ),
    ).toEqual({
      since,
      added: [],
      removed: [],
      changed: [],
    });
  });

  it('lists steps added and removed by id, and each changed aspect of a kept step', () => {
    const previous = [
      step('a'),
      step('b', { dependsOn: ['a'] }),
      step('gone'),
      step('c', { dependsOn: ['a', 'gone'] }),
    ];
    const current = [
      step('a', { name: 'Do a, better', settings: 'stricter' }),
      step('new'),
      step('b', { dependsOn: ['a'], tool: 'http', args: 'other' }),
      step('c', { dependsOn: ['a', 'new'], contract: undefined }),
    ];
    expect(diffPlanGraphs(since, previous, current)).toEqual({
      since,
      added: [{ id: 'new', name: 'Do new' }],
      removed: [{ id: 'gone', name: 'Do gone' }],
      changed: [
        { id: 'a', name: 'Do a, better', renamed: { from: 'Do a', to: 'Do a, better' }, settings: true },
        { id: 'b', name: 'Do b', tool: { from: 'shell', to: 'http' }, args: {} },
        {
          id: 'c',
          name: 'Do c',
          contract: { change: 'removed' },
          dependsOn: { added: ['new'], removed: ['gone'] },
        },
      ],
    });
  });

  it('gives old → new values of changed args and contracts where both versions recorded them', () => {
    const previous = [step('b'), step('c'), step('d', { contract: undefined })];
    const current = [step('b', { args: 'other' }), step('c', { contract: 'stricter' }), step('d')];
    const recorded = (args: string, contract?: string) => ({
      tool: 'shell',
      args,
      ...(contract ? { contract } : {}),
    });
    expect(
      diffPlanGraphs(since, previous, current, {
        previous: {
          b: recorded('{"command":"make"}'),
          c: recorded('{}', '{"kind":"command","command":"test -f a"}'),
          d: recorded('{}'),
        },
        current: {
          b: recorded('{"command":"make all"}'),
          c: recorded('{}', '{"kind":"command","command":"test -s a"}'),
          d: recorded('{}', '{"kind":"file","path":"out"}'),
        },
      }).changed,
    ).toEqual([
      { id: 'b', name: 'Do b', args: { from: '{"command":"make"}', to: '{"command":"make all"}' } },
      {
        id: 'c',
        name: 'Do c',
        contract: {
          change: 'changed',
          from: '{"kind":"command","command":"test -f a"}',
          to: '{"kind":"command","command":"test -s a"}',
        },
      },
      { id: 'd', name: 'Do d', contract: { change: 'added', to: '{"kind":"file","path":"out"}' } },
    ]);
    // Without the previous version's record, only that they changed.
    expect(diffPlanGraphs(since, previous, current, { current: {} }).changed[0]).toEqual({
      id: 'b',
      name: 'Do b',
      args: {},
    });
  });

  it('tells a contract added from one changed', () => {
    const changed = (from: string | undefined, to: string | undefined) =>
      diffPlanGraphs(since, [step('a', { contract: from })], [step('a', { contract: to })]).changed[0]
        ?.contract?.change;
    expect(changed(undefined, 'x')).toBe('added');
    expect(changed('x', 'y')).toBe('changed');
    expect(changed('x', 'x')).toBeUndefined();
  });
});

const HOSTILE = '"]\nclick s1 call alert(1) %% </pre><script>alert(1)</script> & end';

const gate = (over: Partial<GateView> = {}): GateView => ({
  approvalId: 'gate-1',
  kind: 'plan',
  executionId: 'exec-1',
  planId: 'demo',
  planVersion: 2,
  planDigest: 'sha256:v2',
  round: 1,
  summary: {
    objective: 'Ship it',
    steps: 2,
    stepIds: ['a', 'b'],
    graph: [step('a', { name: HOSTILE }), step('b', { dependsOn: ['a'] })],
  },
  createdAt: '2025-01-01T00:00:00.000Z',
  expiresAt: '2025-01-02T00:00:00.000Z',
  expiresAtEpoch: 1,
  status: 'pending',
  policy: { approvers: [], forbiddenApprovers: [], quorum: 1 },
  votes: [],
  ...over,
});

describe('the plan gate page', () => {
  it('draws the graph as inline SVG and lists it for screen readers, hostile names only as text', async () => {
    const html = await approvalPage(gate(), '/approve/x');
    const svg = /<svg [^>]*>[\s\S]*?<\/svg>/.exec(html)?.[0] ?? '';
    expect(svg).toMatch(
      /^<svg width="[\d.]+pt" height="[\d.]+pt" viewBox="[\d. ]+" class="plan-graph" aria-hidden="true" focusable="false">/,
    );
    // The hostile name is text inside the picture, never markup.
    expect(svg).toContain('&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script');
    expect(html).toContain(
      '<li><code>a</code> &quot;]\nclick s1 call alert(1) %% &lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; end</li>',
    );
    expect(html).toContain('<li><code>b</code> Do b (after <code>a</code>)</li>');
    expect(html.match(/<script/g)).toBeNull();
    expect(html).not.toContain('mermaid');
  });

  it('shows what changed since the version compared with', async () => {
    const html = await approvalPage(
      gate({
        changes: {
          since,
          added: [{ id: 'b', name: 'Do <b>' }],
          removed: [{ id: 'old', name: 'Old' }],
          changed: [
            {
              id: 'a',
              name: 'Do a',
              tool: { from: 'shell', to: 'http' },
              args: {},
              contract: { change: 'added' },
              dependsOn: { added: ['b'], removed: ['old'] },
              settings: true,
            },
          ],
        },
      }),
      '/approve/x',
    );
    expect(html).toContain('<h2>Changes since v1</h2>');
    expect(html).toContain('Compared with v1 (sha256:v1)');
    expect(html).toContain('<li>Added <code>b</code>: Do &lt;b&gt;</li>');
    expect(html).toContain('<li>Removed <code>old</code>: Old</li>');
    expect(html).toContain(
      '<li>Changed <code>a</code>: tool shell → http; args changed; contract added; now waits for <code>b</code>; no longer waits for <code>old</code>; other settings changed',
    );
    const values = await approvalPage(
      gate({
        changes: {
          since,
          added: [],
          removed: [],
          changed: [
            { id: 'a', name: 'Do a', args: { from: '{"n":1}', to: '{"n":"<2>"}' } },
            { id: 'b', name: 'Do b', contract: { change: 'removed', from: '{"kind":"file"}' } },
          ],
        },
      }),
      '/a',
    );
    expect(values).toContain(
      '<li>Changed <code>a</code>: args <code class="value">{&quot;n&quot;:1}</code> → <code class="value">{&quot;n&quot;:&quot;&lt;2&gt;&quot;}</code></li>',
    );
    expect(values).toContain(
      '<li>Changed <code>b</code>: contract removed (was <code class="value">{&quot;kind&quot;:&quot;file&quot;}</code>)</li>',
    );
    const unchanged = await approvalPage(
      gate({ changes: { since, added: [], removed: [], changed: [] } }),
      '/a',
    );
    expect(unchanged).toContain('No step changed; other parts of the plan');
  });

  it('shows neither without a graph or changes (a step gate)', async () => {
    const html = await approvalPage(gate({ kind: 'step', stepId: 'a', summary: undefined }), '/approve/x');
    expect(html).not.toContain('<svg');
    expect(html).not.toContain('Changes since');
  });
});

/**
 * The plan gate page's view of the plan: its dependency graph as Mermaid source (the page runs
 * no script, so the source is shown as text, ready to paste into any Mermaid renderer) with the
 * same graph as a list for screen readers, and what changed since the last version gated.
 * Step names are the plan author's text: escaped for Mermaid first, then for HTML.
 */
import type { StepSketch } from '../payloads/index.ts';
import { escapeHtml } from '../shared/html.ts';
import type { PlanChanges, StepChange, ValueChange } from './plan-diff.ts';

/**
 * The graph as a Mermaid flowchart. Nodes are named `s1`, `s2`, … (a step id such as `end`
 * would be a Mermaid keyword) and labelled `<id>: <name>` in quotes, where every character that
 * could close the label or start syntax is a Mermaid entity code (`#34;`).
 */
export function mermaidFlowchart(graph: readonly StepSketch[]): string {
  const node = new Map(graph.map((step, i) => [step.id, `s${i + 1}`]));
  const lines = ['flowchart TD'];
  graph.forEach((step, i) => {
    lines.push(`  s${i + 1}["${mermaidText(`${step.id}: ${step.name}`)}"]`);
  });
  graph.forEach((step, i) => {
    for (const dependency of step.dependsOn ?? []) {
      const from = node.get(dependency);
      if (from) lines.push(`  ${from} --> s${i + 1}`);
    }
  });
  return lines.join('\n');
}

/** Letters, digits and plain punctuation stay; anything else becomes `#<code point>;`. */
function mermaidText(text: string): string {
  return text.replace(/[^\p{L}\p{N} .,:!?_/+'()-]/gu, (ch) => `#${ch.codePointAt(0)};`);
}

/** The graph section: the Mermaid source (hidden from screen readers) and the same graph as a list. */
export function graphHtml(graph: readonly StepSketch[]): string {
  const items = graph.map((step) => {
    const after = step.dependsOn?.length ? ` (after ${codeList(step.dependsOn)})` : '';
    return `<li><code>${escapeHtml(step.id)}</code> ${escapeHtml(step.name)}${after}</li>`;
  });
  return [
    '<h2 id="plangate-graph">Steps and what each waits for</h2>',
    `<pre class="mermaid" aria-hidden="true">${escapeHtml(mermaidFlowchart(graph))}</pre>`,
    `<ol aria-labelledby="plangate-graph">${items.join('')}</ol>`,
  ].join('\n');
}

/** The changes section: steps added, removed and changed since the version compared with. */
export function changesHtml(changes: PlanChanges): string {
  const items = [
    ...changes.added.map((s) => `<li>Added <code>${escapeHtml(s.id)}</code>: ${escapeHtml(s.name)}</li>`),
    ...changes.removed.map((s) => `<li>Removed <code>${escapeHtml(s.id)}</code>: ${escapeHtml(s.name)}</li>`),
    ...changes.changed.map(
      (c) => `<li>Changed <code>${escapeHtml(c.id)}</code>: ${whatChanged(c).join('; ')}</li>`,
    ),
  ];
  const since = `v${changes.since.version}`;
  return [
    `<h2>Changes since ${since}</h2>`,
    `<p>Compared with ${since} (${escapeHtml(changes.since.digest)}), the latest earlier version of this plan that was gated.</p>`,
    items.length > 0
      ? `<ul>${items.join('')}</ul>`
      : '<p>No step changed; other parts of the plan (objective, policy, postconditions, …) did.</p>',
  ].join('\n');
}

/** Each changed aspect of a step, as HTML. */
function whatChanged(change: StepChange): string[] {
  const parts: string[] = [];
  if (change.renamed)
    parts.push(`renamed from “${escapeHtml(change.renamed.from)}” to “${escapeHtml(change.renamed.to)}”`);
  if (change.tool) parts.push(`tool ${escapeHtml(change.tool.from)} → ${escapeHtml(change.tool.to)}`);
  if (change.args) parts.push(valueParts('args', 'changed', change.args));
  if (change.contract) parts.push(valueParts('contract', change.contract.change, change.contract));
  if (change.dependsOn?.added.length) parts.push(`now waits for ${codeList(change.dependsOn.added)}`);
  if (change.dependsOn?.removed.length)
    parts.push(`no longer waits for ${codeList(change.dependsOn.removed)}`);
  if (change.settings)
    parts.push('other settings changed (approval, retries, timeout, outputs, rollback, …)');
  return parts;
}

/** "args `old` → `new`", "contract added: `new`", "contract removed (was `old`)", or just what happened. */
function valueParts(what: string, how: 'added' | 'removed' | 'changed', values: ValueChange): string {
  const code = (text: string) => `<code class="value">${escapeHtml(text)}</code>`;
  if (how === 'changed' && values.from !== undefined && values.to !== undefined)
    return `${what} ${code(values.from)} → ${code(values.to)}`;
  if (how === 'added' && values.to !== undefined) return `${what} added: ${code(values.to)}`;
  if (how === 'removed' && values.from !== undefined) return `${what} removed (was ${code(values.from)})`;
  return `${what} ${how}`;
}

function codeList(ids: readonly string[]): string {
  return ids.map((id) => `<code>${escapeHtml(id)}</code>`).join(', ');
}

/**
 * The gate page's view of the plan: its dependency graph, drawn on the server as SVG
 * (plan-graph.ts) with the same graph as a list for screen readers, and what changed since the
 * last version gated. Step names are the plan author's text: escaped for DOT and for HTML.
 */
import { ownCallMarked, type StepRiskMarks } from '../payloads/index.ts';
import { escapeHtml } from '../shared/html.ts';
import type { GateView } from './gate-item.ts';
import type { PlanChanges, StepChange, ValueChange } from './plan-diff.ts';
import { type GraphStep, MAX_DRAWN_STEPS } from './plan-graph.ts';
import { visibleHtml } from './view-html.ts';

/**
 * The graph a gate's page draws, with the risk marks the harness computed (the gate view's): a
 * plan gate's steps; a step gate's step after the steps it waits for (those done marked so).
 * Empty when the gate has none to show.
 */
export function stepGraph(gate: GateView): GraphStep[] {
  if (gate.kind === 'plan') {
    const view = gate.summary?.view;
    const risks = new Map((view?.steps ?? []).map((step) => [step.id, step]));
    const steps =
      gate.summary?.graph ??
      view?.steps.map((step) => ({ id: step.id, name: step.description, dependsOn: step.dependsOn }));
    return (steps ?? []).map((step) => {
      const marks = risks.get(step.id);
      return {
        id: step.id,
        name: step.name,
        ...(step.dependsOn?.length ? { dependsOn: step.dependsOn } : {}),
        ...(marks ? ownCallMarks(marks.risks) : {}),
        ...(marks?.risks.ownGate ? { ownGate: true } : {}),
      };
    });
  }
  const stepGate = gate.kind === 'step' ? gate.stepGate : undefined;
  if (!stepGate || stepGate.step.dependsOn.length === 0) return [];
  const done = new Set((stepGate.completed ?? []).map((c) => c.id));
  const step = stepGate.step;
  return [
    ...step.dependsOn.map((id) => ({ id, name: done.has(id) ? 'done' : '' })),
    {
      id: step.id,
      name: step.description,
      dependsOn: step.dependsOn,
      current: true,
      ...ownCallMarks(step.risks),
      ...(step.risks.ownGate ? { ownGate: true } : {}),
    },
  ];
}

/**
 * What the step's own call is marked: destructive, or of unknown effect (an agent's, a write). A
 * destructive rollback or contract marks that rollback or contract on the step's card, not the step here.
 */
function ownCallMarks(risks: StepRiskMarks): Pick<GraphStep, 'destructive' | 'effectUnknown'> {
  if (risks.destructive.length > 0) return { destructive: true };
  return ownCallMarked(risks) ? { effectUnknown: true } : {};
}

/**
 * The graph section: the SVG (hidden from screen readers, who get the list) when it could be
 * drawn, and the same graph as a list.
 */
export function graphHtml(
  graph: readonly GraphStep[],
  svg: string | undefined,
  kind: 'plan' | 'step',
): string {
  const items = graph.map((step) => {
    const marks = [
      ...(step.destructive ? ['destructive'] : []),
      ...(step.effectUnknown ? ['effect unknown'] : []),
      ...(step.ownGate ? ['asks approval first'] : []),
      ...(step.current ? ['this gate'] : []),
    ];
    const after = step.dependsOn?.length ? ` (after ${codeList(step.dependsOn)})` : '';
    return `<li><code>${escapeHtml(step.id)}</code> ${visibleHtml(step.name)}${after}${marks.length > 0 ? ` [${marks.join(', ')}]` : ''}</li>`;
  });
  return [
    `<h2 id="plangate-graph">${kind === 'plan' ? 'Steps and what each waits for' : 'Where this step stands'}</h2>`,
    ...(svg
      ? [svg]
      : graph.length > MAX_DRAWN_STEPS
        ? [`<p class="muted">${graph.length} steps are too many to draw; the list is the graph.</p>`]
        : []),
    `<ol class="graph-list" aria-labelledby="plangate-graph">${items.join('')}</ol>`,
  ].join('\n');
}

/** The changes section: steps added, removed and changed since the version compared with. */
export function changesHtml(changes: PlanChanges): string {
  const items = [
    ...changes.added.map((s) => `<li>Added <code>${escapeHtml(s.id)}</code>: ${visibleHtml(s.name)}</li>`),
    ...changes.removed.map(
      (s) => `<li>Removed <code>${escapeHtml(s.id)}</code>: ${visibleHtml(s.name)}</li>`,
    ),
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
    parts.push(`renamed from “${visibleHtml(change.renamed.from)}” to “${visibleHtml(change.renamed.to)}”`);
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
  const code = (text: string) => `<code class="value">${visibleHtml(text)}</code>`;
  if (how === 'changed' && values.from !== undefined && values.to !== undefined)
    return `${what} ${code(values.from)} → ${code(values.to)}`;
  if (how === 'added' && values.to !== undefined) return `${what} added: ${code(values.to)}`;
  if (how === 'removed' && values.from !== undefined) return `${what} removed (was ${code(values.from)})`;
  return `${what} ${how}`;
}

function codeList(ids: readonly string[]): string {
  return ids.map((id) => `<code>${escapeHtml(id)}</code>`).join(', ');
}

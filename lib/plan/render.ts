/**
 * Plans for people: seed 002's checklist (`[ ]` pending, `[.]` in progress, `[x]`
 * done, `[!]` blocked or failed, `[-]` skipped, with evidence), a Mermaid graph of the
 * dependencies, and JSON/YAML. The checklist and the graph are for people: their plan text shows
 * hidden characters as symbols (visible-text.ts), so neither can rewrite a terminal or hide text.
 */
import { stringify } from 'yaml';
import type { Plan } from './schema.ts';
import { stepInvocation } from './tools.ts';
import { visibleText } from './visible-text.ts';

export type StepProgress = 'pending' | 'in_progress' | 'done' | 'blocked' | 'failed' | 'skipped';

export interface StepState {
  readonly status: StepProgress;
  /** What proved the step done (the contract's evidence). */
  readonly evidence?: string;
  readonly notes?: string;
}

export interface PostconditionState {
  readonly satisfied: boolean;
  readonly evidence?: string;
}

export interface ChecklistState {
  /** By step id; steps left out are pending. */
  readonly steps?: ReadonlyMap<string, StepState>;
  /** By postcondition id; left out means not yet satisfied. */
  readonly postconditions?: ReadonlyMap<string, PostconditionState>;
}

const MARKS: Record<StepProgress, string> = {
  pending: '[ ]',
  in_progress: '[.]',
  done: '[x]',
  blocked: '[!]',
  failed: '[!]',
  skipped: '[-]',
};

/** Seed 002's `to_render`, plus each step's tool or target and dependencies. */
export function renderChecklist(plan: Plan, state: ChecklistState = {}): string {
  const lines = [`# Plan: ${oneLine(plan.objective)}`, '', '## Steps'];
  const numberOf = new Map(plan.steps.map((s, i) => [s.id, i + 1]));
  plan.steps.forEach((step, i) => {
    const s = state.steps?.get(step.id);
    lines.push(`${i + 1}. ${MARKS[s?.status ?? 'pending']} ${oneLine(step.description)}`);
    const call = stepInvocation(step);
    const how = step.target !== undefined ? `agent ${oneLine(step.target)}` : (call?.tool ?? 'a person');
    const after = step.dependsOn.map((d) => numberOf.get(d) ?? d).join(', ');
    const flags = [
      step.requiresApproval ? 'needs approval' : '',
      step.requiresHuman ? 'done by a person' : '',
    ]
      .filter(Boolean)
      .join(', ');
    lines.push(`   via: ${how}${after ? `; after: ${after}` : ''}${flags ? `; ${flags}` : ''}`);
    if (s?.evidence) lines.push(`   evidence: ${oneLine(s.evidence)}`);
    if (s?.notes) lines.push(`   notes: ${oneLine(s.notes)}`);
  });
  lines.push('', '## Postconditions');
  plan.postconditions.forEach((pc, i) => {
    const s = state.postconditions?.get(pc.id);
    lines.push(`${i + 1}. ${s?.satisfied ? '[x]' : '[ ]'} ${oneLine(pc.description)}`);
    if (s?.evidence) lines.push(`   evidence: ${oneLine(s.evidence)}`);
  });
  return lines.join('\n');
}

/** `graph TD`: one node per step (ids are positional, labels escaped), an edge from each dependency. */
export function renderMermaid(plan: Plan): string {
  const lines = ['graph TD'];
  const node = new Map(plan.steps.map((s, i) => [s.id, `s${i + 1}`]));
  plan.steps.forEach((step, i) => {
    const flag = step.requiresApproval ? ' 🔒' : step.requiresHuman ? ' 👤' : '';
    lines.push(`  s${i + 1}["${mermaidLabel(`${i + 1}. ${step.description}${flag}`)}"]`);
  });
  plan.steps.forEach((step, i) => {
    for (const dep of step.dependsOn) {
      const from = node.get(dep);
      if (from) lines.push(`  ${from} --> s${i + 1}`);
    }
  });
  return lines.join('\n');
}

/** Mermaid entity codes for characters that would end or break a quoted label. */
export function mermaidLabel(text: string): string {
  return oneLine(text)
    .replace(/#/g, '#35;')
    .replace(/"/g, '#quot;')
    .replace(/</g, '#lt;')
    .replace(/>/g, '#gt;')
    .replace(/`/g, '#96;')
    .replace(/[[\]{}()|]/g, (c) => `#${c.charCodeAt(0)};`);
}

export function renderJson(plan: Plan): string {
  return JSON.stringify(plan, null, 2);
}

export function renderYaml(plan: Plan): string {
  return stringify(plan, { lineWidth: 0 });
}

/** Plan text on one line, its hidden characters as symbols (before blanks are flattened). */
function oneLine(text: string): string {
  return visibleText(text)
    .replace(/\s*\n\s*/g, ' ')
    .trim();
}

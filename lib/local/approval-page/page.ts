/** The approval page's HTML: the plan as a checklist, what is asked, and the answer form. */
import type { PendingGate } from '../run/gate-desk.ts';

export interface PageGate {
  readonly gate: PendingGate;
  /** The plan as seed 002's checklist (lib/plan render). */
  readonly checklist: string;
  readonly stepIds: readonly string[];
  readonly stepName?: string;
  /** A human step's declared outputs, asked for on the page. */
  readonly outputs?: readonly string[];
}

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}' +
  'pre{background:#f4f4f4;padding:1rem;overflow:auto}button{margin:.25rem .5rem .25rem 0;padding:.4rem 1rem}' +
  'input[type=text]{width:24rem}';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

export function gatePage(page: PageGate, action: string): string {
  const { gate } = page;
  const heading =
    gate.kind === 'plan'
      ? 'Approve this plan?'
      : gate.kind === 'step'
        ? `Approve step "${page.stepName ?? gate.stepId}" before it runs?`
        : gate.kind === 'human'
          ? `Step "${page.stepName ?? gate.stepId}" is yours to do: report it`
          : `Step "${page.stepName ?? gate.stepId}" failed: retry, skip or abort?`;
  const parts = [`<h1>${escapeHtml(heading)}</h1>`];
  if (gate.question) parts.push(`<p><strong>Question asked:</strong> ${escapeHtml(gate.question)}</p>`);
  if (gate.failure)
    parts.push(
      `<p><strong>${escapeHtml(gate.failure.failureClass)}</strong> (${escapeHtml(gate.failure.error)}): ${escapeHtml(gate.failure.message)}</p>`,
    );
  if (gate.failure?.failureClass === 'permission')
    parts.push(
      '<p>Configure the credentials out of band (environment, vault, config file) before you retry. Never paste them here.</p>',
    );
  parts.push(
    `<pre>${escapeHtml(page.checklist)}</pre>`,
    `<form method="post" action="${escapeHtml(action)}">`,
  );
  if (gate.kind === 'human') {
    for (const name of page.outputs ?? [])
      parts.push(`<p>${escapeHtml(name)}: <input type="text" name="output.${escapeHtml(name)}"></p>`);
    parts.push(
      '<p><button name="decision" value="DONE">done</button></p>',
      '<p>Reason: <input type="text" name="reason"> <button name="decision" value="FAILED">failed</button></p>',
    );
  } else if (gate.kind === 'escalation') {
    for (const d of ['RETRY', 'SKIP', 'ABORT'])
      parts.push(`<button name="decision" value="${d}">${d.toLowerCase()}</button>`);
  } else {
    parts.push(
      '<p><button name="decision" value="APPROVE">approve</button></p>',
      gate.kind === 'plan'
        ? `<p>Skip steps (comma-separated, of ${escapeHtml(page.stepIds.join(', '))}): <input type="text" name="skipSteps"> <button name="decision" value="APPROVE_WITH_MODIFICATIONS">approve with modifications</button></p>`
        : '',
      '<p>Question: <input type="text" name="question"> <button name="decision" value="ASK_FOR_CLARIFICATION">ask for clarification</button></p>',
      '<p>Reason: <input type="text" name="reason"> <button name="decision" value="REJECT">reject</button></p>',
    );
  }
  parts.push('</form>');
  return layout(heading, parts.join('\n'));
}

export function messagePage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}

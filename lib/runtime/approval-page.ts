/**
 * The approval page: what is asked (plan summary and digest, the step, the failure, the work for
 * a person), and a form whose buttons answer it. Everything shown is escaped; the page holds the
 * plan digest (the answer binds to it) and never the task token, which the page never sees.
 */
import type { GateView } from './approvals.ts';
import { escapeHtml } from './notify/message.ts';

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}' +
  'th{text-align:left;padding-right:1rem;vertical-align:top}button{margin:.25rem .5rem .25rem 0;padding:.4rem 1rem}' +
  'input[type=text]{width:24rem}pre{background:#f4f4f4;padding:1rem;overflow:auto}';

const HEADINGS: Record<GateView['kind'], string> = {
  plan: 'Approve this plan?',
  step: 'Approve this step before it runs?',
  escalation: 'A step failed: retry, skip or abort?',
  human: 'This step is yours to do: report it',
};

/** What a page may show besides the stored gate. */
export interface ApprovalPageExtras {
  /** The whole plan as a checklist (lib/plan render), where the page's host has the plan. @default - not shown */
  readonly checklist?: string;
}

export function approvalPage(gate: GateView, action: string, extras: ApprovalPageExtras = {}): string {
  const rows: [string, string][] = [
    ['Plan', `${gate.planId} v${gate.planVersion}`],
    ['Digest', gate.planDigest],
  ];
  if (gate.summary) rows.push(['Objective', gate.summary.objective], ['Steps', String(gate.summary.steps)]);
  if (gate.stepId)
    rows.push(['Step', gate.description ? `${gate.stepId}: ${gate.description}` : gate.stepId]);
  if (gate.human) rows.push(['What to do', gate.human.instructions]);
  if (gate.failure)
    rows.push(['Failure', `${gate.failure.failureClass} (${gate.failure.error}): ${gate.failure.message}`]);
  if (gate.question) rows.push(['Question asked', gate.question]);
  if (gate.kind === 'plan' || gate.kind === 'step')
    rows.push(['Approvals', `${gate.votes.length} of ${gate.policy.quorum}`]);
  rows.push(['Answer by', gate.expiresAt]);

  const field = (label: string, name: string) =>
    `${escapeHtml(label)} <input type="text" name="${escapeHtml(name)}">`;
  const button = (decision: string, label: string) =>
    `<button name="decision" value="${escapeHtml(decision)}">${escapeHtml(label)}</button>`;
  const controls: string[] = [];
  switch (gate.kind) {
    case 'plan':
    case 'step':
      controls.push(
        `<p>${button('APPROVE', 'Approve')}</p>`,
        `<p>${field('Args to change (JSON by step id)', 'argOverrides')}${gate.kind === 'plan' ? ` ${field('Steps to skip (comma-separated)', 'skipSteps')}` : ''} ${button('APPROVE_WITH_MODIFICATIONS', 'Approve with modifications')}</p>`,
        `<p>${field('Question', 'question')} ${button('ASK_FOR_CLARIFICATION', 'Ask for clarification')}</p>`,
        `<p>${field('Reason', 'reason')} ${button('REJECT', 'Reject')}</p>`,
      );
      break;
    case 'escalation':
      if (gate.failure?.failureClass === 'permission')
        controls.push(
          '<p>Configure the credentials out of band (environment, vault) before you retry. Never paste them here.</p>',
        );
      controls.push(
        `<p>${button('RETRY', 'Retry')} ${button('SKIP', 'Skip')} ${button('ABORT', 'Abort')}</p>`,
      );
      break;
    case 'human':
      for (const name of gate.human?.outputs ?? []) controls.push(`<p>${field(name, `output.${name}`)}</p>`);
      controls.push(
        `<p>${button('DONE', 'Done')}</p>`,
        `<p>${field('What went wrong', 'reason')} ${button('FAILED', 'Could not do it')}</p>`,
      );
  }
  const body = [
    `<h1>${escapeHtml(HEADINGS[gate.kind])}</h1>`,
    `<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table>`,
    ...(extras.checklist ? [`<pre>${escapeHtml(extras.checklist)}</pre>`] : []),
    `<form method="post" action="${escapeHtml(action)}">`,
    `<input type="hidden" name="digest" value="${escapeHtml(gate.planDigest)}">`,
    ...controls,
    '</form>',
  ].join('\n');
  return page(HEADINGS[gate.kind], body);
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

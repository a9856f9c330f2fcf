/**
 * The approval page: what is asked (plan summary and digest, the plan's graph and its changes
 * since the last version gated, the step, the failure, the work for a person), and a form whose
 * buttons answer it. Everything shown is escaped; the page holds the plan digest (the answer
 * binds to it) and never the task token, which the page never sees.
 *
 * How the answer is sent depends on the link: a recipient-bound link's form posts as that
 * recipient (no script); a shared link's page signs the person in with the platform's Cognito
 * hosted UI (authorization code + PKCE, one inline script allowed by its hash) and posts the
 * answer with the ID token. The page holds only public values (domain, client id, callback).
 */
import { createHash } from 'node:crypto';
import { escapeHtml } from '../shared/html.ts';
import type { GateView } from './gate-item.ts';
import { changesHtml, graphHtml } from './plan-view.ts';

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}' +
  'th{text-align:left;padding-right:1rem;vertical-align:top}button{margin:.25rem .5rem .25rem 0;padding:.4rem 1rem}' +
  'input[type=text]{width:24rem;max-width:100%}table{max-width:100%}td,li,p{overflow-wrap:anywhere}pre{background:#f4f4f4;padding:1rem;overflow:auto}h2{font-size:1.15rem}' +
  // The graph's source wraps instead of scrolling: a scroller takes keyboard focus, and this
  // one is hidden from screen readers.
  'pre.mermaid{white-space:pre-wrap;overflow-wrap:anywhere}';

const HEADINGS: Record<GateView['kind'], string> = {
  plan: 'Approve this plan?',
  step: 'Approve this step before it runs?',
  escalation: 'A step failed: retry, skip or abort?',
  human: 'This step is yours to do: report it',
};

/** What a page may show besides the stored gate. */
export interface ApprovalPageExtras {
  /**
   * The whole plan as a checklist (lib/plan render), where the page's host has the plan; shown
   * with a link that loads the page again, so it is as current as the execution. @default - not shown
   */
  readonly checklist?: string;
  /** A note from the page's host, shown above the form (e.g. who may answer, when this person may not). @default - none */
  readonly notice?: string;
  /** The recipient a recipient-bound link answers as (shown, so nobody answers unknowingly as someone else). @default - not bound */
  readonly answeringAs?: string;
  /** Sign in before answering (shared links on AWS). @default - the form posts as is */
  readonly signIn?: SignInConfig;
  /** The page session's form token, posted back with the answer (a hidden field). @default - none */
  readonly formToken?: string;
}

/** The public values of the approvers' OAuth client; nothing here is secret. */
export interface SignInConfig {
  /** The hosted UI's base URL, e.g. `https://plangate-1234.auth.eu-west-1.amazoncognito.com`. */
  readonly domainUrl: string;
  /** The app client id (a public client: no secret). */
  readonly clientId: string;
  /** Where the hosted UI returns the code: {@link signInCallbackUrl}. */
  readonly redirectUri: string;
}

/** The form field holding the page session's form token (lib/runtime/api/page-session.ts checks it). */
export const FORM_TOKEN_FIELD = 'form_token';

/** The path the hosted UI returns to (Cognito needs one exact callback URL, not a pattern). */
export const SIGN_IN_CALLBACK_PATH = '/approvals/signed-in';

/** The callback URL registered with the app client and sent by the page: `<api>/approvals/signed-in`. */
export function signInCallbackUrl(apiBaseUrl: string): string {
  return `${apiBaseUrl.replace(/\/+$/, '')}${SIGN_IN_CALLBACK_PATH}`;
}

/**
 * The page's only script. On the approval page it keeps the chosen answer (never a token) in
 * sessionStorage with a PKCE verifier and goes to the hosted UI; on the callback page it
 * exchanges the code for tokens, posts the answer with the ID token (kept in memory only) to the
 * same origin, and shows what the API said, as text.
 */
const SIGN_IN_SCRIPT = `(() => {
  const cfg = document.getElementById('plangate-sign-in').dataset;
  const say = (text) => { document.getElementById('plangate-status').textContent = text; };
  const KEY = 'plangate.pending-answer';
  const b64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  const form = document.getElementById('plangate-answer');
  if (form) form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = new URLSearchParams(new FormData(form));
    if (event.submitter && event.submitter.name) body.set(event.submitter.name, event.submitter.value);
    const verifier = b64(crypto.getRandomValues(new Uint8Array(32)));
    const state = b64(crypto.getRandomValues(new Uint8Array(16)));
    const challenge = b64(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    sessionStorage.setItem(KEY, JSON.stringify({ state, verifier, answerUrl: form.action, body: body.toString() }));
    say('Signing you in…');
    location.assign(cfg.domain + '/oauth2/authorize?' + new URLSearchParams({
      response_type: 'code', client_id: cfg.clientId, redirect_uri: cfg.redirectUri,
      scope: 'openid email', state, code_challenge: challenge, code_challenge_method: 'S256',
    }));
  });
  if (cfg.mode !== 'callback') return;
  (async () => {
    const params = new URLSearchParams(location.search);
    history.replaceState(null, '', location.pathname);
    const pending = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    sessionStorage.removeItem(KEY);
    if (!pending || !params.get('code') || params.get('state') !== pending.state
        || new URL(pending.answerUrl).origin !== location.origin) {
      say('Sign-in did not complete (' + (params.get('error') || 'no answer waiting') + '). Open the approval link again.');
      return;
    }
    const tokens = await fetch(cfg.domain + '/oauth2/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: cfg.clientId,
        code: params.get('code'), redirect_uri: cfg.redirectUri, code_verifier: pending.verifier }),
    });
    if (!tokens.ok) { say('Sign-in failed (HTTP ' + tokens.status + '). Open the approval link again.'); return; }
    const { id_token } = await tokens.json();
    say('Sending your answer…');
    const res = await fetch(pending.answerUrl, {
      method: 'POST',
      headers: { authorization: 'Bearer ' + id_token, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: pending.body,
    });
    const out = await res.json().catch(() => ({}));
    if (!res.ok) say('Not recorded: ' + (out.message || 'HTTP ' + res.status));
    else if (out.status === 'pending') say('Your approval was recorded; ' + out.votes + ' of the required approvals so far.');
    else say('Your answer (' + out.decision.decision + ') was recorded.');
  })().catch(() => say('Something went wrong; nothing was sent if no answer was confirmed. Open the approval link again.'));
})();`;

/** The Content-Security-Policy of a page without script: styles inline, forms post back here only. */
export const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * The Content-Security-Policy of a sign-in page: exactly {@link SIGN_IN_SCRIPT} may run (by its
 * hash), and it may talk only to this origin and the hosted UI's domain.
 */
export function signInPageCsp(signIn: SignInConfig): string {
  const hash = createHash('sha256').update(SIGN_IN_SCRIPT).digest('base64');
  return `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${hash}'; connect-src 'self' ${new URL(signIn.domainUrl).origin}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;
}

/** Where the page's inline script reads its configuration (public values, escaped). */
function signInElements(signIn: SignInConfig, mode: 'answer' | 'callback'): string {
  return [
    `<div id="plangate-sign-in" hidden data-mode="${mode}" data-domain="${escapeHtml(new URL(signIn.domainUrl).origin)}" data-client-id="${escapeHtml(signIn.clientId)}" data-redirect-uri="${escapeHtml(signIn.redirectUri)}"></div>`,
    `<p id="plangate-status" role="status"></p>`,
    `<script>${SIGN_IN_SCRIPT}</script>`,
  ].join('\n');
}

/** The page the hosted UI returns to: finishes sign-in and sends the answer waiting in this tab. */
export function signInCallbackPage(signIn: SignInConfig): string {
  return page('Signing in', `<h1>Answering the gate</h1>\n${signInElements(signIn, 'callback')}`);
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
  const who = extras.answeringAs
    ? [
        `<p><strong>You are answering as ${escapeHtml(extras.answeringAs)}</strong> (this link was sent to that address only; do not forward it).</p>`,
      ]
    : extras.signIn
      ? ['<p>You will be asked to sign in when you answer; your answer is recorded under your account.</p>']
      : [];
  const body = [
    `<h1>${escapeHtml(HEADINGS[gate.kind])}</h1>`,
    ...who,
    `<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table>`,
    ...(gate.changes ? [changesHtml(gate.changes)] : []),
    ...(gate.summary?.graph ? [graphHtml(gate.summary.graph)] : []),
    ...(extras.checklist
      ? [
          '<h2>Progress</h2>',
          // The page's own address: no script, so reloading it is how the checklist catches up.
          '<p><a href="">Refresh</a> to see the steps done since this page was loaded.</p>',
          `<pre>${escapeHtml(extras.checklist)}</pre>`,
        ]
      : []),
    ...(extras.notice ? [`<p role="note"><strong>${escapeHtml(extras.notice)}</strong></p>`] : []),
    `<form id="plangate-answer" method="post" action="${escapeHtml(action)}">`,
    `<input type="hidden" name="digest" value="${escapeHtml(gate.planDigest)}">`,
    ...(extras.formToken
      ? [`<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${escapeHtml(extras.formToken)}">`]
      : []),
    ...controls,
    '</form>',
    ...(extras.signIn && !extras.answeringAs ? [signInElements(extras.signIn, 'answer')] : []),
  ].join('\n');
  return page(HEADINGS[gate.kind], body);
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

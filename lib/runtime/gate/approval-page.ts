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
import { ACCEPT_SUGGESTION, type ApprovalView, type StepView } from '../payloads/index.ts';
import { escapeHtml } from '../shared/html.ts';
import { contentDigest, type GateView } from './gate-item.ts';
import {
  type ArgField,
  argFieldName,
  argFields,
  type EditableStep,
  fieldText,
  SKIP_FIELD,
} from './modifications.ts';
import { graphSvg } from './plan-graph.ts';
import { changesHtml, graphHtml, stepGraph } from './plan-view.ts';
import { omitted, type ShownGate, shownOfGate } from './shown-gate.ts';
import {
  abortRollbacksHtml,
  gatePeopleHtml,
  gateWarningsHtml,
  planFactsHtml,
  stepCardHtml,
  stepGateHtml,
  VIEW_STYLE,
  visibleHtml,
} from './view-html.ts';
import { gatePages, PAGE_PARAM, SEEN_FIELD } from './view-pages.ts';

/**
 * The pages' one stylesheet (inline, allowed by its hash): readable on a 375 px phone (nothing
 * wider than the screen: long commands wrap inside their own box, so no part of one is ever
 * scrolled out of sight), a visible focus ring, and risky steps marked by more than colour.
 */
export const PAGE_STYLE = [
  VIEW_STYLE,
  ':root{--fg:#1b1b1b;--muted:#4d4d4d;--line:#cfcfcf;--soft:#f4f4f3;--accent:#0b57d0;--danger:#a50e22;--ok:#146c2e}',
  '*{box-sizing:border-box}',
  'body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;color:var(--fg);background:#fff;max-width:58rem;margin:0 auto;padding:1rem}',
  'h1{font-size:1.5rem;line-height:1.25;margin:.5rem 0 1rem}h2{font-size:1.2rem;margin:2rem 0 .5rem}h3{font-size:1.05rem;margin:0 0 .25rem}',
  'p,li,dd,td,th,summary,label,legend{overflow-wrap:anywhere}',
  'code,pre,textarea.code{font-family:ui-monospace,"SFMono-Regular","DejaVu Sans Mono","Liberation Mono",Menlo,Consolas,monospace;font-size:.875rem}',
  'pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:.5rem .75rem;margin:.25rem 0 .75rem;white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-all;max-width:100%}',
  'dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.35rem 1rem;margin:0 0 1rem}',
  'dl.facts dt{font-weight:600;color:var(--muted)}dl.facts dd{margin:0;min-width:0}',
  '@media (max-width:40rem){dl.facts{grid-template-columns:minmax(0,1fr);gap:0}dl.facts dd{margin-bottom:.6rem}}',
  '.note,.alert{padding:.75rem 1rem;border-radius:6px;margin:1rem 0;border-left:5px solid}',
  '.alert{border-color:var(--danger);background:#fdecee}.note{border-color:var(--accent);background:#eef3fd}',
  '.alert h2,.note h2{margin:0 0 .25rem;font-size:1.05rem}',
  '.plan-graph{display:block;max-width:100%;height:auto;margin:.5rem 0}',
  '.graph-list{color:var(--muted);font-size:.9rem}',
  // The view's step cards (view-html.ts): commands keep their lines and wrap inside their box.
  '.pg-step,.pg-postcondition,article.step{border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;margin:1rem 0 0}',
  '.pg-step.pg-risky,.pg-postcondition.pg-risky{border:2px solid var(--danger)}',
  '.pg-step h3{font-size:1.05rem;margin:0 0 .25rem}.pg-tool,.pg-meta{color:var(--muted);font-size:.9rem;margin:.25rem 0}',
  '.pg-risks{list-style:none;padding:0;margin:.25rem 0;font-size:.9rem}.pg-risk{color:var(--danger);font-weight:700}.pg-risk::before{content:"⚠ "}',
  '.pg-call p{margin:.5rem 0 0;font-weight:600}.pg-call pre,.pg-detail pre,.pg-consumes pre,.pg-completed pre{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-all;background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:.5rem .75rem}',
  '.pg-people,.pg-plan-facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.35rem 1rem;margin:0 0 1rem}.pg-people dt,.pg-plan-facts dt{font-weight:600;color:var(--muted)}.pg-people dd,.pg-plan-facts dd{margin:0;min-width:0;overflow-wrap:anywhere}',
  '@media (max-width:40rem){.pg-people,.pg-plan-facts{grid-template-columns:minmax(0,1fr);gap:0}.pg-people dd,.pg-plan-facts dd{margin-bottom:.6rem}}',
  // A destructive contract or rollback is framed itself; the step's card is framed by its own call only.
  '.pg-call.pg-risky{border-left:4px solid var(--danger);padding-left:.6rem}',
  '.pg-agent{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.25rem 1rem;margin:.5rem 0}.pg-agent dt{font-weight:600;color:var(--muted)}.pg-agent dd{margin:0;min-width:0;overflow-wrap:anywhere}',
  '.pg-superseded{padding:.75rem 1rem;border-radius:6px;border-left:5px solid var(--danger);background:#fdecee;font-weight:700}',
  // Each card's own fields to change it, right under it.
  'details.change{margin:0 0 1rem;border:1px solid var(--line);border-top:0;border-radius:0 0 8px 8px;padding:.25rem 1rem .75rem;background:#fafafa}summary{cursor:pointer;font-weight:600;padding:.35rem 0}',
  'label{display:block;font-weight:600;margin:.6rem 0 .2rem}',
  'input[type=text],textarea{display:block;width:100%;padding:.45rem .55rem;border:1px solid #767676;border-radius:4px;font:inherit;background:#fff;color:inherit}',
  'textarea{min-height:4.5rem;resize:vertical}textarea.code{white-space:pre;overflow-x:auto}',
  'label.check{display:flex;gap:.5rem;align-items:center}label.check input{width:1.15rem;height:1.15rem;margin:0}',
  'fieldset{border:1px solid var(--line);border-radius:8px;padding:.5rem 1rem 1rem;margin:1rem 0;min-width:0}legend{font-weight:700;padding:0 .35rem}',
  'button{font:inherit;font-weight:600;padding:.55rem 1.1rem;border-radius:6px;border:2px solid #333;background:#fff;color:var(--fg);cursor:pointer;margin:.5rem .5rem 0 0}',
  'button.approve{background:var(--ok);border-color:var(--ok);color:#fff}button.reject{border-color:var(--danger);color:var(--danger)}',
  ':focus-visible{outline:3px solid #f0a500;outline-offset:2px}',
  '.problem{color:var(--danger);font-weight:600;margin:.25rem 0}[aria-invalid=true]{border:2px solid var(--danger)}',
  '.pg-pages{border-top:1px solid var(--line);border-bottom:1px solid var(--line);margin:1rem 0;padding:.25rem 0}.pg-pages ol{display:flex;flex-wrap:wrap;gap:.25rem 1rem;list-style:none;padding:0;margin:.25rem 0}',
  '.muted{color:var(--muted)}.hint{color:var(--muted);font-size:.9rem;margin:.2rem 0}',
  'table{border-collapse:collapse;max-width:100%}th,td{text-align:left;vertical-align:top;padding:.2rem .75rem .2rem 0}',
].join('\n');

/** The stylesheet's CSP source: the one inline style block allowed, by its hash (no `unsafe-inline`). */
const STYLE_SOURCE = `'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'`;

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
  /**
   * An answer that was not recorded: the form as it was posted (shown again, so nothing typed is
   * lost) and the problems found, by field name (`''`: the answer as a whole). @default - a fresh form
   */
  readonly refused?: { readonly form: URLSearchParams; readonly problems: Readonly<Record<string, string>> };
  /**
   * Which page of the gate's view this is (view-pages.ts) and the signed list of the pages shown
   * so far, this one included. @default page 1, only page 1 shown
   */
  readonly pages?: PageState;
  /** @default new Date() */
  readonly now?: Date;
  /**
   * The IANA time zone the deadline is shown in, UTC beside it: the reader's choice (the page's
   * "Times in" form) or the host's (`plangate run`: the machine's). @default UTC
   */
  readonly timeZone?: string;
}

/** Where the reader is in a paginated view: the page shown, the pages shown so far, and their links. */
export interface PageState {
  /** 1-based. */
  readonly current: number;
  /** The pages shown so far, this one included. */
  readonly seen: ReadonlySet<number>;
  /** Their signed list (view-pages.ts), posted with the answer. */
  readonly token: string;
  /** The address of a page, carrying the list. */
  readonly href: (page: number) => string;
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

/** A human step's form names each output it reports `output.<name>`. */
export const OUTPUT_FIELD_PREFIX = 'output.';

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
    else if (out.status === 'pending') say('Your approval was recorded; ' + out.votes + ' of the required approvals so far.' + (out.held ? ' The gate still waits: ' + out.held + '.' : ''));
    else if (out.status === 'modified') say('Your modifications made revision ' + out.revision + ': every approver, you included, reviews and approves it again.');
    else say('Your answer (' + out.decision.decision + ') was recorded.');
  })().catch(() => say('Something went wrong; nothing was sent if no answer was confirmed. Open the approval link again.'));
})();`;

/** The Content-Security-Policy of a page without script: its one stylesheet (by hash), forms post back here only. */
export const PAGE_CSP = `default-src 'none'; style-src ${STYLE_SOURCE}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;

/**
 * The Content-Security-Policy of a sign-in page: exactly {@link SIGN_IN_SCRIPT} may run (by its
 * hash), and it may talk only to this origin and the hosted UI's domain.
 */
export function signInPageCsp(signIn: SignInConfig): string {
  const hash = createHash('sha256').update(SIGN_IN_SCRIPT).digest('base64');
  return `default-src 'none'; style-src ${STYLE_SOURCE}; script-src 'sha256-${hash}'; connect-src 'self' ${new URL(signIn.domainUrl).origin}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;
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

/**
 * The approval page of `gate`, whose form posts to `action`: what is asked, who submitted it, who
 * may approve, the votes so far and the deadline; the plan's graph (an SVG drawn here) and what
 * changed; each step as a card with exactly what it runs (the gate view's cards, view-html.ts),
 * each with its own fields to change or skip it; and the answers as buttons. No script (except
 * the sign-in's, on shared links): it works with JavaScript off and by keyboard alone.
 */
export async function approvalPage(
  gate: GateView,
  action: string,
  extras: ApprovalPageExtras = {},
): Promise<string> {
  const now = extras.now ?? new Date();
  const graph = stepGraph(gate);
  const svg = graph.length > 0 ? await graphSvg(graph) : undefined;
  const problems = extras.refused?.problems ?? {};
  const posted = extras.refused?.form;
  const shown = shownOfGate(gate);
  const paging = pagingOf(shown, extras.pages);
  const who = extras.answeringAs
    ? [
        `<p class="note"><strong>You are answering as ${escapeHtml(extras.answeringAs)}</strong> (this link was sent to that address only; do not forward it).</p>`,
      ]
    : extras.signIn
      ? [
          '<p class="note">You will be asked to sign in when you answer; your answer is recorded under your account.</p>',
        ]
      : [];
  const body = [
    `<h1>${escapeHtml(HEADINGS[gate.kind])}</h1>`,
    ...refusedSummary(problems),
    gateWarningsHtml(shown),
    ...who,
    factsHtml(gate),
    gatePeopleHtml(shown, { now, ...(extras.timeZone ? { timeZone: extras.timeZone } : {}) }),
    timeZoneForm(extras.timeZone),
    ...(gate.changes ? [changesHtml(gate.changes)] : []),
    ...(graph.length > 0 ? [graphHtml(graph, svg, gate.kind === 'plan' ? 'plan' : 'step')] : []),
    ...(extras.checklist
      ? [
          '<h2>Progress</h2>',
          // The page's own address: no script, so reloading it is how the checklist catches up.
          '<p><a href="">Refresh</a> to see the steps done since this page was loaded.</p>',
          `<pre>${visibleHtml(extras.checklist)}</pre>`,
        ]
      : []),
    ...(extras.notice ? [`<p role="note"><strong>${escapeHtml(extras.notice)}</strong></p>`] : []),
    `<form id="plangate-answer" method="post" action="${escapeHtml(action)}">`,
    // The form's default button, disabled: Enter in a field submits nothing, so no answer is ever
    // sent by accident (the first button would otherwise be Approve).
    '<button type="submit" disabled hidden aria-hidden="true" tabindex="-1"></button>',
    // An answer binds to the content shown: the latest revision when approvers modified it.
    `<input type="hidden" name="digest" value="${escapeHtml(contentDigest(gate))}">`,
    ...(extras.formToken
      ? [`<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${escapeHtml(extras.formToken)}">`]
      : []),
    `<input type="hidden" name="${SEEN_FIELD}" value="${escapeHtml(paging.token)}">`,
    `<input type="hidden" name="${PAGE_PARAM}" value="${paging.current}">`,
    ...stepsHtml(gate, posted, problems, paging),
    ...controlsHtml(gate, posted, problems, paging),
    '</form>',
    ...(extras.signIn && !extras.answeringAs ? [signInElements(extras.signIn, 'answer')] : []),
  ].join('\n');
  return page(HEADINGS[gate.kind], body);
}

/**
 * The steps a plan or step gate may change, as its page offers them (the form's fields are
 * theirs): the gate view's steps, with their calls (as the latest revision changed them); without a view (an older gate), the plan's
 * step ids, which may only be skipped.
 */
export function editableSteps(gate: GateView): EditableStep[] {
  // A modified gate is changed further from its revision: its fields show the revision's values.
  const shown = shownOfGate(gate);
  if (gate.kind === 'step') return shown.stepGate ? [shown.stepGate.step] : [];
  if (gate.kind !== 'plan') return [];
  if (shown.view) return shown.view.steps;
  return (gate.summary?.graph ?? []).map((s) => ({ id: s.id, tool: s.tool }));
}

/**
 * "Times in [zone] Show": a GET form (no script) that reloads the page with `?tz=<zone>`, so the
 * deadline is shown in the reader's own time zone, whatever the server's.
 */
function timeZoneForm(current: string | undefined): string {
  const zones = Intl.supportedValuesOf('timeZone');
  return [
    '<form method="get" class="pg-tz">',
    `<label for="pg-tz">Show times in (IANA time zone)</label><input type="text" id="pg-tz" name="tz" list="pg-zones" value="${escapeHtml(current ?? 'UTC')}" autocomplete="off">`,
    `<datalist id="pg-zones">${zones.map((z) => `<option value="${escapeHtml(z)}">`).join('')}</datalist>`,
    '<button type="submit">Show</button>',
    '</form>',
  ].join('');
}

/** What is asked: the plan, its objective, the step, the failure or the work, the question, the digest. */
function factsHtml(gate: GateView): string {
  const rows: [string, string][] = [['Plan', `${escapeHtml(gate.planId)} v${gate.planVersion}`]];
  if (gate.summary) rows.push(['Objective', visibleHtml(gate.summary.objective)]);
  if (gate.stepId)
    rows.push([
      'Step',
      `<code>${escapeHtml(gate.stepId)}</code>${gate.description ? `: ${visibleHtml(gate.description)}` : ''}`,
    ]);
  if (gate.human) rows.push(['What to do', visibleHtml(gate.human.instructions)]);
  if (gate.failure)
    rows.push([
      'Failure',
      `${escapeHtml(gate.failure.failureClass)} (${visibleHtml(gate.failure.error)}): ${visibleHtml(gate.failure.message)}`,
    ]);
  if (gate.failure?.policyDenial)
    rows.push(['Denied by policy', visibleHtml(gate.failure.policyDenial.reason)]);
  if (gate.question) rows.push(['Question asked', visibleHtml(gate.question)]);
  rows.push(['Plan digest', `<code>${escapeHtml(gate.planDigest)}</code>`]);
  return `<dl class="facts">${rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

/** Names, escaped, as "a", "a and b", "a, b and c". */
export function nameList(names: readonly string[], last: 'and' | 'or' = 'and'): string {
  const escaped = names.map(escapeHtml);
  if (escaped.length <= 1) return escaped.join('');
  return `${escaped.slice(0, -1).join(', ')} ${last} ${escaped.at(-1)}`;
}

/** "2025-06-01 14:30 UTC": an instant for a page that cannot know the reader's time zone. */
export function utcText(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The problems of an answer that was not recorded, each linking to its field. */
function refusedSummary(problems: Readonly<Record<string, string>>): string[] {
  const entries = Object.entries(problems);
  if (entries.length === 0) return [];
  // A field's problem links to the field; the others (the answer, the steps skipped) to themselves.
  const items = entries.map(
    ([name, message]) =>
      `<li><a href="#${fieldId(name)}${name === 'decision' || name === SKIP_FIELD ? '-problem' : ''}">${escapeHtml(message)}</a></li>`,
  );
  return [
    `<div class="alert" role="alert"><h2>Your answer was not recorded</h2><ul>${items.join('')}</ul></div>`,
  ];
}

/** A field's element id: its name, hashed (names hold the plan author's argument names). */
function fieldId(name: string): string {
  return `f-${createHash('sha256').update(name).digest('hex').slice(0, 12)}`;
}

/** A field's problem beside it, and the attributes that tie the two together. */
function problemOf(
  problems: Readonly<Record<string, string>>,
  name: string,
): { attrs: string; html: string } {
  const problem = problems[name];
  if (problem === undefined) return { attrs: '', html: '' };
  const id = `${fieldId(name)}-problem`;
  return {
    attrs: ` aria-invalid="true" aria-describedby="${id}"`,
    html: `<p class="problem" id="${id}">${escapeHtml(problem)}</p>`,
  };
}

/**
 * The steps as cards (the gate view's), each followed by its own fields to change its arguments
 * or skip it; then the plan's postconditions, budget and secrets. Inside the answer form.
 */
function stepsHtml(
  gate: GateView,
  posted: URLSearchParams | undefined,
  problems: Readonly<Record<string, string>>,
  paging: Paging,
): string[] {
  const canSkip = gate.kind === 'plan';
  const change = (step: EditableStep) => changeHtml(step, canSkip, posted, problems);
  // What the gate's current content runs: a revision's changes applied.
  const shown = shownOfGate(gate);
  if (gate.kind === 'step') {
    if (!shown.stepGate) return [];
    // The step's fields go right under its card, the section's first article (before what it
    // consumes and what already ran).
    const section = stepGateHtml(shown.stepGate);
    const end = section.indexOf('</article>') + '</article>'.length;
    return [`${section.slice(0, end)}\n${change(shown.stepGate.step)}${section.slice(end)}`];
  }
  if (gate.kind !== 'plan') return [];
  const view = shown.view;
  if (view) {
    const { notListed } = omitted(view);
    const total = view.truncated?.total ?? view.steps.length;
    const onPage = paging.pages[paging.current - 1] ?? [];
    const last = paging.current === paging.pages.length;
    return [
      `<h2 id="plangate-steps">What will run: ${total} step${total === 1 ? '' : 's'}</h2>`,
      ...pagesNavHtml(paging, view, 'top'),
      ...onPage.map(
        (i) => `${stepCardHtml(view.steps[i] as StepView, i + 1)}\n${change(view.steps[i] as StepView)}`,
      ),
      ...(notListed > 0 && last
        ? [`<p class="pg-omitted">… ${notListed} more steps are not listed here.</p>`]
        : []),
      problemOf(problems, SKIP_FIELD).html,
      ...pagesNavHtml(paging, view, 'bottom'),
      planFactsHtml(view),
    ];
  }
  // An older gate without a view: the steps by name, which may only be skipped.
  return [
    '<h2 id="plangate-steps">What will run</h2>',
    ...(gate.summary?.graph ?? []).map((step) =>
      [
        '<article class="step">',
        `<h3><code>${escapeHtml(step.id)}</code> ${visibleHtml(step.name)}</h3>`,
        `<p class="pg-tool">via ${escapeHtml(step.tool)}</p>`,
        '</article>',
        change({ id: step.id, tool: step.tool }),
      ].join('\n'),
    ),
    problemOf(problems, SKIP_FIELD).html,
  ];
}

/** A step's "Change" disclosure: a field per argument it offers and, at a plan gate, "Skip this step". */
function changeHtml(
  step: EditableStep,
  canSkip: boolean,
  posted: URLSearchParams | undefined,
  problems: Readonly<Record<string, string>>,
): string {
  const fields = argFields(step);
  const skipped = posted?.getAll(SKIP_FIELD).includes(step.id) ?? false;
  if (fields.length === 0 && !canSkip) return '';
  // Open again when the answer came back with a change or a problem in it, so nothing is hidden.
  const open =
    skipped ||
    fields.some((f) => problems[argFieldName(step.id, f.key)] !== undefined || changedIn(posted, step.id, f));
  const what = fields.length > 0 ? (canSkip ? 'Change or skip' : 'Change') : 'Skip';
  return [
    `<details class="change"${open ? ' open' : ''}>`,
    `<summary>${what} <code>${escapeHtml(step.id)}</code></summary>`,
    ...fields.map((field) => fieldHtml(step.id, field, posted, problems)),
    ...(canSkip
      ? [
          `<label class="check"><input type="checkbox" name="${SKIP_FIELD}" value="${escapeHtml(step.id)}"${skipped ? ' checked' : ''}> Skip this step (steps that wait for it will not run)</label>`,
        ]
      : []),
    '</details>',
  ].join('\n');
}

/** Whether the posted form changed this field (so its disclosure opens again). */
function changedIn(posted: URLSearchParams | undefined, stepId: string, field: ArgField): boolean {
  const given = posted?.get(argFieldName(stepId, field.key));
  return given != null && given.replace(/\r\n?/g, '\n') !== fieldText(field);
}

/** One argument's field, labelled, prefilled with its value (or what was posted), its problem beside it. */
function fieldHtml(
  stepId: string,
  field: ArgField,
  posted: URLSearchParams | undefined,
  problems: Readonly<Record<string, string>>,
): string {
  const name = argFieldName(stepId, field.key);
  const id = fieldId(name);
  const value = posted?.get(name) ?? fieldText(field);
  const problem = problemOf(problems, name);
  const label = `<label for="${id}">${escapeHtml(field.key)}${field.input === 'json' ? ' <span class="muted">(JSON)</span>' : ''}</label>`;
  const multiline = field.input === 'command' || value.includes('\n');
  // A text area drops one line break right after its start tag: one more keeps a value's own.
  const control = multiline
    ? `<textarea id="${id}" name="${escapeHtml(name)}" class="code" rows="${Math.min(12, Math.max(3, value.split('\n').length + 1))}" spellcheck="false" autocapitalize="off"${problem.attrs}>${value.startsWith('\n') ? '\n' : ''}${escapeHtml(value)}</textarea>`
    : `<input type="text" id="${id}" name="${escapeHtml(name)}" value="${escapeHtml(value)}" spellcheck="false" autocapitalize="off"${field.input === 'json' ? ' class="code"' : ''}${problem.attrs}>`;
  return `${label}${control}${problem.html}`;
}

/** The answers the gate takes, as buttons (with the fields they use). */
function controlsHtml(
  gate: GateView,
  posted: URLSearchParams | undefined,
  problems: Readonly<Record<string, string>>,
  paging: Paging,
): string[] {
  const button = (decision: string, label: string, kind = '') =>
    `<button type="submit" name="decision" value="${escapeHtml(decision)}"${kind ? ` class="${kind}"` : ''}>${escapeHtml(label)}</button>`;
  const text = (name: string, label: string, hint?: string) => {
    const id = fieldId(name);
    const problem = problemOf(problems, name);
    return `<label for="${id}">${escapeHtml(label)}</label>${hint ? `<p class="hint">${escapeHtml(hint)}</p>` : ''}<textarea id="${id}" name="${escapeHtml(name)}" rows="2"${problem.attrs}>${escapeHtml(posted?.get(name) ?? '')}</textarea>${problem.html}`;
  };
  const answer = problemOf(problems, 'decision');
  switch (gate.kind) {
    case 'plan':
    case 'step': {
      const editable = gate.kind === 'plan' || editableSteps(gate).some((step) => argFields(step).length > 0);
      // Nobody approves what they could not read: a view that hides a command offers no Approve,
      // nor does a page before every page of the view was shown.
      const hides = shownOfGate(gate).hiddenCommands !== undefined;
      const unseen = paging.pages.map((_, i) => i + 1).filter((p) => !paging.seen.has(p));
      const approvable = !hides && unseen.length === 0;
      return [
        '<h2>Your answer</h2>',
        answer.html,
        ...(!hides && unseen.length > 0
          ? [
              `<p class="note" id="plangate-unseen">Approve is offered once you have seen every page of the plan: you have seen ${paging.seen.size} of ${paging.pages.length} pages; not yet ${unseen.map((p) => `<a href="${escapeHtml(paging.href(p))}">page ${p}</a>`).join(', ')}.</p>`,
            ]
          : []),
        ...(approvable
          ? [
              `<fieldset><legend>Approve</legend><p class="hint">${gate.kind === 'plan' ? 'The plan runs as shown' : 'The step runs as shown'}${editable ? ', or with the changes you made above' : ''}.</p>`,
              button('APPROVE', 'Approve', 'approve'),
              ...(editable ? [button('APPROVE_WITH_MODIFICATIONS', 'Approve with my changes')] : []),
              '</fieldset>',
            ]
          : hides
            ? [
                '<p class="alert">This gate cannot be approved: its view does not show every command that runs (see the top of the page).</p>',
              ]
            : []),
        '<fieldset><legend>Ask</legend>',
        text('question', 'Question', 'Nothing is approved: the gate asks again with your question.'),
        button('ASK_FOR_CLARIFICATION', 'Ask for clarification'),
        '</fieldset>',
        '<fieldset><legend>Reject</legend>',
        text(
          'reason',
          'Reason',
          gate.kind === 'plan'
            ? 'The run stops here.'
            : 'The step is skipped; steps that wait for it do not run.',
        ),
        button('REJECT', 'Reject', 'reject'),
        '</fieldset>',
      ];
    }
    case 'escalation':
      return [
        '<h2>Your answer</h2>',
        answer.html,
        ...(gate.failure?.policyDenial
          ? [`<p class="note">${escapeHtml(gate.failure.policyDenial.advice)}</p>`]
          : gate.failure?.failureClass === 'permission'
            ? [
                '<p class="note">Configure the credentials out of band (environment, vault) before you retry. Never paste them here.</p>',
              ]
            : []),
        ...(gate.abortRollsBack ? [abortRollbacksHtml(gate.abortRollsBack)] : []),
        `<p>${button('RETRY', 'Retry', 'approve')} ${button('SKIP', 'Skip')} ${button('ABORT', 'Abort', 'reject')}</p>`,
        // The model's suggestion (shown above) is one more choice, never the default.
        ...(gate.recovery ? [`<p>${button(ACCEPT_SUGGESTION, 'Accept the suggestion')}</p>`] : []),
      ];
    case 'human': {
      const outputs = (gate.human?.outputs ?? []).map((name) => {
        const field = `${OUTPUT_FIELD_PREFIX}${name}`;
        const id = fieldId(field);
        const problem = problemOf(problems, field);
        return `<label for="${id}">${escapeHtml(name)}</label><input type="text" id="${id}" name="${escapeHtml(field)}" value="${escapeHtml(posted?.get(field) ?? '')}"${problem.attrs}>${problem.html}`;
      });
      return [
        '<h2>Your report</h2>',
        answer.html,
        '<fieldset><legend>Done</legend>',
        ...outputs,
        button('DONE', 'Done', 'approve'),
        '</fieldset>',
        '<fieldset><legend>Could not do it</legend>',
        text('reason', 'What went wrong'),
        button('FAILED', 'Could not do it', 'reject'),
        '</fieldset>',
      ];
    }
  }
}

/** The pages of the gate's view and where the reader is in them. */
interface Paging extends PageState {
  readonly pages: readonly (readonly number[])[];
}

/** The page to show (clamped to the view's pages), and the pages shown so far: this one at least. */
function pagingOf(shown: ShownGate, state: PageState | undefined): Paging {
  const pages = gatePages(shown);
  const current = Math.min(Math.max(1, state?.current ?? 1), pages.length);
  return {
    pages,
    current,
    seen: new Set([...(state?.seen ?? []), current]),
    token: state?.token ?? '',
    href: state?.href ?? ((page) => `?${PAGE_PARAM}=${page}`),
  };
}

/**
 * Where the reader is among the view's pages: "Page 2 of 5 (steps 8–14)", a link to every page
 * (those seen marked), and the next page. Nothing when the view is one page.
 */
function pagesNavHtml(paging: Paging, view: ApprovalView, where: 'top' | 'bottom'): string[] {
  if (paging.pages.length === 1) return [];
  const range = (page: number) => {
    const steps = paging.pages[page - 1] ?? [];
    const first = (steps[0] ?? 0) + 1;
    const last = (steps.at(-1) ?? 0) + 1;
    return first === last ? `step ${first}` : `steps ${first}–${last}`;
  };
  const links = paging.pages.map((_, i) => {
    const page = i + 1;
    const label = `${page} (${range(page)})${paging.seen.has(page) ? ' ✓ seen' : ''}`;
    return page === paging.current
      ? `<li aria-current="page"><strong>${escapeHtml(label)}</strong></li>`
      : `<li><a href="${escapeHtml(paging.href(page))}">${escapeHtml(label)}</a></li>`;
  });
  const next = paging.current < paging.pages.length ? paging.current + 1 : undefined;
  return [
    `<nav class="pg-pages" aria-label="Pages of the plan (${where})">`,
    `<p>Page ${paging.current} of ${paging.pages.length} (${escapeHtml(range(paging.current))} of ${view.steps.length}); every command is shown whole on its page.</p>`,
    `<ol>${links.join('')}</ol>`,
    ...(next
      ? [
          `<p><a class="pg-next" href="${escapeHtml(paging.href(next))}">Next page (${next} of ${paging.pages.length})</a></p>`,
        ]
      : []),
    '</nav>',
  ];
}

/** A page with a title and a message (and, optionally, more HTML after it). */
export function messagePage(title: string, message: string, more = ''): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>${more}`);
}

/** The page frame: the one stylesheet, and `head` extras (a refresh). */
export function page(title: string, body: string, head = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${head}<title>${escapeHtml(title)}</title><style>${PAGE_STYLE}</style></head><body><main>${body}</main></body></html>`;
}

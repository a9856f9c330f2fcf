/**
 * The approvals HTTP API:
 * - `GET /approvals/{link id}` redeems a signed link into a page session (page-session.ts) and
 *   redirects (303) to `/approvals/{handle}`, which shows the approval page (for a recipient-bound
 *   link: who answers; for a shared link with sign-in configured: the page that signs in first), so
 *   no signature stays in the address bar or the history; asked for JSON, it answers the gate;
 * - `POST /approvals/{id}` answers as the caller the request names (JWT claims on AWS, a header
 *   locally); `{id}` is a link id (scripts) or a page's handle (its session cookie and form token);
 * - `POST /approvals/{id}/as-recipient` answers as the recipient a recipient-bound link names
 *   (no JWT: the link's signature, or the session it was redeemed into, is the proof);
 * - `GET /approvals/signed-in` is where the hosted UI returns after sign-in;
 * - `POST /slack/interactions` answers from a Slack button (slack-interactions.ts).
 * Approvals checks the link (signed, expiring, single-use), the approver against the plan's
 * approval policy and the plan digest the answer was given for.
 */
import {
  type ApprovalPageExtras,
  approvalPage,
  FORM_TOKEN_FIELD,
  messagePage,
  PAGE_CSP,
  SIGN_IN_CALLBACK_PATH,
  type SignInConfig,
  signInCallbackPage,
  signInPageCsp,
} from '../gate/approval-page.ts';
import { type ApprovalsDeps, approvalsFor } from '../gate/gate.ts';
import type { GateView } from '../gate/gate-item.ts';
import { ApprovalError, recipientOf } from '../gate/links.ts';
import { slackDecisionUpdater } from '../notify/slack.ts';
import {
  bodyText,
  type HttpEvent,
  type HttpResult,
  headerOf,
  html,
  type IdentitySource,
  identityOf,
  json,
  MAX_BODY_BYTES,
  pathSegments,
} from './http.ts';
import {
  formTokenMatches,
  HANDLE,
  isLocalHttp,
  type PageSession,
  PageSessions,
  type SessionRefusal,
} from './page-session.ts';
import { handleSlackInteraction, type SlackInteractionsConfig } from './slack-interactions.ts';

export interface ApprovalsApiDeps extends ApprovalsDeps {
  readonly identity: IdentitySource;
  /** Answering from Slack buttons (`POST /slack/interactions`). @default - the route answers 404 */
  readonly slack?: SlackInteractionsConfig;
  /** The approvers' hosted sign-in, used by pages of shared links. @default - no sign-in on the page */
  readonly signIn?: SignInConfig;
  /**
   * What the page's host adds to a gate's page, read at each page load (`plangate run`: the plan's
   * checklist as the execution stands, and who may answer when the page's person may not).
   * @default - nothing
   */
  readonly pageExtras?: (gate: GateView, answeringAs: string | undefined) => Promise<HostPageExtras>;
  /**
   * Rewrites an answer before Approvals checks and records it, for a host whose gate means more
   * than the machine's (`plangate run --goal`: a question at the plan gate ends this version and
   * goes back to the planner). The rewritten answer meets the same checks.
   * @default - answers are recorded as given
   */
  readonly reviseAnswer?: AnswerReviser;
}

/** What a host may add to the approval page (lib/runtime/gate/approval-page.ts). */
export type HostPageExtras = Pick<ApprovalPageExtras, 'checklist' | 'notice'>;

/** See {@link ApprovalsApiDeps.reviseAnswer}: the answer to record, what to tell the person, and who to tell once it is recorded. */
export type AnswerReviser = (
  gate: GateView,
  decision: Readonly<Record<string, unknown>>,
) =>
  | {
      readonly decision: Record<string, unknown>;
      /** Shown with "recorded". */
      readonly note: string;
      /** Called once the rewritten answer is recorded. */
      readonly onRecorded: () => void;
    }
  | undefined;

/** The path suffix of answering through a recipient-bound link. */
export const AS_RECIPIENT = 'as-recipient';
const CALLBACK_SEGMENT = SIGN_IN_CALLBACK_PATH.split('/').pop() as string;

const STATUS_OF: Record<ApprovalError['reason'], number> = {
  malformed: 400,
  invalid: 400,
  forged: 404,
  'not-found': 404,
  forbidden: 403,
  expired: 410,
  used: 409,
  'digest-mismatch': 409,
};

export async function handleApprovalsRequest(event: HttpEvent, deps: ApprovalsApiDeps): Promise<HttpResult> {
  const segments = pathSegments(event);
  const method = event.requestContext.http.method.toUpperCase();
  const wantsJson = (headerOf(event, 'accept') ?? '').includes('application/json') || isJsonBody(event);
  const fail = (status: number, title: string, message: string): HttpResult =>
    wantsJson ? json(status, { error: title, message }) : html(status, messagePage(title, message));
  const [resource, linkId, ...rest] = segments ?? [];
  if (resource === 'slack' && linkId === 'interactions' && rest.length === 0) {
    if (!deps.slack) return json(404, { error: 'Slack is not configured' });
    if (method !== 'POST') return json(405, { error: 'use POST' });
    return handleSlackInteraction(event, approvalsOf(deps), deps.slack);
  }
  const asRecipient = rest.length === 1 && rest[0] === AS_RECIPIENT;
  if (resource !== 'approvals' || linkId === undefined || (rest.length > 0 && !asRecipient))
    return fail(404, 'Not found', 'no such page');
  if (linkId === CALLBACK_SEGMENT && rest.length === 0 && method === 'GET') {
    if (!deps.signIn) return fail(404, 'Not found', 'sign-in is not configured');
    return withCsp(html(200, signInCallbackPage(deps.signIn)), signInPageCsp(deps.signIn));
  }
  const approvals = approvalsOf(deps);
  const sessions = new PageSessions(deps.signingKey);
  try {
    if (method === 'GET') {
      if (asRecipient) return fail(405, 'Method not allowed', 'open the approval link itself');
      if (HANDLE.test(linkId)) {
        const session = sessions.read(event, linkId);
        if ('refused' in session) return sessionRefused(session);
        const gate = await approvals.describe(session.link);
        if (wantsJson) return json(200, shownGate(gate));
        return await pageOf(gate, session, `/approvals/${linkId}`, deps);
      }
      const gate = await approvals.describe(linkId);
      if (wantsJson) return json(200, shownGate(gate));
      // A person opened the link: redeem it into a page session and leave its signature behind.
      const opened = sessions.open(linkId, gate.expiresAtEpoch, { secure: !isLocalHttp(event) });
      return {
        statusCode: 303,
        headers: {
          location: `/approvals/${opened.handle}`,
          'cache-control': 'no-store',
          'referrer-policy': 'no-referrer',
        },
        cookies: [opened.cookie],
        body: '',
      };
    }
    if (method !== 'POST') return fail(405, 'Method not allowed', 'use GET or POST');
    const by = asRecipient ? undefined : identityOf(event, deps.identity);
    if (!asRecipient && !by) return fail(401, 'Who are you?', 'the request does not say who is answering');
    const text = bodyText(event);
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) return fail(413, 'Too large', 'the answer is too large');
    // A page session's post answers through the link the session was opened with.
    const session = HANDLE.test(linkId) ? sessions.read(event, linkId) : undefined;
    if (session && 'refused' in session) return sessionRefused(session);
    const link = session ? session.link : linkId;
    const gate = await approvals.describe(link);
    const answer = isJsonBody(event) ? jsonAnswer(text) : formAnswer(new URLSearchParams(text), gate.kind);
    if (typeof answer === 'string') return fail(400, 'Not recorded', answer);
    // Refused and audited (refuse throws): another site's page can never read the form token.
    if (session && !formTokenMatches(session, answer.formToken))
      await approvals.refuse(
        link,
        new ApprovalError(
          'forbidden',
          'this answer did not come from its approval page (its form token is missing or wrong): reload the page and answer again',
        ),
        by,
      );
    const revised = deps.reviseAnswer?.(gate, answer.decision);
    const given = { digest: answer.digest, decision: revised?.decision ?? answer.decision };
    const outcome = by
      ? await approvals.answer(link, { by, ...given })
      : await approvals.answerAsRecipient(link, given);
    revised?.onRecorded();
    if (wantsJson) return json(200, revised ? { ...outcome, note: revised.note } : outcome);
    return html(
      200,
      messagePage(
        'Recorded',
        `${
          outcome.status === 'pending'
            ? `Your approval was recorded; ${outcome.votes} of the required approvals so far.`
            : `Your answer (${outcome.decision.decision}) was recorded.`
        }${revised ? ` ${revised.note}` : ''}`,
      ),
    );
  } catch (error) {
    if (error instanceof ApprovalError) return fail(STATUS_OF[error.reason], 'Not recorded', error.message);
    throw error;
  }

  function sessionRefused(refusal: SessionRefusal): HttpResult {
    return fail(refusal.refused === 'expired' ? 410 : 403, 'Open the link again', refusal.message);
  }
}

/** A gate as JSON: its votes counted, not listed; not its Slack messages (their buttons hold the shared link). */
function shownGate(gate: GateView) {
  const { votes, slackMessages: _messages, ...shown } = gate;
  return { ...shown, votes: votes.length };
}

/**
 * The page of a session: a recipient-bound link's form posts as that recipient (no script); a
 * shared link's page signs the person in first (where sign-in is configured).
 */
async function pageOf(
  gate: GateView,
  session: PageSession,
  path: string,
  deps: ApprovalsApiDeps,
): Promise<HttpResult> {
  // describe verified the link, so the recipient it names is the one its signature binds.
  const recipient = recipientOf(session.link);
  const formToken = session.form;
  const hosted = (await deps.pageExtras?.(gate, recipient)) ?? {};
  if (recipient !== undefined)
    return withCsp(
      html(
        200,
        approvalPage(gate, `${path}/${AS_RECIPIENT}`, { ...hosted, answeringAs: recipient, formToken }),
      ),
      PAGE_CSP,
    );
  if (deps.signIn)
    return withCsp(
      html(200, approvalPage(gate, path, { ...hosted, signIn: deps.signIn, formToken })),
      signInPageCsp(deps.signIn),
    );
  return withCsp(html(200, approvalPage(gate, path, { ...hosted, formToken })), PAGE_CSP);
}

/** The page's own policy replaces the default one of `html` (which allows no script at all). */
function withCsp(result: HttpResult, csp: string): HttpResult {
  return { ...result, headers: { ...result.headers, 'content-security-policy': csp } };
}

/** An answer as a page or a script gives it: the digest reviewed and the decision's fields (checked by Approvals). */
export interface FormAnswer {
  readonly digest: string;
  readonly decision: Record<string, unknown>;
  /** The page's form token (page-session.ts), when the answer came from a page. */
  readonly formToken?: string;
}

function isJsonBody(event: HttpEvent): boolean {
  return (headerOf(event, 'content-type') ?? '').includes('application/json');
}

/** `{"digest": "...", "decision": "APPROVE", ...fields}`. */
function jsonAnswer(text: string): FormAnswer | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the body is not JSON';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return 'the body must be a JSON object';
  const {
    digest,
    by: _ignored,
    [FORM_TOKEN_FIELD]: formToken,
    ...decision
  } = value as Record<string, unknown>;
  if (typeof digest !== 'string' || digest === '') return 'digest: say which plan digest you reviewed';
  return { digest, decision, ...(typeof formToken === 'string' ? { formToken } : {}) };
}

/** The approval page's form: `decision`, `digest`, and the decision's own fields. */
export function formAnswer(form: URLSearchParams, kind: string): FormAnswer | string {
  const digest = form.get('digest') ?? '';
  if (!digest) return 'digest: say which plan digest you reviewed';
  const decision = form.get('decision') ?? '';
  const text = (name: string) => (form.get(name) ?? '').trim();
  const fields: Record<string, unknown> = { decision };
  switch (decision) {
    case 'APPROVE_WITH_MODIFICATIONS': {
      if (kind === 'plan')
        fields.skipSteps = text('skipSteps')
          .split(/[\s,]+/)
          .filter(Boolean);
      if (text('argOverrides')) {
        try {
          fields.argOverrides = JSON.parse(text('argOverrides'));
        } catch {
          return 'argOverrides: not JSON (write {"<step id>": {"<arg>": value}})';
        }
      }
      break;
    }
    case 'ASK_FOR_CLARIFICATION':
      fields.question = text('question');
      break;
    case 'REJECT':
    case 'FAILED':
      fields.reason =
        text('reason') || (decision === 'REJECT' ? 'rejected on the approval page' : 'not done');
      break;
    case 'DONE': {
      const outputs: Record<string, string> = {};
      for (const [name, value] of form) if (name.startsWith('output.')) outputs[name.slice(7)] = value;
      fields.outputs = outputs;
      break;
    }
  }
  const formToken = form.get(FORM_TOKEN_FIELD);
  return { digest, decision: fields, ...(formToken ? { formToken } : {}) };
}

/** The approvals service; with Slack configured, a decision made here also shows in the gate's message. */
function approvalsOf(deps: ApprovalsApiDeps) {
  return approvalsFor(
    deps.slack && !deps.onDecided ? { ...deps, onDecided: slackDecisionUpdater(deps.slack.client) } : deps,
  );
}

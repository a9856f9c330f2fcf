/**
 * The approvals HTTP API:
 * - `GET /approvals/{link id}` redeems a signed link into a page session (page-session.ts) and
 *   redirects (303) to `/approvals/{handle}`, which shows the approval page (for a recipient-bound
 *   link: who answers; for a shared link with sign-in configured: the page that signs in first), so
 *   no signature stays in the address bar or the history; asked for JSON, it answers the gate. A
 *   link whose gate was decided is redeemed too: its page says who decided, and links to progress;
 * - `POST /approvals/{id}` answers as the caller the request names (JWT claims on AWS, a header
 *   locally); `{id}` is a link id (scripts) or a page's handle (its session cookie and form token);
 *   a page's answer is answered with what happens next;
 * - `POST /approvals/{id}/as-recipient` answers as the recipient a recipient-bound link names
 *   (no JWT: the link's signature, or the session it was redeemed into, is the proof);
 * - `GET /approvals/{handle}/progress` shows a page's run as it goes on (its session cookie);
 * - `GET /approvals/signed-in` is where the hosted UI returns after sign-in;
 * - `POST /slack/interactions` answers from a Slack button (slack-interactions.ts).
 * Approvals checks the link (signed, expiring, single-use), the approver against the plan's
 * approval policy and the plan digest the answer was given for.
 */
import { outcomePage, progressPage, refusalPage } from '../gate/answer-pages.ts';
import {
  type ApprovalPageExtras,
  approvalPage,
  editableSteps,
  FORM_TOKEN_FIELD,
  messagePage,
  OUTPUT_FIELD_PREFIX,
  PAGE_CSP,
  type PageState,
  SIGN_IN_CALLBACK_PATH,
  type SignInConfig,
  signInCallbackPage,
  signInPageCsp,
} from '../gate/approval-page.ts';
import { type ApprovalsDeps, approvalsFor } from '../gate/gate.ts';
import { contentDigest, type GateView } from '../gate/gate-item.ts';
import { ApprovalError, recipientOf } from '../gate/links.ts';
import { ModificationRefusedError } from '../gate/modification-check.ts';
import { formProblemsOf, modificationsFromForm } from '../gate/modifications.ts';
import { acceptedDecision } from '../gate/recovery-advice.ts';
import { revisedStepGate, revisedView } from '../gate/revised-view.ts';
import { shownOfGate } from '../gate/shown-gate.ts';
import { gatePages, PAGE_PARAM, SEEN_FIELD, SeenPages } from '../gate/view-pages.ts';
import { wholeGateOf } from '../gate/whole-view.ts';
import { readEvents } from '../journal/journal.ts';
import { StoredPlanMismatchError } from '../journal/stored-plans.ts';
import { slackDecisionUpdater } from '../notify/slack.ts';
import { ACCEPT_SUGGESTION } from '../payloads/index.ts';
import {
  bodyText,
  groupsOf,
  type HttpEvent,
  type HttpResult,
  headerOf,
  html,
  type IdentitySource,
  identityOf,
  json,
  MAX_BODY_BYTES,
  pathSegments,
  subjectOf,
} from './http.ts';
import {
  formTokenMatches,
  HANDLE,
  isLocalHttp,
  type PageSession,
  PageSessions,
  SESSION_SECONDS,
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
  /**
   * The time zone pages show deadlines in until their reader chooses one (`?tz=`): `plangate run`
   * and `serve` give the machine's. @default UTC
   */
  readonly displayTimeZone?: string;
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
/** The path suffix of a page's progress: `/approvals/{handle}/progress`. */
export const PROGRESS = 'progress';
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
  // Gone for good: a later version of the plan is the one to review.
  superseded: 410,
};

export async function handleApprovalsRequest(event: HttpEvent, deps: ApprovalsApiDeps): Promise<HttpResult> {
  const segments = pathSegments(event);
  const method = event.requestContext.http.method.toUpperCase();
  const wantsJson = (headerOf(event, 'accept') ?? '').includes('application/json') || isJsonBody(event);
  const fail = (status: number, title: string, message: string): HttpResult =>
    wantsJson ? json(status, { error: title, message }) : page(status, messagePage(title, message));
  const [resource, linkId, ...rest] = segments ?? [];
  if (resource === 'slack' && linkId === 'interactions' && rest.length === 0) {
    if (!deps.slack)
      return json(404, {
        error: 'Slack is not configured',
        message: 'this platform posts no gates to Slack',
      });
    if (method !== 'POST') return json(405, { error: 'Method not allowed', message: 'use POST' });
    return handleSlackInteraction(event, approvalsOf(deps), deps.slack);
  }
  const suffix = rest.length === 1 ? rest[0] : undefined;
  const asRecipient = suffix === AS_RECIPIENT;
  if (
    resource !== 'approvals' ||
    linkId === undefined ||
    (rest.length > 0 && suffix !== AS_RECIPIENT && suffix !== PROGRESS)
  )
    return fail(404, 'Not found', 'no such page');
  if (linkId === CALLBACK_SEGMENT && rest.length === 0 && method === 'GET') {
    if (!deps.signIn) return fail(404, 'Not found', 'sign-in is not configured');
    return withCsp(html(200, signInCallbackPage(deps.signIn)), signInPageCsp(deps.signIn));
  }
  const approvals = approvalsOf(deps);
  const sessions = new PageSessions(deps.signingKey, deps.deadlineClock);
  const secure = !isLocalHttp(event);
  // A page session's requests act through the link the session was opened with.
  const session = HANDLE.test(linkId) ? sessions.read(event, linkId) : undefined;
  if (session && 'refused' in session) return sessionRefused(session);
  const link = session ? session.link : linkId;
  const progressHref = session ? `/approvals/${linkId}/${PROGRESS}` : undefined;
  /** A refusal as a page: its plain title, what to do, and where the run's progress is. */
  const refused = async (error: ApprovalError): Promise<HttpResult> => {
    if (wantsJson)
      return json(STATUS_OF[error.reason] ?? 409, {
        error: 'Not recorded',
        message: error.message,
        // A modification refused as a plan would be: every problem, at its field of the answer.
        ...(error instanceof ModificationRefusedError
          ? {
              problems: error.problems.map((p) => ({
                severity: 'error',
                code: p.code,
                message: p.message,
                location: { file: 'answer', pointer: p.pointer },
              })),
            }
          : {}),
      });
    const gate = await approvals.gateOf(link).catch(() => undefined);
    const decided =
      error.reason === 'used' ? await approvals.decided(link).catch(() => undefined) : undefined;
    const supersededBy = gate?.supersededBy;
    return page(
      STATUS_OF[error.reason] ?? 409,
      refusalPage(error, {
        decided,
        supersededBy,
        ...(gate && progressHref ? { progressHref } : {}),
      }),
    );
  };
  try {
    if (method === 'GET') {
      if (asRecipient) return fail(405, 'Method not allowed', 'open the approval link itself');
      if (suffix === PROGRESS) {
        if (!session) return fail(404, 'Not found', 'open the approval link first');
        const gate = await approvals.gateOf(link);
        const records = await readEvents(deps.dynamo, deps.tables.events, gate.executionId);
        return page(200, progressPage(gate, records));
      }
      if (session) {
        const gate = await approvals.describe(link);
        if (wantsJson) return json(200, shownGate(gate));
        const query = event.queryStringParameters ?? {};
        return await pageOf(gate, session, `/approvals/${linkId}`, deps, {
          timeZone: readerTimeZone(query.tz) ?? deps.displayTimeZone,
          ...(query.tz ? { readerZone: query.tz } : {}),
          paging: { page: pageNumber(query[PAGE_PARAM]), seen: query[SEEN_FIELD] },
        });
      }
      let until: number;
      try {
        const gate = await approvals.describe(linkId);
        if (wantsJson) return json(200, shownGate(gate));
        until = gate.expiresAtEpoch;
      } catch (error) {
        // A decided gate's link still opens a page: it says who decided, and links to progress.
        if (wantsJson || !(error instanceof ApprovalError) || error.reason !== 'used') throw error;
        until = nowEpoch(deps) + SESSION_SECONDS;
      }
      // A person opened the link: redeem it into a page session and leave its signature behind.
      const opened = sessions.open(linkId, until, { secure });
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
    if (method !== 'POST' || suffix === PROGRESS) return fail(405, 'Method not allowed', 'use GET or POST');
    const by = asRecipient ? undefined : identityOf(event, deps.identity);
    if (!asRecipient && !by) return fail(401, 'Who are you?', 'the request does not say who is answering');
    const text = bodyText(event);
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) return fail(413, 'Too large', 'the answer is too large');
    // Not `describe`: a gate that no longer waits must refuse the answer through Approvals, which
    // journals every refusal, whatever the timing (of 20 concurrent answers, 19 refusals).
    const gate = await approvals.gateOf(link);
    // Whoever answers is known from here on: every refusal names them in the gate's journal.
    const who = by ?? recipientOf(link);
    const form = isJsonBody(event) ? undefined : new URLSearchParams(text);
    // The page's fields are those of the whole view it showed (a stored plan that fails its digest
    // shows nothing: the stored view's fields then, and Approvals refuses an approval of it).
    const whole = await wholeGateOf(gate, { dynamo: deps.dynamo, plansTable: deps.tables.plans }).catch(
      () => undefined,
    );
    const answer = form ? formAnswer(form, whole ?? gate) : jsonAnswer(text);
    if (typeof answer === 'string')
      return await approvals.refuse(link, new ApprovalError('invalid', answer), who);
    // Refused and audited (refuse throws): another site's page can never read the form token.
    if (session && !formTokenMatches(session, answer.formToken))
      return await approvals.refuse(
        link,
        new ApprovalError(
          'forbidden',
          'this answer did not come from its approval page (its form token is missing or wrong): reload the page and answer again',
        ),
        who,
      );
    if ('problems' in answer) {
      if (wantsJson || !session || !form)
        return fail(400, 'Not recorded', Object.values(answer.problems).join('; '));
      // Shown again with the problems beside their fields, everything typed kept; nothing recorded.
      return await pageOf(gate, session, `/approvals/${linkId}`, deps, {
        refused: { form, problems: answer.problems },
        status: 400,
        timeZone: deps.displayTimeZone,
        paging: { page: pageNumber(form.get(PAGE_PARAM)), seen: answer.seen },
      });
    }
    const revised = deps.reviseAnswer?.(gate, answer.decision);
    let decision = revised?.decision ?? answer.decision;
    // Accepting the model's suggestion is the decision it means (never sent as such to the machine).
    if (decision.decision === ACCEPT_SUGGESTION) {
      const accepted = acceptedDecision(gate);
      if (typeof accepted === 'string')
        return await approvals.refuse(link, new ApprovalError('invalid', accepted), who);
      decision = accepted;
    }
    const given = { digest: answer.digest, decision, ...(answer.seen ? { seen: answer.seen } : {}) };
    let outcome: Awaited<ReturnType<typeof approvals.answer>>;
    try {
      outcome = by
        ? await approvals.answer(link, {
            by,
            groups: groupsOf(event, deps.identity),
            ...subjectField(subjectOf(event, deps.identity)),
            ...given,
          })
        : await approvals.answerAsRecipient(link, given);
    } catch (error) {
      if (!(error instanceof ModificationRefusedError) || wantsJson || !session || !form) throw error;
      // The page again, each problem beside its field and everything typed kept; nothing recorded.
      return await pageOf(gate, session, `/approvals/${linkId}`, deps, {
        refused: { form, problems: formProblemsOf(error.problems, editableSteps(whole ?? gate)) },
        status: 400,
        timeZone: deps.displayTimeZone,
        paging: { page: pageNumber(form.get(PAGE_PARAM)), seen: answer.seen },
      });
    }
    revised?.onRecorded();
    if (wantsJson) return json(200, revised ? { ...outcome, note: revised.note } : outcome);
    const answeredBy = by ?? recipientOf(link);
    const result = page(
      200,
      outcomePage(gate, outcome, {
        by: answeredBy,
        progressHref,
        ...(revised ? { note: revised.note } : {}),
      }),
    );
    // The page's session outlives the link now, for the progress page (the gate is answered).
    return session
      ? {
          ...result,
          cookies: [sessions.renew(linkId, session, nowEpoch(deps) + SESSION_SECONDS, { secure })],
        }
      : result;
  } catch (error) {
    // A link that is not genuine names no one, but may name a real gate: the attempt is journaled there.
    if (error instanceof ApprovalError && method === 'POST' && UNVERIFIED.has(error.reason))
      await approvals.recordUnverifiedAnswer(link, { message: error.message, source: sourceOf(event) });
    if (error instanceof ApprovalError) return await refused(error);
    throw error;
  }

  function sessionRefused(refusal: SessionRefusal): HttpResult {
    return fail(refusal.refused === 'expired' ? 410 : 403, 'Open the link again', refusal.message);
  }
}

/** An HTML page with the pages' Content-Security-Policy (its one stylesheet, no script). */
function page(status: number, body: string): HttpResult {
  return withCsp(html(status, body), PAGE_CSP);
}

/**
 * A gate as JSON (GateViewSchema in lib/launch/plans-api-schemas.ts): the plan gate's view at the
 * top level, the votes counted and who cast them; not its Slack messages (their buttons hold the
 * shared link).
 */
function shownGate(gate: GateView) {
  const { votes, slackMessages: _messages, summary, revision, stepGate, ...shown } = gate;
  const { view, ...sketch } = summary ?? {};
  // What the gate's current content runs: a revision's changes applied, their risks recomputed.
  return {
    ...shown,
    revision,
    ...(summary ? { summary: sketch } : {}),
    ...(view ? { view: revision ? revisedView(view, revision) : view } : {}),
    ...(stepGate ? { stepGate: revision ? revisedStepGate(stepGate, revision) : stepGate } : {}),
    votes: votes.length,
    voters: votes.map((v) => ({ by: v.by, decision: v.decision.decision })),
  };
}

/**
 * The page of a session: a recipient-bound link's form posts as that recipient (no script); a
 * shared link's page signs the person in first (where sign-in is configured). `refused` shows an
 * answer that was not recorded again, with its problems.
 */
async function pageOf(
  gate: GateView,
  session: PageSession,
  path: string,
  deps: ApprovalsApiDeps,
  {
    refused,
    status = 200,
    timeZone,
    readerZone,
    paging,
  }: {
    /** An answer not recorded, shown again with its problems. */
    refused?: { form: URLSearchParams; problems: Readonly<Record<string, string>> };
    status?: number;
    timeZone?: string | undefined;
    /** The `?tz=` the reader gave, kept in the links between pages. */
    readerZone?: string;
    /** The page asked for and the signed list of pages shown before it. */
    paging?: { page: number; seen: string | null | undefined };
  } = {},
): Promise<HttpResult> {
  // Every command, whatever its size: the gate made whole from the plan stored under its digest.
  let whole: GateView | undefined;
  try {
    whole = await wholeGateOf(gate, { dynamo: deps.dynamo, plansTable: deps.tables.plans });
  } catch (error) {
    if (!(error instanceof StoredPlanMismatchError)) throw error;
    return page(409, messagePage('This plan cannot be shown', error.message));
  }
  const shown = whole ?? gate;
  // describe verified the link, so the recipient it names is the one its signature binds.
  const recipient = recipientOf(session.link);
  const hosted = (await deps.pageExtras?.(shown, recipient)) ?? {};
  const common = {
    ...hosted,
    formToken: session.form,
    refused,
    ...(timeZone ? { timeZone } : {}),
    pages: pageState(shown, path, deps.signingKey, paging, readerZone),
    // the time left, on the clock the deadline is kept on
    ...(deps.deadlineClock ? { now: deps.deadlineClock() } : {}),
  };
  if (recipient !== undefined)
    return page(
      status,
      await approvalPage(shown, `${path}/${AS_RECIPIENT}`, { ...common, answeringAs: recipient }),
    );
  if (deps.signIn)
    return withCsp(
      html(status, await approvalPage(shown, path, { ...common, signIn: deps.signIn })),
      signInPageCsp(deps.signIn),
    );
  return page(status, await approvalPage(shown, path, common));
}

/**
 * The page asked for among the gate's pages, the pages the reader was shown so far (the signed
 * list they brought, if genuine, and this one), and the links that carry the list on.
 */
function pageState(
  gate: GateView,
  path: string,
  signingKey: string | Buffer,
  paging: { page: number; seen: string | null | undefined } | undefined,
  readerZone: string | undefined,
): PageState {
  const count = gatePages(shownOfGate(gate)).length;
  const current = Math.min(Math.max(1, paging?.page ?? 1), count);
  const scope = { approvalId: gate.approvalId, digest: contentDigest(gate), pages: count };
  const signer = new SeenPages(signingKey);
  const seen = new Set([...signer.read(scope, paging?.seen), current]);
  const token = signer.token(scope, seen);
  const href = (page: number) =>
    `${path}?${new URLSearchParams({ [PAGE_PARAM]: String(page), [SEEN_FIELD]: token, ...(readerZone ? { tz: readerZone } : {}) })}`;
  return { current, seen, token, href };
}

/** A page number from a query or a form (1 when absent or not a number). */
function pageNumber(value: string | null | undefined): number {
  const n = Number.parseInt(value ?? '', 10);
  return Number.isSafeInteger(n) && n >= 1 ? n : 1;
}

/** A time zone the reader asked for (`?tz=`), if it is one Intl knows; anything else is ignored. */
function readerTimeZone(requested: string | undefined): string | undefined {
  if (!requested || requested.length > 64) return undefined;
  try {
    return new Intl.DateTimeFormat('en', { timeZone: requested }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
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
  /** The signed list of the pages of the view the answerer was shown (view-pages.ts). */
  readonly seen?: string;
}

/** An answer from the page with problems its person can correct, by field name; nothing is recorded. */
export interface FormProblems {
  readonly problems: Readonly<Record<string, string>>;
  readonly formToken?: string;
  readonly seen?: string;
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
    [SEEN_FIELD]: seen,
    ...decision
  } = value as Record<string, unknown>;
  if (typeof digest !== 'string' || digest === '') return 'digest: say which plan digest you reviewed';
  return {
    digest,
    decision,
    ...(typeof formToken === 'string' ? { formToken } : {}),
    ...(typeof seen === 'string' ? { seen } : {}),
  };
}

/**
 * The approval page's form: `decision`, `digest`, and the decision's own fields; for a plan or
 * step gate, the per-step fields (modifications.ts) as the page showed them. Problems a person
 * can correct come back by field name (nothing is recorded): a changed field with plain Approve
 * (approving as shown would silently drop the change), Approve with my changes with nothing
 * changed, a field that is not valid, an empty question.
 */
export function formAnswer(form: URLSearchParams, gate: GateView): FormAnswer | FormProblems | string {
  const digest = form.get('digest') ?? '';
  if (!digest) return 'digest: say which plan digest you reviewed';
  const decision = form.get('decision') ?? '';
  const text = (name: string) => (form.get(name) ?? '').trim();
  const fields: Record<string, unknown> = { decision };
  const formToken = form.get(FORM_TOKEN_FIELD) ?? undefined;
  const seen = form.get(SEEN_FIELD) || undefined;
  const refuse = (problems: Record<string, string>): FormProblems => ({
    problems,
    ...(formToken ? { formToken } : {}),
    ...(seen ? { seen } : {}),
  });
  const voting = gate.kind === 'plan' || gate.kind === 'step';
  switch (decision) {
    case 'APPROVE':
    case 'APPROVE_WITH_MODIFICATIONS': {
      if (!voting) break;
      const modified = modificationsFromForm(form, editableSteps(gate), { canSkip: gate.kind === 'plan' });
      if ('problems' in modified) return refuse({ ...modified.problems });
      if (decision === 'APPROVE' && modified.changed)
        return refuse({
          decision:
            'You changed the plan above: choose "Approve with my changes", or undo the changes to approve it as shown.',
        });
      if (decision === 'APPROVE') break;
      if (!modified.changed)
        return refuse({
          decision:
            'Nothing was changed: change an argument or tick a step to skip first, or choose "Approve".',
        });
      if (gate.kind === 'plan') fields.skipSteps = modified.skipSteps;
      fields.argOverrides = modified.argOverrides;
      break;
    }
    case 'ASK_FOR_CLARIFICATION':
      if (!text('question')) return refuse({ question: 'Write the question first.' });
      fields.question = text('question');
      break;
    case 'REJECT':
    case 'FAILED':
      fields.reason =
        text('reason') || (decision === 'REJECT' ? 'rejected on the approval page' : 'not done');
      break;
    case 'DONE': {
      const outputs: Record<string, string> = {};
      for (const [name, value] of form)
        if (name.startsWith(OUTPUT_FIELD_PREFIX)) outputs[name.slice(OUTPUT_FIELD_PREFIX.length)] = value;
      fields.outputs = outputs;
      break;
    }
  }
  return { digest, decision: fields, ...(formToken ? { formToken } : {}), ...(seen ? { seen } : {}) };
}

/** Refusals that verified nobody: the link was malformed or its signature wrong. */
const UNVERIFIED = new Set<ApprovalError['reason']>(['malformed', 'forged']);

function sourceOf(event: HttpEvent): string {
  const { sourceIp, userAgent } = event.requestContext.http;
  return `${sourceIp || 'unknown address'}${userAgent ? ` (${userAgent.slice(0, 100)})` : ''}`;
}

/**
 * An answer refused before this handler ran (the loopback guard refused plan code, or the
 * authorizer found no identity): journaled in the gate its link names (Approvals.recordUnverifiedAnswer).
 * Only answers: a page opened or a progress read changes nothing.
 */
export async function recordRefusedAnswer(
  deps: ApprovalsApiDeps,
  refused: {
    readonly method: string;
    readonly path: string;
    readonly message: string;
    readonly source: string;
  },
): Promise<void> {
  const match = /^\/approvals\/([^/]+)(?:\/as-recipient)?$/.exec(refused.path);
  if (refused.method !== 'POST' || !match?.[1]) return;
  let linkId: string;
  try {
    linkId = decodeURIComponent(match[1]);
  } catch {
    return;
  }
  await approvalsOf(deps).recordUnverifiedAnswer(linkId, refused);
}

/** The approvals service; with Slack configured, a decision made here also shows in the gate's message. */
function approvalsOf(deps: ApprovalsApiDeps) {
  return approvalsFor(
    deps.slack && !deps.onDecided ? { ...deps, onDecided: slackDecisionUpdater(deps.slack.client) } : deps,
  );
}

/** Now in epoch seconds, on the clock the gate's deadlines are measured on. */
const nowEpoch = (deps: ApprovalsApiDeps): number =>
  Math.floor((deps.deadlineClock?.() ?? new Date()).getTime() / 1000);

/** `{subject}` when the caller is a token's subject. */
const subjectField = (subject: string | undefined): { subject?: string } =>
  subject === undefined ? {} : { subject };

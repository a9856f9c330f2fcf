/**
 * The approvals HTTP API: `GET /approvals/{id}` shows the approval page, `POST /approvals/{id}`
 * answers the gate (a form from the page, or JSON from a script). The caller's identity comes
 * from the request (JWT claims on AWS, a header locally) and is checked against the plan's
 * approval policy by Approvals, which also checks the link (signed, expiring, single-use) and
 * the plan digest the answer was given for.
 */
import { approvalPage, messagePage } from './approval-page.ts';
import { ApprovalError } from './approvals.ts';
import { type ApprovalsDeps, approvalsFor } from './gate.ts';
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

export interface ApprovalsApiDeps extends ApprovalsDeps {
  readonly identity: IdentitySource;
}

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
  if (resource !== 'approvals' || linkId === undefined || rest.length > 0)
    return fail(404, 'Not found', 'no such page');
  const approvals = approvalsFor(deps);
  try {
    if (method === 'GET') {
      const gate = await approvals.describe(linkId);
      if (wantsJson) {
        const { votes, ...shown } = gate;
        return json(200, { ...shown, votes: votes.length });
      }
      return html(200, approvalPage(gate, `/approvals/${encodeURIComponent(linkId)}`));
    }
    if (method !== 'POST') return fail(405, 'Method not allowed', 'use GET or POST');
    const by = identityOf(event, deps.identity);
    if (!by) return fail(401, 'Who are you?', 'the request does not say who is answering');
    const text = bodyText(event);
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) return fail(413, 'Too large', 'the answer is too large');
    const gate = await approvals.describe(linkId);
    const answer = isJsonBody(event) ? jsonAnswer(text) : formAnswer(new URLSearchParams(text), gate.kind);
    if (typeof answer === 'string') return fail(400, 'Not recorded', answer);
    const outcome = await approvals.answer(linkId, { by, digest: answer.digest, decision: answer.decision });
    if (wantsJson) return json(200, outcome);
    return html(
      200,
      messagePage(
        'Recorded',
        outcome.status === 'pending'
          ? `Your approval was recorded; ${outcome.votes} of the required approvals so far.`
          : `Your answer (${outcome.decision.decision}) was recorded.`,
      ),
    );
  } catch (error) {
    if (error instanceof ApprovalError) return fail(STATUS_OF[error.reason], 'Not recorded', error.message);
    throw error;
  }
}

/** An answer as a page or a script gives it: the digest reviewed and the decision's fields (checked by Approvals). */
export interface FormAnswer {
  readonly digest: string;
  readonly decision: Record<string, unknown>;
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
  const { digest, by: _ignored, ...decision } = value as Record<string, unknown>;
  if (typeof digest !== 'string' || digest === '') return 'digest: say which plan digest you reviewed';
  return { digest, decision };
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
  return { digest, decision: fields };
}

/**
 * The local approval page. Opening a link (`GET /approve/<link id>`) redeems it into a page
 * session, as the approvals API does (lib/runtime/api/page-session.ts), and redirects to
 * `/approvals/<handle>`: the link id never stays in the address bar or the browser's history.
 * The handle's page shows the gate; its form answers with the session's form token. `POST
 * /approve/<link id>` answers directly (the id is the secret, so a script may). The page and its
 * form are the approvals API's (lib/runtime/gate/approval-page.ts, approvals-api.ts), plus the
 * plan's checklist. The id is the approvals service's signed, expiring, single-use id, never the
 * task token; the first answer wins, so a second one (here or in the terminal) is told it came
 * too late.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { formAnswer } from '../../runtime/api/approvals-api.ts';
import { formTokenMatches, HANDLE, PageSessions } from '../../runtime/api/page-session.ts';
import { approvalPage, FORM_TOKEN_FIELD, messagePage } from '../../runtime/gate/approval-page.ts';
import type { GateView } from '../../runtime/gate/gate-item.ts';
import { decisionSchemaOf } from '../../runtime/payloads/index.ts';
import { closeServer, listenOnLoopback } from '../listen.ts';
import { readForm } from '../read-form.ts';
import type { GateAnswer, GateDesk } from '../run/gate-desk.ts';

export interface ApprovalPageProps {
  readonly desk: GateDesk;
  /** The plan as a checklist, shown on every gate's page. */
  readonly checklist: string;
  /** Told of every decision made on the page (the terminal withdraws its question). */
  readonly onAnswered?: (linkId: string, answer: GateAnswer) => void;
  /** @default 0 (any free port) */
  readonly port?: number;
}

/** Who the page records as the approver. */
export const PAGE_APPROVER = 'approval-page';
const LINK_PATH = /^\/approve\/([A-Za-z0-9._-]{1,300})$/;
const SESSION_PATH = /^\/approvals\/([^/]+)$/;

export class ApprovalPageServer {
  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    /** e.g. `http://127.0.0.1:43210` */
    readonly url: string,
    private readonly props: ApprovalPageProps,
  ) {}

  /** Sessions live as long as this server: their key is its own, never written anywhere. */
  private readonly sessions = new PageSessions(randomBytes(32));

  static async start(props: ApprovalPageProps): Promise<ApprovalPageServer> {
    let page: ApprovalPageServer | undefined;
    const server = createServer((req, res) => {
      page?.handle(req, res).catch(() => send(res, 500, messagePage('Error', 'The gate could not be read.')));
    });
    const url = await listenOnLoopback(server, props.port);
    page = new ApprovalPageServer(server, url, props);
    return page;
  }

  /** The link a person opens for the gate handed out as `linkId`. */
  linkFor(linkId: string): string {
    return `${this.url}/approve/${linkId}`;
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', this.url).pathname;
    const linkId = LINK_PATH.exec(path)?.[1];
    if (linkId) return this.onLink(req, res, linkId);
    const handle = SESSION_PATH.exec(path)?.[1];
    if (handle && HANDLE.test(handle)) return this.onSessionPage(req, res, handle);
    return send(res, 404, messagePage('Not found', 'No such approval.'));
  }

  /** A link: opened, it becomes a session and a clean URL; posted to, it answers. */
  private async onLink(req: IncomingMessage, res: ServerResponse, linkId: string): Promise<void> {
    const gate = await this.props.desk.view(linkId);
    if (!gate) return send(res, 410, messagePage('Not answerable', NOT_ANSWERABLE));
    if (req.method === 'GET') {
      const opened = this.sessions.open(linkId, gate.expiresAtEpoch, { secure: false });
      res.writeHead(303, {
        Location: `/approvals/${opened.handle}`,
        'Set-Cookie': opened.cookie,
        'Cache-Control': 'no-store',
        'Referrer-Policy': 'no-referrer',
      });
      return void res.end();
    }
    if (req.method !== 'POST') return send(res, 405, messagePage('Method not allowed', 'Use the form.'));
    const form = await readForm(req);
    if (!form) return send(res, 413, messagePage('Too large', 'The form is too large.'));
    return this.answer(res, linkId, gate, form);
  }

  /** The page a session opened: shown, or answered with the session's form token. */
  private async onSessionPage(req: IncomingMessage, res: ServerResponse, handle: string): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'POST')
      return send(res, 405, messagePage('Method not allowed', 'Use the form.'));
    const session = this.sessions.read({ headers: { cookie: req.headers.cookie ?? '' } }, handle);
    if ('refused' in session)
      return send(res, 403, messagePage('Not answerable', capitalize(session.message)));
    const gate = await this.props.desk.view(session.link);
    if (!gate) return send(res, 410, messagePage('Not answerable', NOT_ANSWERABLE));
    if (req.method === 'GET')
      return send(
        res,
        200,
        await approvalPage(gate, `/approvals/${handle}`, {
          checklist: this.props.checklist,
          formToken: session.form,
        }),
      );
    const form = await readForm(req);
    if (!form) return send(res, 413, messagePage('Too large', 'The form is too large.'));
    if (!formTokenMatches(session, form.get(FORM_TOKEN_FIELD) ?? undefined))
      return send(
        res,
        403,
        messagePage('Not recorded', 'This form is not the one this page showed: reload the page.'),
      );
    return this.answer(res, session.link, gate, form);
  }

  /** Records the form's answer to `gate` (read by the caller), the first answer winning. */
  private async answer(
    res: ServerResponse,
    linkId: string,
    gate: GateView,
    form: URLSearchParams,
  ): Promise<void> {
    const fields = formAnswer(form, gate);
    if (typeof fields === 'string') return send(res, 400, messagePage('Not an answer', fields));
    if ('problems' in fields)
      return send(res, 400, messagePage('Not an answer', Object.values(fields.problems).join(' ')));
    if (fields.digest !== gate.planDigest)
      return send(
        res,
        409,
        messagePage('Not recorded', 'This answer is for a different version of the plan.'),
      );
    const parsed = decisionSchemaOf(gate.kind).safeParse({ ...fields.decision, by: PAGE_APPROVER });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return send(
        res,
        400,
        messagePage(
          'Not an answer',
          `${issue?.path.join('.') || 'decision'}: ${issue?.message ?? 'invalid'}`,
        ),
      );
    }
    const outcome = await this.props.desk.answer(linkId, parsed.data);
    if (!outcome.ok) return send(res, 409, messagePage('Not recorded', outcome.message));
    this.props.onAnswered?.(linkId, parsed.data);
    return send(
      res,
      200,
      messagePage(
        'Recorded',
        `Your answer (${parsed.data.decision}) was recorded.${outcome.note ? ` ${outcome.note}` : ''}`,
      ),
    );
  }
}

const NOT_ANSWERABLE = 'This approval link is not valid, has expired, or was answered already.';

function capitalize(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

function send(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
  });
  res.end(html);
}

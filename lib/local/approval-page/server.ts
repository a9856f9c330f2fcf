/**
 * The local approval page: `GET /approve/<link id>` shows the gate, `POST` answers it. The page
 * and its form are the approvals API's (lib/runtime/gate/approval-page.ts, approvals-api.ts), plus the
 * plan's checklist. The id is the approvals service's signed, expiring, single-use id, never the
 * task token; the first answer wins, so a second one (here or in the terminal) is told it came
 * too late.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { formAnswer } from '../../runtime/api/approvals-api.ts';
import { approvalPage, messagePage } from '../../runtime/gate/approval-page.ts';
import { decisionSchemaOf } from '../../runtime/payloads/index.ts';
import { closeServer, listenOnLoopback } from '../listen.ts';
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
const MAX_FORM_BYTES = 16 * 1024;
const PATH = /^\/approve\/([A-Za-z0-9._-]{1,300})$/;

export class ApprovalPageServer {
  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    /** e.g. `http://127.0.0.1:43210` */
    readonly url: string,
    private readonly props: ApprovalPageProps,
  ) {}

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
    const linkId = PATH.exec(new URL(req.url ?? '/', this.url).pathname)?.[1];
    if (!linkId) return send(res, 404, messagePage('Not found', 'No such approval.'));
    const gate = await this.props.desk.view(linkId);
    if (!gate)
      return send(
        res,
        410,
        messagePage(
          'Not answerable',
          'This approval link is not valid, has expired, or was answered already.',
        ),
      );
    if (req.method === 'GET')
      return send(res, 200, approvalPage(gate, `/approve/${linkId}`, { checklist: this.props.checklist }));
    if (req.method !== 'POST') return send(res, 405, messagePage('Method not allowed', 'Use the form.'));
    const form = await readForm(req);
    if (!form) return send(res, 413, messagePage('Too large', 'The form is too large.'));
    const fields = formAnswer(form, gate.kind);
    if (typeof fields === 'string') return send(res, 400, messagePage('Not an answer', fields));
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

async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function send(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
  });
  res.end(html);
}

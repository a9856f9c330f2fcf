/**
 * The local approval page: `GET /approve/<link id>` shows the gate, `POST` answers it. The id is
 * the approvals service's signed, expiring, single-use id, never the task token; the first
 * answer wins, so a second one (here or in the terminal) is told it came too late.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { ApprovalDecision, EscalationDecision } from '../../runtime/payloads.ts';
import { closeServer, listenOnLoopback } from '../listen.ts';
import type { GateAnswer, GateDesk, PendingGate } from '../run/gate-desk.ts';
import { gatePage, messagePage, type PageGate } from './page.ts';

export interface ApprovalPageProps {
  readonly desk: GateDesk;
  /** The checklist and names to show for a gate. */
  readonly describe: (gate: PendingGate) => Promise<Omit<PageGate, 'gate'>>;
  /** Told of every decision made on the page (the terminal withdraws its question). */
  readonly onAnswered?: (gate: PendingGate, answer: GateAnswer) => void;
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

  /** The link a person opens for this gate. */
  linkFor(gate: PendingGate): string {
    return `${this.url}/approve/${gate.linkId}`;
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = PATH.exec(new URL(req.url ?? '/', this.url).pathname);
    if (!match?.[1]) return send(res, 404, messagePage('Not found', 'No such approval.'));
    const gate = await this.props.desk.get(match[1]);
    if (!gate)
      return send(
        res,
        410,
        messagePage(
          'Not answerable',
          'This approval link is not valid, has expired, or was answered already.',
        ),
      );
    if (req.method === 'GET') {
      return send(res, 200, gatePage({ gate, ...(await this.props.describe(gate)) }, `/approve/${match[1]}`));
    }
    if (req.method !== 'POST') return send(res, 405, messagePage('Method not allowed', 'Use the form.'));
    const form = await readForm(req);
    if (!form) return send(res, 413, messagePage('Too large', 'The form is too large.'));
    const answer = formAnswer(gate, form);
    if (typeof answer === 'string') return send(res, 400, messagePage('Not an answer', answer));
    const outcome = await this.props.desk.answer(gate.linkId, answer);
    if (!outcome.ok) return send(res, 409, messagePage('Not recorded', outcome.message));
    this.props.onAnswered?.(gate, answer);
    return send(res, 200, messagePage('Recorded', `Your answer (${answer.decision}) was recorded.`));
  }
}

/** The form's fields as a decision, or the problem with them. */
export function formAnswer(gate: PendingGate, form: URLSearchParams): GateAnswer | string {
  const decision = form.get('decision') ?? '';
  const by = PAGE_APPROVER;
  if (gate.kind === 'human') {
    if (decision === 'FAILED')
      return { decision, by, reason: (form.get('reason') ?? '').trim() || 'not done' };
    if (decision !== 'DONE') return 'answer done or failed';
    const outputs: Record<string, string> = {};
    for (const [name, value] of form) if (name.startsWith('output.')) outputs[name.slice(7)] = value;
    return { decision, by, outputs };
  }
  if (gate.kind === 'escalation') {
    if (decision === 'RETRY' || decision === 'SKIP' || decision === 'ABORT')
      return { decision, by } satisfies EscalationDecision;
    return 'answer retry, skip or abort';
  }
  switch (decision) {
    case 'APPROVE':
      return { decision, by } satisfies ApprovalDecision;
    case 'APPROVE_WITH_MODIFICATIONS': {
      const skipSteps = (form.get('skipSteps') ?? '').split(/[\s,]+/).filter(Boolean);
      if (gate.kind !== 'plan' || skipSteps.length === 0) return 'name the steps to skip';
      return { decision, by, skipSteps, argOverrides: {} };
    }
    case 'ASK_FOR_CLARIFICATION': {
      const question = (form.get('question') ?? '').trim();
      return question ? { decision, by, question } : 'write the question';
    }
    case 'REJECT':
      return { decision, by, reason: (form.get('reason') ?? '').trim() || 'rejected on the approval page' };
    default:
      return 'answer approve, approve with modifications, ask for clarification or reject';
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

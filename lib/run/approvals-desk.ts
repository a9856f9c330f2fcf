/**
 * The gate desk over the run's front door (front-door.ts): what waits in an execution (read from
 * the approvals service), and answers posted to the approvals API as the run's identity, bound to
 * the plan digest the person was shown, under the same checks as every other channel.
 */
import type { AnswerReviser } from '../runtime/api/approvals-api.ts';
import type { Approvals } from '../runtime/gate/approvals.ts';
import { shownOfGate } from '../runtime/gate/shown-gate.ts';
import type { RunFrontDoor } from './front-door.ts';
import {
  type AnswerReceipt,
  type GateAnswer,
  type GateDesk,
  type PendingGate,
  pendingGate,
} from './gate-desk.ts';

export interface ApprovalsDeskProps {
  /** Reads the gates waiting in an execution (answers never go through it). */
  readonly approvals: Pick<Approvals, 'pending'>;
  readonly front: Pick<RunFrontDoor, 'url' | 'authorization'>;
  /** Digest of the plan this session showed (`sha256:<hex>` or hex): answers bind to it. */
  readonly planDigest: string;
}

export class ApprovalsDesk implements GateDesk {
  /** The content digest each gate's answers bind to once a modification made a revision of it. */
  private readonly revisions = new Map<string, string>();

  constructor(private readonly props: ApprovalsDeskProps) {}

  async pending(executionId: string): Promise<PendingGate[]> {
    return (await this.props.approvals.pending(executionId)).map(({ linkId, gate }) => {
      if (gate.revision) this.revised(linkId, gate.revision.digest);
      return pendingGate(linkId, gate, gate.expiresAtEpoch, shownOfGate(gate));
    });
  }

  /** A modification made a revision of the gate (on any channel): answers now bind to its digest. */
  revised(linkId: string, digest: string): void {
    this.revisions.set(linkId, digest);
  }

  async settled(linkId: string): Promise<string | undefined> {
    const response = await fetch(this.linkUrl(linkId), { headers: { accept: 'application/json' } });
    // Answered, expired or handed to other approvers; anything else says nothing about the gate.
    if (!SETTLED.has(response.status)) return undefined;
    return messageOf(await response.json().catch(() => ({})), response.status);
  }

  async answer(linkId: string, given: GateAnswer): Promise<AnswerReceipt> {
    // The API names the answerer from the token; a `by` in the body would be ignored.
    const { by: _by, ...decision } = given;
    const response = await fetch(this.linkUrl(linkId), {
      method: 'POST',
      headers: {
        authorization: this.props.front.authorization(),
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({
        digest: this.revisions.get(linkId) ?? withPrefix(this.props.planDigest),
        ...decision,
      }),
    });
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.ok && body.status === 'modified') {
      this.revised(linkId, String(body.digest));
      return {
        ok: true,
        note: `Your changes made revision ${String(body.revision)} (${String(body.digest)}). Approvals given before do not count for it: approve the revision as changed (or reject it) to decide.`,
      };
    }
    if (response.ok) {
      const notes = [
        ...(body.status === 'pending' ? [`Your approval was recorded; ${String(body.votes)} so far.`] : []),
        ...(typeof body.held === 'string' ? [`The gate still waits: ${body.held}.`] : []),
        ...(typeof body.note === 'string' ? [body.note] : []),
      ];
      return notes.length > 0 ? { ok: true, note: notes.join(' ') } : { ok: true };
    }
    return {
      ok: false,
      reason: REFUSALS[response.status] ?? 'invalid',
      message: messageOf(body, response.status),
    };
  }

  private linkUrl(linkId: string): string {
    return `${this.props.front.url}/approvals/${encodeURIComponent(linkId)}`;
  }
}

/** The approvals API's status codes (approvals-api.ts) as the session acts on them. */
const REFUSALS: Readonly<Record<number, Extract<AnswerReceipt, { ok: false }>['reason']>> = {
  400: 'invalid',
  401: 'forbidden',
  403: 'forbidden',
  404: 'not-found',
  409: 'already-answered',
  410: 'already-answered',
};

/** What the approvals API answers for a link whose gate no longer waits (used, expired, escalated). */
const SETTLED: ReadonlySet<number> = new Set([409, 410]);

function messageOf(body: unknown, status: number): string {
  const { message, problems } = body as { message?: unknown; problems?: unknown };
  // A refused modification: each problem on its own line, at the answer's field it is about.
  if (Array.isArray(problems) && problems.length > 0)
    return `the modification was refused:${problems
      .map((p: { message?: unknown; location?: { pointer?: unknown } }) => {
        const field = `decision${String(p.location?.pointer ?? '').replaceAll('/', '.')}`;
        return `\n  ${field}: ${String(p.message)}`;
      })
      .join('')}`;
  return typeof message === 'string' && message ? message : `the approvals API answered HTTP ${status}`;
}

const withPrefix = (digest: string): string => `sha256:${digest.replace(/^sha256:/, '')}`;

/** The reason a question at the plan gate is recorded with, when it sends the plan back. */
const CLARIFICATION_PREFIX = 'clarification requested: ';

/**
 * A planned plan goes back to its planner when a person asks a question or rejects it at the plan
 * gate, wherever they answer (terminal, page): the question becomes the rejection's reason, so
 * this version ends and approving it later is refused. `onFeedback` is told once it is recorded.
 */
export function planFeedbackReviser(onFeedback: (feedback: string) => void): AnswerReviser {
  return (gate, decision) => {
    if (gate.kind !== 'plan') return undefined;
    const text =
      decision.decision === 'ASK_FOR_CLARIFICATION'
        ? String(decision.question ?? '')
        : decision.decision === 'REJECT'
          ? String(decision.reason ?? '')
          : '';
    if (!text.trim()) return undefined;
    return {
      decision:
        decision.decision === 'REJECT'
          ? { ...decision }
          : { decision: 'REJECT', reason: `${CLARIFICATION_PREFIX}${text}` },
      note: 'Sent back to the planner: its next version will come to the gate.',
      onRecorded: () => onFeedback(text),
    };
  };
}

/**
 * The gate desk over the approvals service (lib/runtime/gate/approvals.ts): what waits in an
 * execution, and answers that bind to the plan digest the person was shown.
 */
import type { Approvals } from '../../runtime/gate/approvals.ts';
import type { GateView } from '../../runtime/gate/gate-item.ts';
import { ApprovalError } from '../../runtime/gate/links.ts';
import { shownOfGate } from '../../runtime/gate/shown-gate.ts';
import {
  type AnswerOutcome,
  type GateAnswer,
  type GateDesk,
  type PendingGate,
  pendingGate,
} from './gate-desk.ts';

export interface ApprovalsDeskProps {
  readonly approvals: Approvals;
  /** Digest of the plan this session showed (`sha256:<hex>` or hex): answers bind to it. */
  readonly planDigest: string;
  /**
   * A planned plan goes back to its planner when a person asks a question or rejects it at the
   * plan gate, wherever they answer (terminal, page, Slack link): the question becomes the
   * rejection's reason, so this version ends and approving it later is refused. Told the
   * feedback once the rejection is recorded. @default - questions loop at the gate
   */
  readonly onPlanFeedback?: (feedback: string) => void;
}

export class ApprovalsDesk implements GateDesk {
  constructor(private readonly props: ApprovalsDeskProps) {}

  async pending(executionId: string): Promise<PendingGate[]> {
    return (await this.props.approvals.pending(executionId)).map(({ linkId, gate }) =>
      pendingGate(linkId, gate, gate.expiresAtEpoch, shownOfGate(gate)),
    );
  }

  async view(linkId: string): Promise<GateView | undefined> {
    try {
      return await this.props.approvals.describe(linkId);
    } catch (error) {
      if (error instanceof ApprovalError) return undefined;
      throw error;
    }
  }

  async answer(linkId: string, given: GateAnswer): Promise<AnswerOutcome> {
    try {
      const gate = await this.props.approvals.describe(linkId);
      const feedback = this.props.onPlanFeedback && gate.kind === 'plan' ? planFeedback(given) : undefined;
      const { by = 'unknown', ...decision } = feedback?.answer ?? given;
      // An approval binds to the plan shown here; the service refuses it for any other digest.
      const digest = sameDigest(gate.planDigest, this.props.planDigest)
        ? gate.planDigest
        : this.props.planDigest;
      await this.props.approvals.answer(linkId, { by, digest, decision });
      if (!feedback) return { ok: true };
      this.props.onPlanFeedback?.(feedback.text);
      return { ok: true, note: 'Sent back to the planner: its next version will come to the gate.' };
    } catch (error) {
      if (!(error instanceof ApprovalError)) throw error;
      const reason =
        error.reason === 'used' ? 'already-answered' : error.reason === 'forged' ? 'not-found' : 'invalid';
      return { ok: false, reason, message: error.message };
    }
  }
}

const sameDigest = (a: string, b: string): boolean => a.replace(/^sha256:/, '') === b.replace(/^sha256:/, '');

/** A question or a rejection of a planned plan, as the rejection that sends it back to the planner. */
function planFeedback(given: GateAnswer): { answer: GateAnswer; text: string } | undefined {
  if (given.decision === 'ASK_FOR_CLARIFICATION')
    return {
      answer: {
        decision: 'REJECT',
        reason: `clarification requested: ${given.question}`,
        ...(given.by ? { by: given.by } : {}),
      },
      text: given.question,
    };
  if (given.decision === 'REJECT') return { answer: given, text: given.reason };
  return undefined;
}

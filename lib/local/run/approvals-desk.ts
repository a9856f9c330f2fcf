/**
 * The gate desk over the approvals service (lib/runtime/gate/approvals.ts): what waits in an
 * execution, and answers that bind to the plan digest the person was shown.
 */
import type { Approvals } from '../../runtime/gate/approvals.ts';
import type { GateView } from '../../runtime/gate/gate-item.ts';
import { ApprovalError } from '../../runtime/gate/links.ts';
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
}

export class ApprovalsDesk implements GateDesk {
  constructor(private readonly props: ApprovalsDeskProps) {}

  async pending(executionId: string): Promise<PendingGate[]> {
    return (await this.props.approvals.pending(executionId)).map(({ linkId, gate }) =>
      pendingGate(linkId, gate, gate.expiresAtEpoch),
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

  async answer(linkId: string, answer: GateAnswer): Promise<AnswerOutcome> {
    const { by = 'unknown', ...decision } = answer;
    try {
      const gate = await this.props.approvals.describe(linkId);
      // An approval binds to the plan shown here; the service refuses it for any other digest.
      const digest = sameDigest(gate.planDigest, this.props.planDigest)
        ? gate.planDigest
        : this.props.planDigest;
      await this.props.approvals.answer(linkId, { by, digest, decision });
      return { ok: true };
    } catch (error) {
      if (!(error instanceof ApprovalError)) throw error;
      const reason =
        error.reason === 'used' ? 'already-answered' : error.reason === 'forged' ? 'not-found' : 'invalid';
      return { ok: false, reason, message: error.message };
    }
  }
}

const sameDigest = (a: string, b: string): boolean => a.replace(/^sha256:/, '') === b.replace(/^sha256:/, '');

/**
 * What the run session needs from the approvals service: the gates waiting in an execution,
 * and a way to answer one. Whoever answers first wins (the gates table's conditional update);
 * a later answer is told it came too late.
 */
import type { GateView } from '../../runtime/approvals.ts';
import type {
  ApprovalDecision,
  ClassifiedFailure,
  EscalationDecision,
  GateKind,
  HumanDecision,
} from '../../runtime/payloads.ts';

export interface PendingGate {
  /** The signed, expiring, single-use id links carry (the task token stays in the gates table). */
  readonly linkId: string;
  readonly executionId: string;
  readonly kind: GateKind;
  readonly stepId?: string;
  readonly round: number;
  readonly question?: string | null;
  readonly failure?: ClassifiedFailure;
  readonly critical?: boolean;
  /** A human step: what to do and which outputs to report. */
  readonly human?: { readonly instructions: string; readonly outputs: readonly string[] };
  /** Seconds since the epoch; links expire with the gate. */
  readonly expiresAtEpoch: number;
}

export type GateAnswer = ApprovalDecision | EscalationDecision | HumanDecision;

export type AnswerOutcome =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly reason: 'already-answered' | 'not-found' | 'invalid';
      readonly message: string;
    };

export interface GateDesk {
  /** Gates of the execution still waiting for a decision, oldest first. */
  pending(executionId: string): Promise<PendingGate[]>;
  /** What a page may show of the gate a link answers, while it still waits. */
  view(linkId: string): Promise<GateView | undefined>;
  /** Records the decision (journal event) and releases the gate (SendTaskSuccess). */
  answer(linkId: string, answer: GateAnswer): Promise<AnswerOutcome>;
}

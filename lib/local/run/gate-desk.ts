/**
 * What the run session needs from the approvals service: the gates waiting in an execution,
 * and a way to answer one. Whoever answers first wins (the gates table's conditional update);
 * a later answer is told it came too late.
 */
import type { GateView } from '../../runtime/gate/gate-item.ts';
import type { ShownGate } from '../../runtime/gate/shown-gate.ts';
import type {
  ApprovalDecision,
  ClassifiedFailure,
  EscalationDecision,
  GateKind,
  HumanDecision,
} from '../../runtime/payloads/index.ts';

/** What a gate request, a stored gate and a notice all say about a waiting gate. */
export interface GateFacts {
  readonly executionId: string;
  readonly kind: GateKind;
  readonly stepId?: string;
  readonly round: number;
  readonly question?: string | null;
  readonly failure?: ClassifiedFailure;
  /** A human step: what to do and which outputs to report. */
  readonly human?: { readonly instructions: string; readonly outputs: readonly string[] };
}

export interface PendingGate extends GateFacts {
  /** The signed, expiring, single-use id links carry (the task token stays in the gates table). */
  readonly linkId: string;
  /** Seconds since the epoch; links expire with the gate. */
  readonly expiresAtEpoch: number;
  /** What the gate shows (its view, who may approve, the deadline), printed with the question. */
  readonly shown?: ShownGate;
}

export type GateAnswer = ApprovalDecision | EscalationDecision | HumanDecision;

export type AnswerOutcome =
  | {
      readonly ok: true;
      /** What became of the answer, when it is more than recorded. */
      readonly note?: string;
    }
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

/** The pending gate a link id answers, from what is known about it. */
export function pendingGate(
  linkId: string,
  facts: GateFacts,
  expiresAtEpoch: number,
  shown?: ShownGate,
): PendingGate {
  return {
    linkId,
    executionId: facts.executionId,
    kind: facts.kind,
    ...(facts.stepId ? { stepId: facts.stepId } : {}),
    round: facts.round,
    ...(facts.question ? { question: facts.question } : {}),
    ...(facts.failure ? { failure: facts.failure } : {}),
    ...(facts.human
      ? { human: { instructions: facts.human.instructions, outputs: facts.human.outputs } }
      : {}),
    expiresAtEpoch,
    ...(shown ? { shown } : {}),
  };
}

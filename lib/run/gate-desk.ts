/**
 * What the run session needs from the approvals service: the gates waiting in an execution,
 * and a way to answer one as the run's identity. Whoever answers first wins (the gates table's
 * conditional update); a later answer is told it came too late.
 */

import { namesPrincipal, samePrincipal } from '../plan/principal-names.ts';
import type { ShownGate } from '../runtime/gate/shown-gate.ts';
import type {
  ApprovalDecision,
  ClassifiedFailure,
  EscalationDecision,
  GateApprovers,
  GateKind,
  GateRevision,
  HumanDecision,
} from '../runtime/payloads/index.ts';
import type { AcceptSuggestionAnswer } from './decisions.ts';

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
  /** The digest of the plan the gate asks about (the link id is signed over it). */
  readonly planDigest: string;
  /** Who may answer (the plan's approval policy, or the group the timeout ladder handed the gate to). */
  readonly policy: Pick<GateApprovers, 'approvers' | 'forbiddenApprovers'>;
  /** Who submitted the plan, when the gate says. */
  readonly submittedBy?: string;
  /** The revision the gate asks about (a modification made at it, or the one its plan gate approved). */
  readonly revision?: GateRevision;
}

export type GateAnswer = ApprovalDecision | EscalationDecision | HumanDecision | AcceptSuggestionAnswer;

/** What the desk says of an answer: recorded (with what became of it) or refused, and why. */
export type AnswerReceipt =
  | {
      readonly ok: true;
      /** What became of the answer, when it is more than recorded (e.g. votes still needed). */
      readonly note?: string;
    }
  | {
      readonly ok: false;
      /** `forbidden`: this identity may not give this answer (another answer may still do). */
      readonly reason: 'already-answered' | 'not-found' | 'invalid' | 'forbidden';
      readonly message: string;
    };

export interface GateDesk {
  /** Gates of the execution still waiting for a decision, oldest first. */
  pending(executionId: string): Promise<PendingGate[]>;
  /** Undefined while the gate a link answers still waits; else what became of it. */
  settled(linkId: string): Promise<string | undefined>;
  /** Records the decision as the run's identity, through the approvals API. */
  answer(linkId: string, answer: GateAnswer): Promise<AnswerReceipt>;
}

/** The pending gate a link id answers, from what is known about it. */
export function pendingGate(
  linkId: string,
  facts: GateFacts &
    Pick<PendingGate, 'planDigest' | 'policy' | 'submittedBy'> & {
      readonly revision?: GateRevision | undefined;
    },
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
    failure: facts.failure,
    ...(facts.human
      ? { human: { instructions: facts.human.instructions, outputs: facts.human.outputs } }
      : {}),
    expiresAtEpoch,
    planDigest: facts.planDigest,
    policy: { approvers: facts.policy.approvers, forbiddenApprovers: facts.policy.forbiddenApprovers },
    submittedBy: facts.submittedBy,
    ...(facts.revision ? { revision: facts.revision } : {}),
    shown,
  };
}

/**
 * Why `identity` cannot give the answer a gate most asks for (approve a plan or step gate; answer
 * any other), as a person should be told it before trying, with the documented way out; undefined
 * when nothing stands in the way. Only a hint: Approvals (lib/runtime/gate/approvals.ts) enforces
 * the policy on every answer, wherever it comes from.
 */
export function identityHint(
  gate: Pick<PendingGate, 'kind' | 'policy' | 'submittedBy'>,
  identity: string,
): string | undefined {
  const verb = gate.kind === 'plan' || gate.kind === 'step' ? 'approve' : 'answer';
  const { approvers, forbiddenApprovers } = gate.policy;
  if (approvers.length > 0 && !namesPrincipal(approvers, identity))
    return `${orList(approvers)} may ${verb} this gate; you are ${identity}: rerun with --as ${approvers[0]}`;
  if (namesPrincipal(forbiddenApprovers, identity))
    return `${identity} may not answer this gate (the plan's forbiddenApprovers): rerun with --as <another approver>`;
  if (verb === 'approve' && gate.submittedBy !== undefined && samePrincipal(gate.submittedBy, identity))
    return `you (${identity}) submitted this plan, so you may not approve it (no self-approval); you may ask or reject, and another approver answers (their link or Slack, or plangate resume <execution> --as <them>); to approve a plan of your own, start it with --solo (recorded)`;
  return undefined;
}

const orList = (names: readonly string[]): string =>
  names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;

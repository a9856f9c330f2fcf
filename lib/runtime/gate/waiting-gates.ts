/**
 * The gates of an execution still waiting for a person, read from its journal alone (what the
 * Plans API may read): each opened by an event carrying `opened` (GATE_APPROVAL_REQUESTED, a
 * human step's TASK_STARTED, a RECOVERY_ESCALATION that asks, GATE_ESCALATED, which replaces the
 * gate it escalates), counting the approvals voted since (a modification starts them again), with
 * the latest notice about it that reached nobody, and closed by its decision, its question, its
 * supersession or the answer of the step it asks about.
 */
import type { z } from 'zod';
import type {
  GateApprovers,
  GateKind,
  GateOpened,
  JournalRecord,
  NoticeUndeliveredReasonSchema,
} from '../payloads/index.ts';
import { EVENT_DETAILS } from '../payloads/index.ts';

export interface WaitingGate {
  readonly kind: GateKind;
  readonly stepId?: string;
  readonly stepName?: string;
  /** Plan and step gates: 1, then +1 after each question. */
  readonly round?: number;
  readonly opened: GateOpened;
  /** When it opened (its current group was asked), ISO 8601 UTC. */
  readonly openedAt: string;
  /** The timeout ladder's group asking (0: the plan's approvers; n: `escalateTo[n - 1]`). */
  readonly level: number;
  /** Whether this group was reminded already. */
  readonly reminded: boolean;
  /** Who voted to approve the content as it is now. */
  readonly votes: readonly { readonly by: string }[];
  readonly policy: GateApprovers;
  /** The latest notice about this gate that reached nobody (GATE_NOTICE_UNDELIVERED), if one did. */
  readonly undelivered?: {
    readonly reason: z.infer<typeof NoticeUndeliveredReasonSchema>;
    readonly message: string;
    /** ISO 8601 UTC. */
    readonly at: string;
  };
}

type Open = { -readonly [K in keyof WaitingGate]: WaitingGate[K] } & { votes: { by: string }[] };

/** The gate an event is about: its kind and step (a plan gate has none). */
function keyOf(kind: unknown, record: JournalRecord): string {
  return `${String(kind)}\0${kind === 'plan' ? '' : (record.task_id ?? '')}`;
}

/** The waiting gates of an execution, in the order they opened. */
export function waitingGates(records: readonly JournalRecord[]): WaitingGate[] {
  const open = new Map<string, Open>();
  const opening = (kind: GateKind, record: JournalRecord, opened: GateOpened, more: Partial<Open> = {}) => {
    const key = keyOf(kind, record);
    open.delete(key);
    open.set(key, {
      kind,
      ...(kind !== 'plan' && record.task_id ? { stepId: record.task_id } : {}),
      ...(kind !== 'plan' && record.task_name ? { stepName: record.task_name } : {}),
      opened,
      openedAt: record.timestamp,
      level: 0,
      reminded: false,
      votes: [],
      policy: opened.policy,
      ...more,
    });
  };
  for (const record of records) {
    const d = record.details;
    switch (record.event) {
      case 'GATE_APPROVAL_REQUESTED': {
        const parsed = EVENT_DETAILS.GATE_APPROVAL_REQUESTED.safeParse(d);
        if (parsed.success && parsed.data.opened)
          opening(parsed.data.gate, record, parsed.data.opened, { round: parsed.data.round });
        break;
      }
      case 'GATE_ESCALATED': {
        const parsed = EVENT_DETAILS.GATE_ESCALATED.safeParse(d);
        const before = open.get(keyOf(d.gate, record));
        if (parsed.success && parsed.data.opened)
          opening(parsed.data.gate, record, parsed.data.opened, {
            level: parsed.data.level,
            ...(before?.round !== undefined ? { round: before.round } : {}),
          });
        else open.delete(keyOf(d.gate, record));
        break;
      }
      case 'TASK_STARTED': {
        const parsed = EVENT_DETAILS.TASK_STARTED.safeParse(d);
        if (parsed.success && parsed.data.opened) opening('human', record, parsed.data.opened);
        break;
      }
      case 'RECOVERY_ESCALATION': {
        const parsed = EVENT_DETAILS.RECOVERY_ESCALATION.safeParse(d);
        if (parsed.success && parsed.data.opened && !parsed.data.user_decision)
          opening('escalation', record, parsed.data.opened);
        else open.delete(keyOf('escalation', record));
        break;
      }
      case 'GATE_REMINDED': {
        const gate = open.get(keyOf(d.gate, record));
        if (gate && gate.level === d.level) gate.reminded = true;
        break;
      }
      case 'GATE_VOTE': {
        const gate = open.get(keyOf(d.gate, record));
        const approves = d.decision === 'APPROVE' || d.decision === 'APPROVE_WITH_MODIFICATIONS';
        if (gate && approves && typeof d.voter === 'string') gate.votes.push({ by: d.voter });
        break;
      }
      case 'GATE_NOTICE_UNDELIVERED': {
        const parsed = EVENT_DETAILS.GATE_NOTICE_UNDELIVERED.safeParse(d);
        const gate = open.get(keyOf(d.gate, record));
        // Only a notice about the gate as it is now (not the group before an escalation).
        if (parsed.success && gate?.opened.link_id === parsed.data.link_id)
          gate.undelivered = {
            reason: parsed.data.reason,
            message: parsed.data.message,
            at: record.timestamp,
          };
        break;
      }
      case 'GATE_PLAN_MODIFIED': {
        // A new revision: approvals of the content before it do not count for it.
        const gate = open.get(keyOf(d.gate, record));
        if (gate) gate.votes = [];
        break;
      }
      case 'GATE_APPROVED':
      case 'GATE_REJECTED':
      case 'GATE_CLARIFICATION_REQUESTED':
      case 'GATE_SUPERSEDED':
        open.delete(keyOf(d.gate, record));
        break;
      case 'HUMAN_TASK_ANSWERED':
      case 'TASK_SKIPPED':
      case 'TASK_BLOCKED':
      case 'TASK_COMPLETED':
      case 'TASK_FAILED':
        open.delete(keyOf('human', record));
        break;
      case 'EXECUTION_COMPLETE':
        open.clear();
        break;
      default:
        break;
    }
  }
  return [...open.values()];
}

/** What a waiting gate does next if nobody answers: the next rung of its timeout ladder. */
export interface NextRung {
  /**
   * `remind`: its approvers are told again (same link); `escalate`: the next group is asked (a new
   * link); `reject`: rejected `timed out` (it never approves itself); `fail`: an escalation or a
   * human step fails `Plangate.GateTimedOut`.
   */
  readonly action: 'remind' | 'escalate' | 'reject' | 'fail';
  /** ISO 8601 UTC. */
  readonly at: string;
  /** `escalate`: the group asked next. */
  readonly approvers?: string[];
  readonly quorum?: number;
}

/** The plan's approval block, as far as its timeout ladder goes (lib/compiler/gate-ladder.ts). */
export interface LadderPolicy {
  readonly remindAfterSeconds?: number | undefined;
  readonly escalateTo?: readonly { readonly approvers: readonly string[]; readonly quorum: number }[];
}

/**
 * The next rung of a waiting gate's ladder, as the compiler built it from the plan's approval block:
 * a plan or step gate is reminded once per group (after `remindAfterSeconds`), then at its deadline
 * escalated to the next group of `escalateTo`, or after the last one rejected. Undefined for a plan
 * or step gate when the ladder is not known (no plan stored under its digest).
 */
export function nextRung(gate: WaitingGate, ladder: LadderPolicy | undefined): NextRung | undefined {
  if (gate.kind === 'escalation' || gate.kind === 'human')
    return { action: 'fail', at: gate.opened.expires_at };
  if (!ladder) return undefined;
  const remind = ladder.remindAfterSeconds;
  if (remind !== undefined && !gate.reminded)
    return { action: 'remind', at: new Date(Date.parse(gate.openedAt) + remind * 1000).toISOString() };
  const group = ladder.escalateTo?.[gate.level];
  return group
    ? {
        action: 'escalate',
        at: gate.opened.expires_at,
        approvers: [...group.approvers],
        quorum: group.quorum,
      }
    : { action: 'reject', at: gate.opened.expires_at };
}

/**
 * The timeout ladder of a plan or step gate. The gate waits for its approvers; if the approval
 * policy has `remindAfterSeconds`, the wait ends there and a second wait reminds them; when a
 * group lets the gate time out it is handed to the next group of `escalateTo` (same ladder), and
 * after the last group the gate rejects with reason `timed out`: it never approves by itself.
 *
 * Every rung is a task-token wait on the gate Lambda (the `ladder` field names the rung), because
 * a timed-out token is dead: each rung hands the waiting gate a fresh one, and a decision that
 * arrived between two rungs is passed on by the next rung. Every rung's decision goes where the
 * first wait's goes, and every rung waits with the same input, so a decision made after a
 * reminder or an escalation finds the plan's state as the first wait would have.
 */
import type { Plan } from '../plan/schema.ts';
import type { ApprovalPolicy, GateKind } from '../runtime/payloads/index.ts';
import type { AslStates } from './asl.ts';
import { gateTask } from './gate-task.ts';
import { jsonata, literal } from './jsonata.ts';

/** What the ladder needs of the plan's approval policy. */
export interface GateLadderPolicy {
  /** How long each group has to decide. */
  readonly timeoutSeconds: number;
  /** @default - no reminder */
  readonly remindAfterSeconds?: number;
  /** The groups asked after the plan's approvers, in order, as policies (`$approval` of their rung). */
  readonly groups: readonly ApprovalPolicy[];
}

export function gateLadderPolicy(plan: Plan): GateLadderPolicy {
  const { timeoutSeconds, remindAfterSeconds, escalateTo = [], forbiddenApprovers } = plan.approval;
  return {
    timeoutSeconds,
    ...(remindAfterSeconds !== undefined ? { remindAfterSeconds } : {}),
    groups: escalateTo.map((group) => ({
      approvers: group.approvers,
      forbiddenApprovers,
      quorum: group.quorum,
    })),
  };
}

/**
 * How long the gate Lambda may take to answer the expiry rung itself: it answers at once, so
 * only a failure to answer reaches this (and then the gate fails closed with `onTimeout`).
 */
export const EXPIRY_WAIT_SECONDS = 300;

export interface GateLadderProps {
  readonly kind: Extract<GateKind, 'plan' | 'step'>;
  /** The first wait's state name; the other rungs are named after it. */
  readonly name: string;
  readonly comment?: string;
  /** The gate request's own fields (see gateTask). */
  readonly payload: Readonly<Record<string, unknown>>;
  readonly policy: GateLadderPolicy;
  /** Output/Assign and Next of every rung: each delivers a decision. */
  readonly onDecision: Readonly<Record<string, unknown>>;
  /** A Catch (without ErrorEquals) for when even the expiry rung got no answer. */
  readonly onTimeout: Readonly<Record<string, unknown>>;
}

export function ladderStateNames(name: string, policy: GateLadderPolicy) {
  const levels = policy.groups.length + 1;
  return {
    ask: (level: number) => (level === 0 ? name : `${name} group ${level}`),
    remind: (level: number) => `${name} remind ${level}`,
    expired: `${name} expired`,
    levels,
  };
}

/** The rungs' states; the first is `props.name`. */
export function gateLadder(props: GateLadderProps): AslStates {
  const { policy } = props;
  const names = ladderStateNames(props.name, policy);
  const remind = policy.remindAfterSeconds;
  const states: AslStates = {};
  const rung = (
    name: string,
    ladder: { stage: 'remind' | 'escalate' | 'expire'; level: number } | undefined,
    waitSeconds: number,
    next: string | undefined,
    approval?: ApprovalPolicy,
  ) => {
    states[name] = gateTask({
      kind: props.kind,
      ...(props.comment && !ladder ? { comment: props.comment } : {}),
      payload: {
        ...props.payload,
        ...(ladder ? { ladder } : {}),
        ...(approval ? { approval: literal(approval) } : {}),
      },
      // The link lives as long as its group may answer; the wait may end earlier (the reminder).
      timeoutSeconds: ladder?.stage === 'expire' ? EXPIRY_WAIT_SECONDS : policy.timeoutSeconds,
      waitSeconds,
      rest: {
        ...props.onDecision,
        // The next rung gets this rung's input (the steps so far, the gate's round): a JSONata
        // Catch without Output would hand it the timeout error instead, and the ledger would be lost.
        Catch: [
          {
            ErrorEquals: ['States.Timeout'],
            ...(next ? { Output: jsonata('$states.input'), Next: next } : props.onTimeout),
          },
        ],
      },
    });
  };
  for (let level = 0; level < names.levels; level++) {
    const after = level + 1 < names.levels ? names.ask(level + 1) : names.expired;
    const group = level === 0 ? undefined : policy.groups[level - 1];
    const ask = level === 0 ? undefined : ({ stage: 'escalate', level } as const);
    if (remind === undefined) {
      rung(names.ask(level), ask, policy.timeoutSeconds, after, group);
    } else {
      rung(names.ask(level), ask, remind, names.remind(level), group);
      rung(names.remind(level), { stage: 'remind', level }, policy.timeoutSeconds - remind, after);
    }
  }
  rung(names.expired, { stage: 'expire', level: names.levels - 1 }, EXPIRY_WAIT_SECONDS, undefined);
  return states;
}

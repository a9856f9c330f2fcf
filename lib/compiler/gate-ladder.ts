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
import type { GateApprovers, GateKind } from '../runtime/payloads/index.ts';
import { GateTask, type GateTaskProps } from './gate-task.ts';
import { jsonata, literal } from './jsonata.ts';
import type { State, TaskField } from './states/index.ts';

/** What the ladder needs of the plan's approval policy. */
export interface GateLadderPolicy {
  /** How long each group has to decide. */
  readonly timeoutSeconds: number;
  /** @default - no reminder */
  readonly remindAfterSeconds?: number;
  /** The groups asked after the plan's approvers, in order, as policies (`$approval` of their rung). */
  readonly groups: readonly GateApprovers[];
}

export function gateLadderPolicy(plan: Plan): GateLadderPolicy {
  const { timeoutSeconds, remindAfterSeconds, escalateTo = [], forbiddenApprovers } = plan.approval;
  return {
    timeoutSeconds,
    remindAfterSeconds,
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
  /** @default - none */
  readonly comment?: string;
  /** The gate request's own fields (see GateTask). */
  readonly payload: Readonly<Record<string, unknown>>;
  readonly policy: GateLadderPolicy;
  /** What every rung makes of a decision, and where it goes: each delivers one. */
  readonly onDecision: Pick<GateTaskProps, 'assign' | 'output' | 'next'>;
  /** Where the run goes when even the expiry rung got no answer (a Catch of `States.Timeout`). */
  readonly onTimeout: { readonly output?: unknown; readonly next: string };
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

/** Where a rung stands on the ladder; the first wait has none. */
type RungStage = { readonly stage: 'remind' | 'escalate' | 'expire'; readonly level: number };

/** The rungs' states; the first is `props.name`. */
export function gateLadder(props: GateLadderProps): State[] {
  const { policy } = props;
  const names = ladderStateNames(props.name, policy);
  const remind = policy.remindAfterSeconds;
  const states: State[] = [];
  for (let level = 0; level < names.levels; level++) {
    const after = level + 1 < names.levels ? names.ask(level + 1) : names.expired;
    const group = level === 0 ? undefined : policy.groups[level - 1];
    const ask = level === 0 ? undefined : ({ stage: 'escalate', level } as const);
    if (remind === undefined) {
      states.push(rung(props, names.ask(level), ask, policy.timeoutSeconds, after, group));
    } else {
      states.push(rung(props, names.ask(level), ask, remind, names.remind(level), group));
      states.push(
        rung(props, names.remind(level), { stage: 'remind', level }, policy.timeoutSeconds - remind, after),
      );
    }
  }
  states.push(
    rung(props, names.expired, { stage: 'expire', level: names.levels - 1 }, EXPIRY_WAIT_SECONDS, undefined),
  );
  return states;
}

function rung(
  props: GateLadderProps,
  name: string,
  ladder: RungStage | undefined,
  waitSeconds: number,
  next: string | undefined,
  approval?: GateApprovers,
): GateLadderRung {
  return new GateLadderRung(name, {
    kind: props.kind,
    comment: ladder ? undefined : props.comment,
    payload: {
      ...props.payload,
      ladder,
      ...(approval ? { approval: literal(approval) } : {}),
    },
    // The link lives as long as its group may answer; the wait may end earlier (the reminder).
    timeoutSeconds: ladder?.stage === 'expire' ? EXPIRY_WAIT_SECONDS : props.policy.timeoutSeconds,
    waitSeconds,
    ...props.onDecision,
    // The next rung gets this rung's input (the steps so far, the gate's round): a JSONata
    // Catch without Output would hand it the timeout error instead, and the ledger would be lost.
    catch: [
      next
        ? { errorEquals: ['States.Timeout'], output: jsonata('$states.input'), next }
        : { errorEquals: ['States.Timeout'], ...props.onTimeout },
    ],
  });
}

/**
 * A rung's field order: its Next before its Catch (the order definitions have always had; it is
 * part of their bytes).
 */
const RUNG_FIELD_ORDER: readonly TaskField[] = [
  'Type',
  'Comment',
  'Resource',
  'Arguments',
  'TimeoutSeconds',
  'Retry',
  'Assign',
  'Output',
  'Next',
  'End',
  'Catch',
];

/** One wait of a gate's timeout ladder. */
class GateLadderRung extends GateTask {
  protected override get fieldOrder(): readonly TaskField[] {
    return RUNG_FIELD_ORDER;
  }
}

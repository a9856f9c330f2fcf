/**
 * What every channel shows of a waiting gate, from a notice (email, Slack, the terminal) or a
 * stored gate (the page, the gate JSON): the plan, the approval view (plan gate) or the step's
 * view (step gate), who submitted, who may approve, the quorum and the votes so far, and the
 * deadline. The renderers (view-text.ts, view-html.ts, notify/view-slack.ts) take only this.
 */
import type {
  AbortRollback,
  ApprovalNotice,
  ApprovalView,
  ContextEntry,
  FilledValue,
  GateApprovers,
  GateKind,
  GateRevision,
  PlanIdentity,
  RecoveryAdvice,
  StepGateView,
} from '../payloads/index.ts';
import type { Redactor } from '../secrets/redact.ts';
import type { GateView } from './gate-item.ts';
import { revisedStepGate, revisedView } from './revised-view.ts';

export interface ShownGate {
  readonly kind: GateKind;
  readonly plan: PlanIdentity;
  readonly stepId?: string;
  readonly description?: string;
  readonly objective?: string;
  /** The plan's number of steps (plan gate). */
  readonly stepCount?: number;
  /** Plan gate: what the approval covers. */
  readonly view?: ApprovalView;
  /** Step gate: the step, what already ran and the values it will consume. */
  readonly stepGate?: StepGateView;
  readonly policy: GateApprovers;
  readonly submittedBy?: string;
  /** How the plan's processes run (sandboxed, or unsandboxed as whom). */
  readonly runsAs?: string;
  readonly votes: readonly { readonly by: string; readonly decision: string }[];
  /** ISO 8601. */
  readonly expiresAt: string;
  readonly round: number;
  readonly question?: string;
  /** The content as approvers modified it (an approval with modifications); answers bind to its digest. */
  readonly revision?: GateRevision;
  /** Escalation: the rollbacks an ABORT runs, as of when it was asked. */
  readonly abortRollsBack?: readonly AbortRollback[];
  /** A newer version of the plan closed this gate, where the gate item records it (branch `versions`). */
  readonly supersededBy?: unknown;
  /** Escalation: what the model suggests (seed 001's third strategy), beside the person's choices. */
  readonly recovery?: RecoveryAdvice;
}

/** Fields other branches add to the gate item; shown when present. */
type LaterFields = { readonly revision?: GateRevision; readonly supersededBy?: unknown };

function later(source: LaterFields): Pick<ShownGate, 'revision' | 'supersededBy'> {
  return {
    revision: source.revision,
    ...(source.supersededBy !== undefined && source.supersededBy !== null
      ? { supersededBy: source.supersededBy }
      : {}),
  };
}

export function shownOfNotice(notice: ApprovalNotice): ShownGate {
  return asRevised({
    kind: notice.kind,
    plan: notice.plan,
    stepId: notice.stepId,
    description: notice.description,
    ...(notice.summary ? { objective: notice.summary.objective, stepCount: notice.summary.steps } : {}),
    ...(notice.summary?.view ? { view: notice.summary.view } : {}),
    stepGate: notice.stepGate,
    policy: notice.policy,
    submittedBy: notice.submittedBy,
    runsAs: notice.runsAs,
    votes: notice.votes ?? [],
    expiresAt: notice.expiresAt,
    round: notice.round,
    ...(notice.question ? { question: notice.question } : {}),
    abortRollsBack: notice.abortRollsBack,
    recovery: notice.recovery,
    ...later(notice as LaterFields),
  });
}

export function shownOfGate(gate: GateView): ShownGate {
  return asRevised({
    kind: gate.kind,
    plan: { id: gate.planId, version: gate.planVersion, digest: gate.planDigest },
    stepId: gate.stepId,
    description: gate.description,
    ...(gate.summary ? { objective: gate.summary.objective, stepCount: gate.summary.steps } : {}),
    ...(gate.summary?.view ? { view: gate.summary.view } : {}),
    stepGate: gate.stepGate,
    policy: gate.policy,
    submittedBy: gate.submittedBy,
    runsAs: gate.runsAs,
    votes: gate.votes.map((v) => ({ by: v.by, decision: v.decision.decision })),
    expiresAt: gate.expiresAt,
    round: gate.round,
    ...(gate.question ? { question: gate.question } : {}),
    abortRollsBack: gate.abortRollsBack,
    recovery: gate.recovery,
    ...later(gate as LaterFields),
  });
}

/** A modified gate shows what its revision runs: the steps as changed, their marks recomputed. */
function asRevised(gate: ShownGate): ShownGate {
  const { revision } = gate;
  if (!revision) return gate;
  return {
    ...gate,
    ...(gate.view ? { view: revisedView(gate.view, revision) } : {}),
    ...(gate.stepGate ? { stepGate: revisedStepGate(gate.stepGate, revision) } : {}),
  };
}

/** "v3", from however the `versions` branch records the newer version. */
export function supersededText(supersededBy: unknown): string {
  if (typeof supersededBy === 'number') return `v${supersededBy}`;
  if (typeof supersededBy === 'string') return supersededBy;
  if (supersededBy !== null && typeof supersededBy === 'object') {
    const version = (supersededBy as { version?: unknown }).version;
    if (typeof version === 'number') return `v${version}`;
  }
  return 'a newer version';
}

/** Who may approve, in words: the listed approvers (or anyone), minus the forbidden and the submitter. */
export function approversText(gate: ShownGate): string {
  const who = gate.policy.approvers.length > 0 ? gate.policy.approvers.join(', ') : 'anyone';
  const not = [
    ...new Set([...gate.policy.forbiddenApprovers, ...(gate.submittedBy ? [gate.submittedBy] : [])]),
  ];
  return not.length > 0 ? `${who} (never ${not.join(', ')})` : who;
}

/** "1 of 2 (bob: APPROVE)", or "0 of 1". */
export function quorumText(gate: ShownGate): string {
  const voted = gate.votes.map((v) => `${v.by}: ${v.decision}`).join(', ');
  return `${gate.votes.length} of ${gate.policy.quorum}${voted ? ` (${voted})` : ''}`;
}

export interface DeadlineOptions {
  /** The viewer's IANA time zone. @default 'UTC' */
  readonly timeZone?: string;
  /** @default new Date() */
  readonly now?: Date;
}

/**
 * The deadline in the viewer's time zone with UTC beside it and how long is left:
 * "2025-03-01 14:00 Europe/Paris (13:00 UTC), in 23 h"; in UTC only when that is the zone.
 */
export function deadlineText(expiresAt: string, options: DeadlineOptions = {}): string {
  const at = new Date(expiresAt);
  if (Number.isNaN(at.getTime())) return expiresAt;
  const zone = validZone(options.timeZone) ?? 'UTC';
  const utc = `${formatIn(at, 'UTC')} UTC`;
  const left = relative(at, options.now ?? new Date());
  if (zone === 'UTC' || zone === 'Etc/UTC') return `${utc}, ${left}`;
  return `${formatIn(at, zone)} ${zone} (${utc.slice(11)}), ${left}`;
}

function validZone(zone: string | undefined): string | undefined {
  if (!zone) return undefined;
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return zone;
  } catch {
    return undefined;
  }
}

/** `YYYY-MM-DD HH:MM` in `zone`. */
function formatIn(at: Date, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}`;
}

/** "in 23 h", "in 5 min", "2 h ago". */
function relative(at: Date, now: Date): string {
  const seconds = Math.round((at.getTime() - now.getTime()) / 1000);
  const abs = Math.abs(seconds);
  const amount =
    abs >= 2 * 86_400
      ? `${Math.round(abs / 86_400)} days`
      : abs >= 3600
        ? `${Math.round(abs / 3600)} h`
        : abs >= 60
          ? `${Math.round(abs / 60)} min`
          : `${abs} s`;
  return seconds >= 0 ? `in ${amount}` : `${amount} ago`;
}

/** "retries: transient 2, logic/unknown 1, others 0; then ask" from a step's recovery lines. */
export function recoveryText(lines: NonNullable<ApprovalView['steps'][number]['recovery']>): string {
  const ends = new Set(lines.map((l) => l.escalation));
  const parts = lines.map(
    (l) => `${l.classes.join('/')} ${l.retries}${ends.size > 1 ? ` then ${l.escalation}` : ''}`,
  );
  return `retries: ${parts.join(', ')}${ends.size === 1 ? `; then ${[...ends][0]}` : ''}`;
}

/** Each strategy as the person reads it. */
const STRATEGY_TEXT: Readonly<Record<RecoveryAdvice['suggestion']['strategy'], string>> = {
  retry_with_args: 'retry the step with changed args',
  skip: 'skip the step',
  insert_steps: 'insert recovery steps before the step',
  abort: 'abort the run',
};

/**
 * The model's suggestion as every channel shows it: the headline (who suggests what), its
 * reasons, what it would change (exact), and what accepting it does. Model text is shown as
 * written: each renderer escapes and redacts it for its medium.
 */
export function suggestionText(advice: RecoveryAdvice): {
  readonly headline: string;
  readonly reasons: string;
  readonly changes: readonly string[];
  readonly accepting: string;
} {
  const { suggestion } = advice;
  const changes =
    suggestion.strategy === 'retry_with_args'
      ? [`args: ${JSON.stringify(suggestion.args)}`]
      : suggestion.strategy === 'insert_steps'
        ? suggestion.steps.map(
            (step) =>
              `${step.id}: ${step.description} (${step.tool ?? `agent ${step.target ?? ''}`}${Object.keys(step.args).length > 0 ? ` ${JSON.stringify(step.args)}` : ''})`,
          )
        : [];
  const accepting = advice.revision
    ? `accepting it ends this run and sends version ${advice.revision.version} of the plan (${advice.revision.digest}) to the gate, where the change is shown`
    : suggestion.strategy === 'skip'
      ? 'accepting it skips the step'
      : suggestion.strategy === 'abort'
        ? 'accepting it aborts the run'
        : 'it changes the plan: answer retry, skip or abort here';
  return {
    headline: `The model (${advice.provider} ${advice.model}) suggests: ${STRATEGY_TEXT[suggestion.strategy]}. The decision is yours.`,
    reasons: suggestion.reasons,
    changes,
    accepting,
  };
}

/** The plan's budget in words, e.g. "300 s wall clock, $2 cost, 300000 tokens". */
export function budgetText(budget: NonNullable<ApprovalView['budget']>): string {
  return [
    budget.wallClockSeconds !== undefined ? `${budget.wallClockSeconds} s wall clock` : undefined,
    budget.costUsd !== undefined ? `$${budget.costUsd} cost` : undefined,
    budget.tokens !== undefined ? `${budget.tokens} tokens` : undefined,
    budget.maxCommands !== undefined ? `${budget.maxCommands} commands per agent` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
}

/** The sentence every channel says when commands are left out. */
export function notShownText(notShown: number, plan: PlanIdentity): string {
  return `${notShown} step${notShown === 1 ? "'s" : "s'"} commands are not shown here: \`plangate render <plan> --format yaml\` shows the whole plan ${plan.id} v${plan.version} (digest ${plan.digest}).`;
}

/** Steps of the view whose calls were left out, and steps not listed at all. */
export function omitted(view: ApprovalView): { notShown: number; notListed: number } {
  const total = view.truncated?.total ?? view.steps.length;
  return {
    notShown: total - (view.truncated?.shown ?? view.steps.length),
    notListed: total - view.steps.length,
  };
}

/** A step's risk marks as short phrases, most serious first; empty when harmless and ungated. */
export function riskPhrases(step: ApprovalView['steps'][number]): string[] {
  const phrases: string[] = [];
  const { revised } = step;
  if (revised?.skipped)
    phrases.push(`skipped by revision ${revised.revision} (${revised.by}): it will not run`);
  if (revised?.replaces)
    phrases.push(
      `changed by revision ${revised.revision} (${revised.by}): it runs what is shown, no longer what it was`,
    );
  if (step.risks.destructive.length > 0) phrases.push(`destructive: ${step.risks.destructive.join('; ')}`);
  if (step.risks.contract.length > 0) phrases.push(`destructive contract: ${step.risks.contract.join('; ')}`);
  if (step.risks.rollback.length > 0) phrases.push(`destructive rollback: ${step.risks.rollback.join('; ')}`);
  if (step.risks.outsideWorkspace?.length)
    phrases.push(`${OUTSIDE_WORKSPACE}: ${step.risks.outsideWorkspace.join('; ')}`);
  if (step.aws?.length) phrases.push(`${AWS_ACCESS}: ${step.aws.join('; ')}`);
  phrases.push(step.risks.ownGate ? 'own gate before it runs' : 'no gate of its own');
  return phrases;
}

/** What an escalation's ABORT undoes, in one sentence introducing the list of `rollbacks` (if any). */
export function abortRollbacksText(rollbacks: readonly AbortRollback[]): string {
  return rollbacks.length > 0
    ? 'If you abort, these rollbacks run, in this order (and those of steps that complete before the abort, first):'
    : 'If you abort, nothing is rolled back: no step with a rollback has completed yet.';
}

const OUTSIDE_WORKSPACE = 'reaches outside the workspace';
/** A step that declares `aws`: what its processes may do there, as the plan AWS role, for this run. */
const AWS_ACCESS = 'uses AWS (the plan AWS role, this run only)';
const CONTROL_CHARACTERS = 'control or bidirectional characters, shown escaped';

/** The heading of the plan's context on every channel. */
export const CONTEXT_TITLE = 'Context (what ${context.<key>} is)';

/** A context entry's marks as phrases (warnings: outside the workspace, control characters), and a cut value's note. */
export function contextPhrases(entry: ContextEntry): string[] {
  return [
    ...(entry.outsideWorkspace ?? []).map((reason) => `${OUTSIDE_WORKSPACE}: ${reason}`),
    ...(entry.controlCharacters ? [CONTROL_CHARACTERS] : []),
    ...(entry.cut ? ['cut here: `plangate render <plan> --format yaml` shows it whole'] : []),
  ];
}

/** The call an abort runs, as shown: with its values filled in when they could be. */
export function abortRollbackCall(rollback: AbortRollback): NonNullable<AbortRollback['call']> {
  return rollback.filled ?? rollback.call ?? { form: 'json', text: '(not recorded)' };
}

/** A filled rollback's risk marks as warning phrases, most serious first. */
export function abortRollbackPhrases(rollback: AbortRollback): string[] {
  const risks = rollback.risks;
  if (!risks) return [];
  return [
    ...(risks.destructive.length > 0 ? [`destructive: ${risks.destructive.join('; ')}`] : []),
    ...(risks.outsideWorkspace.length > 0
      ? [`${OUTSIDE_WORKSPACE}: ${risks.outsideWorkspace.join('; ')}`]
      : []),
  ];
}

/** "${steps.mk.dir} = ../x", or why a value is not shown. */
export function filledValueText(value: FilledValue): string {
  if (value.secret) return `${value.raw}: a secret, never shown`;
  return value.value !== undefined ? `${value.raw} = ${value.value}` : `${value.raw}: not produced yet`;
}

/**
 * A phrase every channel shows as a warning: something destructive, outside the workspace, or a
 * change a revision made.
 */
export function isWarningPhrase(phrase: string): boolean {
  return (
    /^(destructive|changed|skipped)/.test(phrase) ||
    phrase.startsWith(OUTSIDE_WORKSPACE) ||
    phrase.startsWith(AWS_ACCESS) ||
    phrase === CONTROL_CHARACTERS
  );
}

/** A plan reference (`${secrets.db}`, `${steps.x.y}`): kept whole by {@link redactPlanText}. */
const PLAN_REFERENCE = /\$\{(?:steps|context|secrets)\.[^}]*\}/g;

/**
 * Plan text with credential shapes redacted, its references kept as written: `password=${secrets.db}`
 * names a secret, it does not hold one, and the approver must see which.
 */
export function redactPlanText(redactor: Redactor, text: string): string {
  // The text between references is redacted piece by piece: a reference is never taken for a value.
  let out = '';
  let last = 0;
  for (const match of text.matchAll(PLAN_REFERENCE)) {
    out += redactor.text(text.slice(last, match.index)) + match[0];
    last = match.index + match[0].length;
  }
  return out + redactor.text(text.slice(last));
}

/**
 * A revision in one line, on every channel: "revision 1 by bob (sha256:…): skips x; y args {…}.
 * Approvals of earlier content do not count for it." The changed args are shown verbatim.
 */
export function revisionLine(revision: GateRevision): string {
  const changes = [
    ...(revision.skipSteps.length > 0 ? [`skips ${revision.skipSteps.join(', ')}`] : []),
    ...Object.entries(revision.argOverrides).map(([id, args]) => `${id} args ${JSON.stringify(args)}`),
  ];
  return `revision ${revision.number} by ${revision.by} (${revision.digest}): ${changes.join('; ') || 'no change'}. Approvals of earlier content do not count for it.`;
}

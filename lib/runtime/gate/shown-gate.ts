/**
 * What every channel shows of a waiting gate, from a notice (email, Slack, the terminal) or a
 * stored gate (the page, the gate JSON): the plan, the approval view (plan gate) or the step's
 * view (step gate), who submitted, who may approve, the quorum and the votes so far, and the
 * deadline. The renderers (view-text.ts, view-html.ts, notify/view-slack.ts) take only this.
 */

import { NETWORK_LINE_START, networkLine } from '../../plan/network.ts';
import { distinctPrincipals, namesPrincipal } from '../../plan/principal-names.ts';
import { hiddenCharacters, lookAlikeWords } from '../../plan/visible-text.ts';
import type {
  AbortRollback,
  AgentStepView,
  ApprovalNotice,
  ApprovalView,
  ContextEntry,
  FilledValue,
  GateApprovers,
  GateKind,
  GateRevision,
  PlanIdentity,
  RecoveryAdvice,
  ShownCall,
  StepGateView,
  StepView,
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
  /** What every channel says first: hidden characters, look-alike words, commands this view does not show. */
  readonly warnings: readonly GateWarning[];
  /** Steps whose commands this view does not show: such a gate is never approvable from it. */
  readonly hiddenCommands?: HiddenCommands;
}

/** A warning at the top of the gate: a title and the places it concerns (plan text as written: each channel escapes it). */
export interface GateWarning {
  readonly kind: 'hidden-characters' | 'look-alike' | 'hidden-commands';
  readonly title: string;
  readonly items: readonly string[];
}

/** What a view leaves out of what runs: steps listed without their calls, and steps not listed. */
export interface HiddenCommands {
  readonly steps: readonly string[];
  readonly notListed: number;
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
  return withWarnings({
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
  return withWarnings({
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

/** The gate as its revision runs it, with the warnings every channel shows first. */
function withWarnings(gate: Omit<ShownGate, 'warnings'>): ShownGate {
  const revised = asRevised(gate);
  const hidden = hiddenCommandsOf(revised);
  return {
    ...revised,
    ...(hidden ? { hiddenCommands: hidden } : {}),
    warnings: gateWarnings(revised, hidden),
  };
}

/** Steps whose calls the gate's view left out to fit (plan gate) or the step's (step gate). */
function hiddenCommandsOf(gate: Omit<ShownGate, 'warnings'>): HiddenCommands | undefined {
  const steps = [
    ...(gate.view?.steps.filter((step) => step.detailsOmitted).map((step) => step.id) ?? []),
    ...(gate.stepGate?.step.detailsOmitted ? [gate.stepGate.step.id] : []),
  ];
  const notListed = gate.view ? omitted(gate.view).notListed : 0;
  return steps.length > 0 || notListed > 0 ? { steps, notListed } : undefined;
}

/** One place of plan text: where it is (as the warning names it), the text, and whether it is a call (hosts, paths). */
type Place = readonly [where: string, text: string, call: boolean];

/** Every piece of plan-authored (or model-, output-authored) text the gate shows, with where it is. */
function placesOf(gate: Omit<ShownGate, 'warnings'>): Place[] {
  const places: Place[] = [];
  const text = (where: string, value: string | undefined) => {
    if (value !== undefined) places.push([where, value, false]);
  };
  const call = (where: string, shown: ShownCall | undefined) => {
    if (!shown) return;
    places.push([where, shown.text, true]);
    for (const detail of shown.details ?? []) places.push([`${where}, ${detail.label}`, detail.value, true]);
  };
  const step = (view: StepView) => {
    const at = `step ${view.id}`;
    text(at, view.description);
    call(`${at} runs`, view.call);
    call(`${at} was`, view.revised?.replaces);
    call(`${at} contract`, view.contract);
    call(`${at} rollback`, view.rollback?.call);
    call(`${at} rollback contract`, view.rollback?.contract);
  };
  text('the objective', gate.objective);
  text('the step', gate.description);
  text('the question asked', gate.question);
  for (const view of gate.view?.steps ?? []) step(view);
  for (const post of gate.view?.postconditions ?? []) {
    text(`postcondition ${post.id}`, post.description);
    call(`postcondition ${post.id} check`, post.contract);
  }
  for (const entry of gate.view?.context ?? []) places.push([`context.${entry.key}`, entry.value, true]);
  if (gate.stepGate) {
    step(gate.stepGate.step);
    for (const value of gate.stepGate.consumes ?? [])
      if (value.value !== undefined) places.push([`value ${value.raw}`, value.value, true]);
    for (const done of gate.stepGate.completed ?? [])
      if (done.evidence)
        text(`step ${done.id} evidence`, `${done.evidence.summary}\n${done.evidence.excerpt ?? ''}`);
  }
  for (const rollback of gate.abortRollsBack ?? []) {
    call(`undo ${rollback.stepId}`, abortRollbackCall(rollback));
    for (const value of rollback.values ?? []) text(`undo ${rollback.stepId}, ${value.raw}`, value.value);
  }
  if (gate.recovery) {
    const shown = suggestionText(gate.recovery);
    text("the model's suggestion", [shown.reasons, ...shown.changes].join('\n'));
  }
  return places;
}

/** The warnings of a gate, most serious first; empty when its text hides nothing and its view shows every command. */
function gateWarnings(gate: Omit<ShownGate, 'warnings'>, hidden: HiddenCommands | undefined): GateWarning[] {
  const warnings: GateWarning[] = [];
  if (hidden)
    warnings.push({
      kind: 'hidden-commands',
      title: HIDDEN_COMMANDS_TITLE,
      items: [
        ...(hidden.steps.length > 0
          ? [
              `the commands of step${hidden.steps.length === 1 ? '' : 's'} ${hidden.steps.join(', ')} (too large for the gate)`,
            ]
          : []),
        ...(hidden.notListed > 0 ? [`${hidden.notListed} more steps, not listed at all`] : []),
        `The approval page (this gate's link) shows every command of ${gate.plan.id} v${gate.plan.version} (digest ${gate.plan.digest}), page by page, and takes an approval once every page was shown; \`plangate render <plan> --format text\` shows the whole plan too.`,
      ],
    });
  const places = placesOf(gate);
  const hiddenItems = places.flatMap(([where, text]) => {
    const found = hiddenCharacters(text);
    return found.length > 0 ? [`${where}: ${found.join(', ')}`] : [];
  });
  if (hiddenItems.length > 0)
    warnings.push({ kind: 'hidden-characters', title: HIDDEN_CHARACTERS_TITLE, items: unique(hiddenItems) });
  const lookAlikeItems = places.flatMap(([where, text, isCall]) =>
    isCall ? lookAlikeWords(text).map((word) => `${where}: ${word}`) : [],
  );
  if (lookAlikeItems.length > 0)
    warnings.push({ kind: 'look-alike', title: LOOK_ALIKE_TITLE, items: unique(lookAlikeItems) });
  return warnings;
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}

/**
 * Why this view cannot approve the gate, or undefined: it hides a command that runs. Email, Slack,
 * the terminal and the gate JSON render it; the approval page shows the whole plan instead
 * (whole-view.ts), and the approvals API takes an approval only from a reader shown every page.
 */
export function notApprovableReason(gate: ShownGate): string | undefined {
  const hidden = gate.hiddenCommands;
  if (!hidden) return undefined;
  const what = [
    ...(hidden.steps.length > 0 ? [`the commands of ${hidden.steps.join(', ')}`] : []),
    ...(hidden.notListed > 0 ? [`${hidden.notListed} steps not listed`] : []),
  ].join(' and ');
  return `this gate cannot be approved here: its view does not show ${what} (too large for the gate). Open its approval page, which shows every command page by page, and approve there once you have seen every page`;
}

/** The warnings' titles, the same on every channel. */
export const HIDDEN_COMMANDS_TITLE =
  'This view does not show every command that runs, so the gate cannot be approved from it (its approval page shows them all). Not shown:';
export const HIDDEN_CHARACTERS_TITLE =
  'This plan contains invisible or direction-changing characters, shown here as ⟨U+…⟩ symbols, in:';
export const LOOK_ALIKE_TITLE = 'Look-alike hosts or paths (letters that pass for others), in:';

/** A modified gate shows what its revision runs: the steps as changed, their marks recomputed. */
function asRevised<T extends Omit<ShownGate, 'warnings'>>(gate: T): T {
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

/** What each kind of gate asks, as every channel titles it. */
export const GATE_TITLES: Record<GateKind, string> = {
  plan: 'Plan approval requested',
  step: 'Step approval requested',
  escalation: 'A step failed: retry, skip or abort?',
  human: 'A step needs you to do it',
};

/** Who may approve, in words: the listed approvers (or anyone), minus the forbidden and the submitter. */
export function approversText(gate: Pick<ShownGate, 'policy' | 'submittedBy'>): string {
  const who = gate.policy.approvers.length > 0 ? gate.policy.approvers.join(', ') : 'anyone';
  const not = [
    ...distinctPrincipals([
      ...gate.policy.forbiddenApprovers,
      ...(gate.submittedBy ? [gate.submittedBy] : []),
    ]),
  ];
  return not.length > 0 ? `${who} (never ${not.join(', ')})` : who;
}

/** Who may still approve: the approvers named who have not voted (not the submitter, not the forbidden). */
export function awaited(gate: {
  readonly policy: GateApprovers;
  readonly votes: readonly { readonly by: string }[];
  readonly submittedBy?: string | undefined;
}): string[] {
  const out = [...gate.votes.map((v) => v.by), ...gate.policy.forbiddenApprovers];
  if (gate.submittedBy !== undefined) out.push(gate.submittedBy);
  return gate.policy.approvers.filter((who) => !namesPrincipal(out, who));
}

/**
 * Who may answer a waiting gate, in words (`approversText`) and by name (`awaited`: empty when
 * anyone may). Only plan and step gates are approved, so only they refuse their submitter; an
 * escalation or a human step has one answer, which the submitter may give.
 */
export function whoMayAnswer(gate: {
  readonly kind: GateKind;
  readonly policy: GateApprovers;
  readonly votes: readonly { readonly by: string }[];
  readonly submittedBy?: string | undefined;
}): { readonly text: string; readonly names: string[] } {
  const approving = gate.kind === 'plan' || gate.kind === 'step';
  const asked = {
    policy: gate.policy,
    votes: approving ? gate.votes : [],
    submittedBy: approving ? gate.submittedBy : undefined,
  };
  return { text: approversText(asked), names: awaited(asked) };
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
  phrases.push(...effectPhrases(step.risks));
  if (step.risks.outsideWorkspace?.length)
    phrases.push(`${OUTSIDE_WORKSPACE}: ${step.risks.outsideWorkspace.join('; ')}`);
  if (step.aws?.length) phrases.push(`${AWS_ACCESS}: ${step.aws.join('; ')}`);
  if (step.network?.length) phrases.push(networkLine({ hosts: step.network }));
  phrases.push(step.risks.ownGate ? 'own gate before it runs' : 'no gate of its own');
  return phrases;
}

/** The step's contract's marks, shown with the contract (never as the step's own): why it is destructive. */
export function contractRiskPhrases(step: ApprovalView['steps'][number]): string[] {
  return step.risks.contract.length > 0 ? [`destructive contract: ${step.risks.contract.join('; ')}`] : [];
}

/** The step's rollback's marks, shown with the rollback (it runs only on abort or rehearsal, never as the step). */
export function rollbackRiskPhrases(step: ApprovalView['steps'][number]): string[] {
  return step.risks.rollback.length > 0 ? [`destructive rollback: ${step.risks.rollback.join('; ')}`] : [];
}

/** One labelled fact of an agent step's run; `code` when it is a command to show exactly. */
export interface AgentFact {
  readonly label: string;
  readonly value: string;
  readonly code?: true;
}

/**
 * An agent step's run as every channel shows it: who runs it, the command, where it works, what
 * it may reach, its time limit and budget; what the gate does not know is said so.
 */
export function agentFacts(agent: AgentStepView): AgentFact[] {
  return [
    { label: 'agent run by', value: agent.runs },
    agent.command !== undefined
      ? { label: 'agent command', value: agent.command, code: true }
      : { label: 'agent command', value: 'not known at this gate: the one its worker is started with' },
    {
      label: 'workspace',
      value: agent.workspace ?? "not known at this gate: its worker's --workspace",
    },
    { label: 'may reach', value: agent.reach },
    { label: 'time limit', value: `${agent.timeLimitSeconds} s` },
    {
      label: 'budget',
      value: agent.budget ? budgetText(agent.budget) || 'none declared' : 'none declared',
    },
  ];
}

/** What an escalation's ABORT undoes, in one sentence introducing the list of `rollbacks` (if any). */
export function abortRollbacksText(rollbacks: readonly AbortRollback[]): string {
  return rollbacks.length > 0
    ? 'If you abort, these rollbacks run, in this order (and those of steps that complete before the abort, first):'
    : 'If you abort, nothing is rolled back: no step with a rollback has completed yet.';
}

/** "effect unknown: …" and "exfiltration: …" of a step or a postcondition's check. */
export function effectPhrases(marks: {
  readonly unknown?: readonly string[];
  readonly exfiltration?: readonly string[];
}): string[] {
  return [
    ...(marks.exfiltration?.length ? [`${EXFILTRATION}: ${marks.exfiltration.join('; ')}`] : []),
    ...(marks.unknown?.length ? [`${EFFECT_UNKNOWN}: ${marks.unknown.join('; ')}`] : []),
  ];
}

const EFFECT_UNKNOWN = 'effect unknown';
const EXFILTRATION = 'exfiltration';
const OUTSIDE_WORKSPACE = 'reaches outside the workspace';
/** A step that declares `aws`: what its processes may do there, as the plan AWS role, for this run. */
const AWS_ACCESS = 'uses AWS (the plan AWS role, this run only)';

/** The heading of the plan's context on every channel. */
export const CONTEXT_TITLE = 'Context (what ${context.<key>} is)';

/** A context entry's marks as phrases (warnings: outside the workspace), and a cut value's note. */
export function contextPhrases(entry: ContextEntry): string[] {
  return [
    ...(entry.outsideWorkspace ?? []).map((reason) => `${OUTSIDE_WORKSPACE}: ${reason}`),
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
 * A phrase every channel shows as a warning: something destructive, of unknown effect, sent away,
 * outside the workspace, or a change a revision made.
 */
export function isWarningPhrase(phrase: string): boolean {
  return (
    /^(destructive|changed|skipped)/.test(phrase) ||
    phrase.startsWith(EFFECT_UNKNOWN) ||
    phrase.startsWith(EXFILTRATION) ||
    phrase.startsWith(OUTSIDE_WORKSPACE) ||
    phrase.startsWith(AWS_ACCESS) ||
    phrase.startsWith(NETWORK_LINE_START)
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

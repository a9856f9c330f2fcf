/**
 * The pages around an answer: what happens next once it is recorded, why a link can no longer be
 * answered (in plain words, with what to do), and the run's progress as it stands (reloading
 * itself until the run ends; no script).
 */
import type { GateDecision, JournalRecord } from '../payloads/index.ts';
import { TIMEOUT_DECIDER } from '../payloads/index.ts';
import { escapeHtml } from '../shared/html.ts';
import { messagePage, nameList, page, utcText } from './approval-page.ts';
import type { AnswerOutcome } from './approvals.ts';
import { contentDigest, type GateView } from './gate-item.ts';
import type { ApprovalError } from './links.ts';
import { awaited } from './shown-gate.ts';

/** How often the progress page reloads while the run goes on. */
export const PROGRESS_REFRESH_SECONDS = 5;

/** A link to the run's progress page, when the answer came from a page that has one. */
function progressLink(href: string | undefined, text = "Follow the run's progress"): string {
  return href ? `<p><a href="${escapeHtml(href)}">${escapeHtml(text)}</a></p>` : '';
}

/**
 * The page after an answer was recorded: what was recorded and what happens next (the run goes
 * on, more approvals are needed, or it stops), with a link to the run's progress.
 */
export function outcomePage(
  gate: GateView,
  outcome: AnswerOutcome,
  {
    by,
    progressHref,
    note,
  }: {
    by: string | undefined;
    progressHref?: string;
    /** What the host did with the answer (e.g. `plangate run --goal` sends a question to the planner). */
    note?: string;
  },
): string {
  const recorded =
    outcome.status === 'pending'
      ? 'Your approval was recorded.'
      : outcome.status === 'modified'
        ? `Your changes were recorded as revision ${outcome.revision}.`
        : `Your answer (${outcome.decision.decision}) was recorded.`;
  const next =
    outcome.status === 'pending'
      ? outcome.held
        ? escapeHtml(`The gate still waits: ${outcome.held}.`)
        : stillNeeded(gate, outcome.votes, by)
      : outcome.status === 'modified'
        ? revisionNeedsQuorum(gate, outcome)
        : whatHappens(gate, outcome.decision);
  const runs = outcome.status !== 'decided' || runGoesOn(gate, outcome.decision);
  return page(
    'Recorded',
    [
      `<h1>${escapeHtml(recorded)}</h1>`,
      ...(note ? [`<p role="note">${escapeHtml(note)}</p>`] : []),
      `<p class="muted">Plan ${escapeHtml(gate.planId)} v${gate.planVersion}${gate.stepId ? `, step <code>${escapeHtml(gate.stepId)}</code>` : ''}</p>`,
      '<h2>What happens next</h2>',
      `<p>${next}</p>`,
      progressLink(progressHref, runs ? "Follow the run's progress" : 'See how the run ended'),
    ].join('\n'),
  );
}

/** "1 more approval needed (quorum 2): waiting for ben or cy." */
function stillNeeded(gate: GateView, votes: number, by: string | undefined): string {
  const left = Math.max(1, gate.policy.quorum - votes);
  const waiting = awaited({
    ...gate,
    votes: [
      ...gate.votes,
      ...(by ? [{ by, decision: { decision: 'APPROVE' as const }, digest: contentDigest(gate) }] : []),
    ],
  });
  return `${left} more approval${left === 1 ? '' : 's'} needed (quorum ${gate.policy.quorum}): waiting for ${waiting.length > 0 ? nameList(waiting, 'or') : 'another approver'}. Nothing runs until then.`;
}

/** A modification made a revision: nothing runs until the whole quorum approves it as shown. */
function revisionNeedsQuorum(
  gate: GateView,
  { revision, digest }: { revision: number; digest: string },
): string {
  const quorum = gate.policy.quorum;
  return `Revision ${revision} (<code>${escapeHtml(digest)}</code>) goes back to the gate. Approvals given before do not count for it: ${quorum} approval${quorum === 1 ? '' : 's'} of the revision as shown (yours included, once you have reviewed it) are needed before anything runs.`;
}

/** Whether the run goes on after this decision (for the progress link's words). */
function runGoesOn(gate: GateView, decision: GateDecision): boolean {
  return !(gate.kind === 'plan' && decision.decision === 'REJECT') && decision.decision !== 'ABORT';
}

/** What the decision does next, in one or two sentences (HTML). */
function whatHappens(gate: GateView, decision: GateDecision): string {
  const step = gate.stepId ? `<code>${escapeHtml(gate.stepId)}</code>` : 'the step';
  switch (decision.decision) {
    case 'APPROVE':
      return gate.kind === 'plan' ? 'The plan runs now.' : `The step ${step} runs now.`;
    case 'APPROVE_WITH_MODIFICATIONS': {
      const changed = Object.keys(decision.argOverrides);
      const parts = [
        ...(changed.length > 0 ? [`with new arguments for ${codes(changed)}`] : []),
        ...(decision.skipSteps.length > 0 ? [`without ${codes(decision.skipSteps)}`] : []),
      ];
      const how = parts.length > 0 ? `, ${parts.join(' and ')}` : '';
      return gate.kind === 'plan' ? `The plan runs now${how}.` : `The step ${step} runs now${how}.`;
    }
    case 'REJECT':
      return gate.kind === 'plan'
        ? 'The run was rejected and will not start.'
        : `The step ${step} will not run; the steps that wait for it will not run either. Steps that do not depend on it go on.`;
    case 'ASK_FOR_CLARIFICATION':
      return 'Nothing is approved. The gate asks again, with your question, for a clearer answer; you will get a new link.';
    case 'RETRY':
      return `The step ${step} runs again.`;
    case 'SKIP':
      return `The step ${step} is skipped: the steps that wait for it will not run. If the step is critical, the run stops.`;
    case 'ABORT':
      return 'The run stops here.';
    case 'DONE':
      return `Your report was recorded; the step's contract is checked next, then the run goes on.`;
    case 'FAILED':
      return 'The step failed: whoever handles its escalation is asked whether to retry, skip or abort.';
  }
}

function codes(ids: readonly string[]): string {
  return ids.map((id) => `<code>${escapeHtml(id)}</code>`).join(', ');
}

/** What the refusal page knows besides the error: the gate's decision (if decided) and where progress is. */
export interface RefusalContext {
  /** The decision of a gate already decided, and when. */
  readonly decided?: { readonly decision: GateDecision; readonly decidedAt?: string };
  /** A later version of the plan that closed this gate (set by the gate's versioning). */
  readonly supersededBy?: { readonly version: number; readonly linkId?: string };
  readonly progressHref?: string;
}

/**
 * Why a link or an answer was refused, titled in plain words ("Already answered by X at T",
 * "Expired", "Not valid", "Superseded by v2") with a sentence of what to do.
 */
export function refusalTitle(
  error: ApprovalError,
  context: RefusalContext = {},
): { title: string; message: string } {
  const superseded = context.supersededBy;
  if (superseded)
    return {
      title: `Superseded by v${superseded.version}`,
      message: `A newer version of this plan (v${superseded.version}) was submitted, so this one can no longer be answered. Review v${superseded.version} instead${superseded.linkId ? ' (link below)' : ': its approvers were sent a new link'}.`,
    };
  const decided = context.decided;
  switch (error.reason) {
    case 'used': {
      if (!decided)
        return {
          title: 'Already answered',
          message: 'This gate was already answered; there is nothing left to do here.',
        };
      const at = decided.decidedAt ? ` at ${utcText(new Date(decided.decidedAt))}` : '';
      const by = decided.decision.by;
      if (by === TIMEOUT_DECIDER)
        return {
          title: 'Expired',
          message: `Nobody answered in time, so the gate rejected it${at}. Ask whoever submitted the plan to submit it again if it should still run.`,
        };
      return {
        title: `Already answered by ${by ?? 'someone'}${at}`,
        message: `The answer was ${decided.decision.decision}${'reason' in decided.decision && decided.decision.reason ? ` (${decided.decision.reason})` : ''}. There is nothing left to answer here.`,
      };
    }
    case 'expired':
      return {
        title: 'Expired',
        message: `${capitalized(error.message)}. If the plan should still run, ask whoever submitted it to submit it again; if the gate was handed to other approvers, they were sent their own links.`,
      };
    case 'forged':
    case 'malformed':
    case 'not-found':
      return {
        title: 'Not valid',
        message:
          'This approval link is not valid. Open it again from the latest email or Slack message, copied whole.',
      };
    case 'forbidden':
      return {
        title: 'Not allowed',
        // Left as written: it starts with a person's name, and names are case-sensitive.
        message: `${error.message}. Ask one of the plan's approvers to answer.`,
      };
    case 'digest-mismatch':
      return {
        title: 'A different version',
        message: `${capitalized(error.message)}: reload the page and review what it shows now.`,
      };
    default:
      return {
        title: 'Not recorded',
        message: `${capitalized(error.message)}. Correct it and answer again.`,
      };
  }
}

/** The refusal as a page (see {@link refusalTitle}), with the link to the newer version or to progress. */
export function refusalPage(error: ApprovalError, context: RefusalContext = {}): string {
  const { title, message } = refusalTitle(error, context);
  const newer = context.supersededBy?.linkId
    ? `<p><a href="/approvals/${encodeURIComponent(context.supersededBy.linkId)}">Review v${context.supersededBy.version}</a></p>`
    : '';
  return messagePage(title, message, `${newer}${progressLink(context.progressHref)}`);
}

/**
 * The run's progress as the journal has it: its "[Task N/M] ✓/✗" lines and, once it ended, how.
 * While it runs, the page reloads itself every {@link PROGRESS_REFRESH_SECONDS} seconds (a meta
 * refresh: no script).
 */
export function progressPage(gate: GateView, records: readonly JournalRecord[]): string {
  const lines = records.flatMap((r) => (typeof r.details.progress === 'string' ? [r.details.progress] : []));
  const complete = records.find((r) => r.event === 'EXECUTION_COMPLETE');
  const title = `Progress of ${gate.planId} v${gate.planVersion}`;
  const status = complete
    ? `<p class="${complete.details.succeeded === true ? 'note' : 'alert'}" role="status"><strong>${complete.details.succeeded === true ? 'Finished: the run succeeded.' : 'Finished: the run did not succeed.'}</strong>${typeof complete.details.reason === 'string' ? ` ${escapeHtml(complete.details.reason)}` : ''}</p>`
    : `<p class="note" role="status">${waitingFor(records)} This page reloads every ${PROGRESS_REFRESH_SECONDS} seconds; <a href="">reload it now</a>.</p>`;
  return page(
    title,
    [
      `<h1>${escapeHtml(title)}</h1>`,
      status,
      lines.length > 0 ? `<pre>${lines.map(escapeHtml).join('\n')}</pre>` : '<p>No step has started yet.</p>',
    ].join('\n'),
    complete ? '' : `<meta http-equiv="refresh" content="${PROGRESS_REFRESH_SECONDS}">`,
  );
}

/** What a run that has not ended is doing: waiting at a gate (its latest event asks someone), or running. */
function waitingFor(records: readonly JournalRecord[]): string {
  // Reminders and escalations of the gate's timeout ladder, and a notice that reached nobody, are still the same wait.
  const same = new Set(['GATE_REMINDED', 'GATE_ESCALATED', 'GATE_NOTICE_UNDELIVERED']);
  const last = records.filter((r) => !same.has(r.event)).at(-1);
  const step = last?.task_id ? ` <code>${escapeHtml(last.task_id)}</code>` : '';
  if (last?.event === 'GATE_APPROVAL_REQUESTED')
    return step ? `Waiting for the approval of step${step}.` : 'Waiting for the approval of the plan.';
  if (last?.event === 'RECOVERY_ESCALATION' && last.details.user_decision === undefined)
    return `Waiting for an answer: step${step} failed.`;
  return 'Running.';
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

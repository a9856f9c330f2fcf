/**
 * Typed answers to a gate, as a person writes them in the terminal or on the approval page.
 * Plan and step gates: approve / skip <steps> (approve with modifications) / ask <question> /
 * reject <reason>. Escalations: retry / skip / abort. Seed 000's approval signals count too
 * ("yes", "proceed", "✓", 👍; "no").
 */
import {
  ACCEPT_SUGGESTION,
  type ApprovalDecision,
  type EscalationDecision,
  type GateKind,
  type HumanDecision,
} from '../runtime/payloads/index.ts';

export const GATE_CHOICES = [
  '  approve                 run the plan as shown        (a, yes, proceed, ✓)',
  '  override <reason>       approve, overriding the soft-mandatory policies that hold the gate (their override group only)',
  '  skip <step>[,<step>…]   approve without those steps  (their dependents are blocked)',
  '  change <step> <arg> <value>  a revision with that argument changed (JSON, or text); approve it after',
  '  ask <question>          ask for clarification        (the gate asks again)',
  '  reject <reason>         do not run it                (r, no)',
];

export const ESCALATION_CHOICES = [
  '  retry   run the step again (fix credentials or inputs out of band first)',
  '  skip    skip this step; its dependents are blocked',
  '  abort   stop the run (completed steps that declare a rollback are undone, newest first)',
];

/** An escalation of a call the platform's policy denied: a retry makes the same call, and is denied again. */
export const POLICY_DENIED_CHOICES = [
  '  retry   make the same call again: the policy denies it again unless its owners changed it',
  ...ESCALATION_CHOICES.slice(1),
];

/** The escalation's extra choice when the model suggested how to recover (its suggestion is shown above). */
export const ACCEPT_CHOICE = "  accept  take the model's suggestion shown above";

/** Taking the model's suggestion: the approvals API turns it into the decision it means. */
export interface AcceptSuggestionAnswer {
  readonly decision: typeof ACCEPT_SUGGESTION;
  readonly by: string;
}

export const HUMAN_CHOICES = [
  '  done [name=value …]   the step is done; give its declared outputs',
  '  failed <reason>       the step could not be done',
];

const APPROVE = new Set(['a', 'approve', 'approved', 'y', 'yes', 'proceed', 'ok', '✓', '👍']);
const REJECT = new Set(['r', 'reject', 'rejected', 'n', 'no']);

/** Parses a plan/step gate answer; a string is the problem to show. */
export function parseApproval(
  text: string,
  opts: { kind: GateKind; stepIds: readonly string[]; by: string },
): ApprovalDecision | string {
  const line = text.trim();
  const [word = '', ...rest] = line.split(/\s+/);
  const verb = word.toLowerCase();
  const tail = line.slice(word.length).trim();
  if (APPROVE.has(verb) && rest.length === 0) return { decision: 'APPROVE', by: opts.by };
  if (verb === 'override') {
    if (!tail) return 'write why after "override", e.g. "override incident 4711: the fix must ship now"';
    return { decision: 'APPROVE', by: opts.by, override: { reason: tail } };
  }
  if (verb === 's' || verb === 'skip') {
    if (opts.kind !== 'plan') return 'only the plan gate takes skipped steps; answer approve or reject';
    const skipSteps = tail.split(/[\s,]+/).filter(Boolean);
    if (skipSteps.length === 0) return 'name the steps to skip, e.g. "skip deploy,notify"';
    const unknown = skipSteps.filter((id) => !opts.stepIds.includes(id));
    if (unknown.length > 0)
      return `no step ${unknown.map((u) => `"${u}"`).join(', ')} in this plan (steps: ${opts.stepIds.join(', ')})`;
    return { decision: 'APPROVE_WITH_MODIFICATIONS', by: opts.by, skipSteps, argOverrides: {} };
  }
  if (verb === 'change') {
    const [, step = '', arg = '', value = ''] = /^\S+\s+(\S+)\s+(\S+)(?:\s(.*))?$/s.exec(line) ?? [];
    if (!step || !arg) return 'write "change <step> <arg> <value>", e.g. "change deploy command make deploy"';
    if (!opts.stepIds.includes(step))
      return `no step "${step}" in this plan (steps: ${opts.stepIds.join(', ')})`;
    return {
      decision: 'APPROVE_WITH_MODIFICATIONS',
      by: opts.by,
      skipSteps: [],
      argOverrides: { [step]: { [arg]: typedValue(value) } },
    };
  }
  if (verb === 'c' || verb === 'ask' || verb === '?') {
    if (!tail) return 'write the question after "ask"';
    return { decision: 'ASK_FOR_CLARIFICATION', by: opts.by, question: tail };
  }
  if (REJECT.has(verb))
    return { decision: 'REJECT', by: opts.by, reason: tail || 'rejected without a reason' };
  return `not an answer: "${line}"; answer approve, skip <steps>, ask <question> or reject <reason>`;
}

/** A typed value: JSON where it is JSON (`123`, `{"A": "1"}`, `"true"`), else the text itself. */
function typedValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Parses an escalation answer (`accept` where the gate shows a suggestion); a string is the problem to show. */
export function parseEscalation(
  text: string,
  by: string,
  suggested = false,
): EscalationDecision | AcceptSuggestionAnswer | string {
  const line = text.trim();
  const [word = ''] = line.split(/\s+/);
  const tail = line.slice(word.length).trim();
  switch (word.toLowerCase()) {
    case 'retry':
    case 'r':
      return { decision: 'RETRY', by, ...(tail ? { comment: tail } : {}) };
    case 'skip':
    case 's':
      return { decision: 'SKIP', by, ...(tail ? { comment: tail } : {}) };
    case 'abort':
    case 'a':
      return { decision: 'ABORT', by, ...(tail ? { reason: tail } : {}) };
    case 'accept':
      if (suggested) return { decision: ACCEPT_SUGGESTION, by };
      return 'there is no suggestion to accept; answer retry, skip or abort';
    default:
      return `not an answer: "${line}"; answer retry, skip${suggested ? ', abort or accept' : ' or abort'}`;
  }
}

/** Parses a human step's report: `done name=value …` or `failed <reason>`. */
export function parseHumanReport(text: string, by: string): HumanDecision | string {
  const line = text.trim();
  const [word = '', ...rest] = line.split(/\s+/);
  const verb = word.toLowerCase();
  if (verb === 'done') {
    const outputs: Record<string, string> = {};
    for (const pair of rest) {
      const eq = pair.indexOf('=');
      if (eq <= 0) return `"${pair}" is not name=value`;
      outputs[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    return { decision: 'DONE', by, outputs };
  }
  if (verb === 'failed') {
    const reason = line.slice(word.length).trim();
    return reason ? { decision: 'FAILED', by, reason } : 'say why after "failed"';
  }
  return `not an answer: "${line}"; answer done [name=value …] or failed <reason>`;
}

/**
 * What a person is told about a waiting gate, as plain text, HTML and Slack blocks. Built only
 * from the notice (which never holds a task token) and the approval link (an opaque, signed,
 * expiring, single-use id); every plan-authored string is redacted and escaped for its medium,
 * so a step name can neither inject markup nor smuggle a credential into a message.
 */

import { visibleText } from '../../plan/visible-text.ts';
import { GATE_TITLES, shownOfNotice } from '../gate/shown-gate.ts';
import { gateViewHtml, VIEW_STYLE } from '../gate/view-html.ts';
import { gateText } from '../gate/view-text.ts';
import type { ApprovalNotice } from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { escapeHtml } from '../shared/html.ts';
import { escapeSlack } from './slack-text.ts';
import { gateViewBlocks, SLACK_LIMITS } from './view-slack.ts';

export { escapeSlack } from './slack-text.ts';

export interface ApprovalMessage {
  readonly subject: string;
  readonly text: string;
  readonly html: string;
  /**
   * Slack Block Kit blocks. Decision buttons carry the shared link id as their value (nothing
   * else) and are answered by the approvals API's Slack route; the page button is a plain link.
   */
  readonly slackBlocks: readonly Record<string, unknown>[];
  /** The approval page. */
  readonly link: string;
}

/** One labelled line of the message. */
interface Line {
  readonly label: string;
  readonly value: string;
}

/** The Slack buttons that decide at once, per kind of gate; the rest is answered on the page. */
const SLACK_BUTTONS: Record<ApprovalNotice['kind'], readonly SlackDecision[]> = {
  plan: ['APPROVE', 'REJECT'],
  step: ['APPROVE', 'REJECT'],
  escalation: ['RETRY', 'SKIP', 'ABORT'],
  human: [],
};

/** The decisions that run something (the plan, the step again, the rollbacks): never offered by a message that cut a command. */
const RUNS_SOMETHING: ReadonlySet<SlackDecision> = new Set(['APPROVE', 'RETRY', 'ABORT']);

/** The decisions a Slack button gives at once (a question is asked in a modal; modifications and reports need the page). */
export const SLACK_DECISIONS = ['APPROVE', 'REJECT', 'RETRY', 'SKIP', 'ABORT'] as const;
export type SlackDecision = (typeof SLACK_DECISIONS)[number];
/** A decision button's action_id is this prefix and the decision, e.g. `plangate.APPROVE`. */
export const SLACK_ACTION_PREFIX = 'plangate.';
/**
 * "Ask a question" (plan and step gates): the button opens a modal (`callback`) whose input block
 * (`block`, `input`) holds the question, answered as ASK_FOR_CLARIFICATION, as on the page.
 */
export const SLACK_ASK = {
  action: `${SLACK_ACTION_PREFIX}ask`,
  callback: `${SLACK_ACTION_PREFIX}ask`,
  block: `${SLACK_ACTION_PREFIX}question`,
  input: 'question',
} as const;
/**
 * A button's value: the gate's link id and the content digest its message showed (the plan's, or
 * a revision's), so a click answers exactly what that message showed; a message about revision 1
 * answers revision 1, an older message is refused as stale.
 */
export function slackButtonValue(linkId: string, digest: string): string {
  return JSON.stringify({ linkId, digest });
}

/** The link id and digest of a button's value (a bare link id, from messages posted before: the plan's digest). */
export function parseSlackButtonValue(value: string): { linkId: string; digest?: string } {
  try {
    const parsed = JSON.parse(value) as { linkId?: unknown; digest?: unknown };
    if (typeof parsed.linkId === 'string')
      return {
        linkId: parsed.linkId,
        ...(typeof parsed.digest === 'string' ? { digest: parsed.digest } : {}),
      };
  } catch {
    // A bare link id.
  }
  return { linkId: value };
}

/** The block ids the Slack route finds again when it updates the message. */
export const SLACK_BLOCK_IDS = { actions: 'plangate.actions', status: 'plangate.status' } as const;

const BUTTON_LOOK: Record<SlackDecision, { label: string; style?: 'primary' | 'danger' }> = {
  APPROVE: { label: 'Approve', style: 'primary' },
  REJECT: { label: 'Reject', style: 'danger' },
  RETRY: { label: 'Retry', style: 'primary' },
  SKIP: { label: 'Skip' },
  ABORT: { label: 'Abort', style: 'danger' },
};

const STAGE_PREFIX: Record<NonNullable<ApprovalNotice['stage']>, string> = {
  reminder: 'Reminder: ',
  escalation: 'Escalated to you: ',
  revision: 'Modified, review it again: ',
};

/** Longest plan-authored text carried in a message. */
const MAX_FIELD = 1000;

export function approvalLink(baseUrl: string, approvalId: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/approvals/${encodeURIComponent(approvalId)}`;
}

/** Whose message it is: one emailed recipient gets a link bound to them. */
export interface MessageAddressee {
  /** The recipient-bound link id (LinkSigner.forRecipient). */
  readonly linkId: string;
  /** Who answers through it. */
  readonly recipient: string;
}

/**
 * The message about a gate. Without `to`, the shared link (Slack, anyone told): the approver
 * signs in on the page. With `to`, that recipient's own link, which answers as them.
 */
export function approvalMessage(
  notice: ApprovalNotice,
  baseUrl: string,
  to?: MessageAddressee,
): ApprovalMessage {
  const redactor = new Redactor();
  // Hidden characters become symbols before blanks are flattened (`\s` would turn some into spaces).
  const clean = (text: string) => {
    const flat = visibleText(redactor.text(text)).replace(/\s+/g, ' ').trim();
    return flat.length > MAX_FIELD ? `${flat.slice(0, MAX_FIELD - 1)}…` : flat;
  };
  const link = approvalLink(baseUrl, to ? to.linkId : notice.approvalId);
  const how = to
    ? `This link is yours alone: it answers as ${to.recipient}, works once and expires. Do not forward it.`
    : 'The link expires and carries no credentials; you sign in on the page to answer.';
  const title = `${notice.stage ? STAGE_PREFIX[notice.stage] : ''}${GATE_TITLES[notice.kind]}`;
  const lines: Line[] = [
    { label: 'Plan', value: `${notice.plan.id} v${notice.plan.version}` },
    { label: 'Digest', value: notice.plan.digest },
  ];
  if (notice.summary) {
    lines.push({ label: 'Objective', value: notice.summary.objective });
    lines.push({ label: 'Steps', value: String(notice.summary.steps) });
  }
  if (notice.stepId)
    lines.push({
      label: 'Step',
      value: notice.description ? `${notice.stepId}: ${notice.description}` : notice.stepId,
    });
  if (notice.human) {
    lines.push({ label: 'What to do', value: notice.human.instructions });
    if (notice.human.outputs.length > 0)
      lines.push({ label: 'Report', value: notice.human.outputs.join(', ') });
  }
  if (notice.failure)
    lines.push({
      label: 'Failure',
      value: `${notice.failure.failureClass} (${notice.failure.error}): ${notice.failure.message}`,
    });
  if (notice.failure?.policyDenial)
    lines.push({ label: 'Denied by policy', value: notice.failure.policyDenial.advice });
  if (notice.question) lines.push({ label: 'Question asked', value: notice.question });
  const gate = shownOfNotice(notice);
  const shown = lines.map((l) => ({ label: l.label, value: clean(l.value) }));
  const subject = clean(
    `[plangate] ${title}: ${notice.plan.id}${notice.stepId ? ` / ${notice.stepId}` : ''}`,
  );

  const text = [
    title,
    '',
    ...shown.map((l) => `${l.label}: ${l.value}`),
    '',
    // An email is read in any time zone: UTC, and how long is left.
    gateText(gate, { timeZone: 'UTC', redactor }),
    '',
    `Answer here: ${link}`,
    how,
  ].join('\n');
  const html = [
    // Laid out at the phone's width (not a 980 px desktop page shrunk): every command wraps to it.
    `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><style>${VIEW_STYLE}</style></head><body>`,
    `<h2>${escapeHtml(title)}</h2>`,
    '<table>',
    ...shown.map(
      (l) => `<tr><th align="left">${escapeHtml(l.label)}</th><td>${escapeHtml(l.value)}</td></tr>`,
    ),
    '</table>',
    gateViewHtml(gate, { timeZone: 'UTC', redactor }),
    `<p><a href="${escapeHtml(link)}">Open the approval page</a></p>`,
    `<p>${escapeHtml(how)}</p>`,
    '</body></html>',
  ].join('\n');
  // What this message shows, and so what its buttons answer: the revision it is about, or the plan.
  const shownDigest = notice.revision?.digest ?? notice.plan.digest;
  const slack = gateViewBlocks(gate, link, SLACK_LIMITS.blocks - 4);
  // A message that does not show every command offers no button that runs one: open the page.
  const complete = slack.cut.length === 0 && gate.hiddenCommands === undefined;
  const buttons = SLACK_BUTTONS[notice.kind].filter((decision) => complete || !RUNS_SOMETHING.has(decision));
  const slackBlocks = [
    { type: 'header', text: { type: 'plain_text', text: title } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: shown.map((l) => `*${l.label}:* ${escapeSlack(l.value)}`).join('\n') },
    },
    // Header, lines and actions are here; the status line is added once the gate is decided.
    ...slack.blocks,
    {
      type: 'actions',
      block_id: SLACK_BLOCK_IDS.actions,
      elements: [
        ...buttons.map((decision) => ({
          type: 'button',
          text: { type: 'plain_text', text: BUTTON_LOOK[decision].label },
          style: BUTTON_LOOK[decision].style,
          action_id: `${SLACK_ACTION_PREFIX}${decision}`,
          value: slackButtonValue(notice.approvalId, shownDigest),
        })),
        ...(notice.kind === 'plan' || notice.kind === 'step'
          ? [
              {
                type: 'button',
                text: { type: 'plain_text', text: 'Ask a question' },
                action_id: SLACK_ASK.action,
                value: slackButtonValue(notice.approvalId, shownDigest),
              },
            ]
          : []),
        {
          type: 'button',
          text: {
            type: 'plain_text',
            text: notice.kind === 'human' ? 'Report on the page' : 'Open the page',
          },
          url: link,
          action_id: `${SLACK_ACTION_PREFIX}page`,
        },
      ],
    },
  ];
  return { subject, text, html, slackBlocks, link };
}

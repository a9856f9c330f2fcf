/**
 * Sends one approval request on every configured channel; one channel failing does not stop the
 * others. Each emailed recipient gets a link bound to them (answering through it names them);
 * Slack gets the shared link, whose page asks the approver to sign in.
 */
import type { SlackMessageRef } from '../gate/gate-item.ts';
import { type LinkSigner, parseLinkId } from '../gate/links.ts';
import type { ApprovalNotice } from '../payloads/index.ts';
import type { EmailNotifier } from './email.ts';
import { approvalMessage } from './message.ts';
import type { SlackNotifier } from './slack.ts';
import type { Undelivered, UndeliveredListener } from './undelivered.ts';

export interface NotifyDeps {
  /** Base URL of the approvals API, e.g. `https://abc.execute-api.eu-west-1.amazonaws.com`. */
  readonly approvalsBaseUrl: string;
  /**
   * Derives each emailed recipient's own link id from the notice's shared one (which it checks).
   * @default - emails carry the shared link too (the approver signs in to answer)
   */
  readonly linkSigner?: LinkSigner;
  /** @default - no email */
  readonly email?: EmailNotifier;
  /** @default - no Slack */
  readonly slack?: SlackNotifier;
  /**
   * Keeps where the gate's Slack message went (the gates table), so a decision made elsewhere can
   * be shown in it. @default - not kept: the message shows only decisions clicked in Slack
   */
  readonly recordSlackMessage?: (approvalId: string, message: SlackMessageRef) => Promise<void>;
  /**
   * Told when the notice reached nobody (no channel, nobody to send to, every send failed): on AWS
   * the journal, an error and the GateNoticeUndelivered metric (undelivered.ts).
   * @default - nobody: the host tells people otherwise (`plangate run` and `serve` print every gate and its link)
   */
  readonly onUndelivered?: UndeliveredListener;
}

export interface NotifyResult {
  readonly emailed: number;
  readonly slack: boolean;
  /** Set when the notice reached nobody, and why. */
  readonly undelivered?: Undelivered['reason'];
}

export async function sendApprovalRequest(notice: ApprovalNotice, deps: NotifyDeps): Promise<NotifyResult> {
  const message = approvalMessage(notice, deps.approvalsBaseUrl);
  const { linkSigner } = deps;
  const messageFor = linkSigner
    ? (recipient: string) =>
        approvalMessage(notice, deps.approvalsBaseUrl, {
          linkId: linkSigner.forRecipient(notice.approvalId, notice.plan.digest, recipient),
          recipient,
        })
    : () => message;
  const [emailed, slack] = await Promise.allSettled([
    deps.email ? deps.email.send(notice, messageFor) : Promise.resolve(0),
    deps.slack
      ? deps.slack.send(message).then(async (posted) => {
          // Posted is posted: failing to keep where must not make Lambda post it again.
          await deps.recordSlackMessage?.(parseLinkId(notice.approvalId).approvalId, posted).catch(() => {});
          return true;
        })
      : Promise.resolve(false),
  ]);
  const failures = [emailed, slack].filter((r) => r.status === 'rejected');
  const configured = [deps.email, deps.slack].filter(Boolean).length;
  const result = {
    emailed: emailed.status === 'fulfilled' ? emailed.value : 0,
    slack: slack.status === 'fulfilled' && slack.value,
  };
  const why = undeliveredWhy(
    [
      ...(deps.email ? [['email', emailed] as const] : []),
      ...(deps.slack ? [['Slack', slack] as const] : []),
    ],
    result,
  );
  if (why) await deps.onUndelivered?.(notice, why);
  // Every channel failed: let the invocation fail so Lambda retries the asynchronous event.
  if (failures.length > 0 && failures.length === configured) {
    throw (failures[0] as PromiseRejectedResult).reason;
  }
  return { ...result, ...(why ? { undelivered: why.reason } : {}) };
}

/** Why nobody was told, when nobody was (from each configured channel's outcome); undefined when a message went out. */
function undeliveredWhy(
  channels: readonly (readonly [string, PromiseSettledResult<unknown>])[],
  sent: { readonly emailed: number; readonly slack: boolean },
): Undelivered | undefined {
  if (channels.length === 0)
    return {
      reason: 'no-channel',
      message:
        'no channel is configured: neither an SES sender (PLANGATE_SES_SENDER) nor Slack (PLANGATE_SLACK_CHANNEL with its bot token)',
    };
  if (sent.emailed > 0 || sent.slack) return undefined;
  const failed = channels.flatMap(([name, outcome]) =>
    outcome.status === 'rejected' ? [`${name}: ${errorText(outcome.reason)}`] : [],
  );
  if (failed.length > 0)
    return {
      reason: 'send-failed',
      message: `nothing could be sent: ${[...failed, ...(failed.length < channels.length ? ['email: nobody to send to'] : [])].join('; ')}`,
    };
  return {
    reason: 'no-recipient',
    message:
      "nobody to send to: none of the gate's approvers is an email address and PLANGATE_NOTIFY_EMAILS names nobody",
  };
}

/** An error's name and message, in one line. */
function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

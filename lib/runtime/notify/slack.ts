/**
 * Approval requests in Slack through its Web API (@slack/web-api): the notifier posts the Block
 * Kit message (chat.postMessage) to a channel; the approvals API's Slack route answers its buttons
 * and updates it in place (chat.update). The bot token is a secret: read when first needed (from
 * Secrets Manager or the environment) and given to the WebClient only, never to a message or log.
 */
import { type Block, type KnownBlock, LogLevel, WebClient } from '@slack/web-api';
import type { DecisionListener, EscalationListener, SlackMessageRef } from '../gate/gate-item.ts';
import type { GateDecision } from '../payloads/index.ts';
import { NotConfiguredError } from '../shared/errors.ts';
import { type ApprovalMessage, SLACK_BLOCK_IDS } from './message.ts';
import { escapeSlack, slackDate } from './slack-text.ts';

export { slackDate } from './slack-text.ts';

/** Where a secret's value comes from, read once when first needed. */
export type SecretValue = () => Promise<string>;

export interface SlackClientProps {
  /** The bot token (`xoxb-…`): it may post to the channel and update its own messages. */
  readonly botToken: SecretValue;
  /**
   * The Web API's base URL (a test's or a proxy's).
   * @default 'https://slack.com/api/'
   */
  readonly slackApiUrl?: string;
}

/** One WebClient per container, built when first used (the token is read then). */
export class SlackClient {
  private client: Promise<WebClient> | undefined;

  constructor(private readonly props: SlackClientProps) {}

  get(): Promise<WebClient> {
    this.client ??= this.props.botToken().then((token) => {
      if (!token.trim()) throw new NotConfiguredError('the Slack bot token is empty');
      return new WebClient(token.trim(), {
        ...(this.props.slackApiUrl ? { slackApiUrl: this.props.slackApiUrl } : {}),
        // A gate's notice is retried by Lambda as a whole; one request must not hang on retries.
        retryConfig: { retries: 2, factor: 1, minTimeout: 200, maxTimeout: 1000 },
        timeout: 10_000,
        logLevel: LogLevel.ERROR,
      });
    });
    this.client.catch(() => {
      this.client = undefined;
    });
    return this.client;
  }
}

/** Slack blocks as the Web API's types name them (message.ts builds plain objects). */
export function asBlocks(blocks: readonly Record<string, unknown>[]): (KnownBlock | Block)[] {
  return blocks as unknown as (KnownBlock | Block)[];
}

export interface SlackNotifierProps {
  readonly client: SlackClient;
  /** The channel id (e.g. `C0123456789`) approval requests are posted to. */
  readonly channel: string;
}

export class SlackNotifier {
  constructor(private readonly props: SlackNotifierProps) {}

  /** Posts the message; returns where it went and what it showed. */
  async send(message: ApprovalMessage): Promise<SlackMessageRef> {
    const client = await this.props.client.get();
    const posted = await client.chat.postMessage({
      channel: this.props.channel,
      text: message.subject,
      blocks: asBlocks(message.slackBlocks),
      unfurl_links: false,
    });
    return {
      channel: posted.channel ?? this.props.channel,
      ts: posted.ts ?? '',
      text: message.subject,
      blocks: [...message.slackBlocks],
    };
  }
}

/**
 * Shows a decision made anywhere (the page, the API, an emailed link, the terminal, the timeout
 * ladder) in the gate's Slack messages: who decided what and when, and no buttons, so nobody
 * clicks a decided gate.
 */
export function slackDecisionUpdater(client: SlackClient): DecisionListener {
  return (gate, decision) =>
    updateSlackMessages(
      client,
      gate.slackMessages ?? [],
      decidedLine(decision, gate.decidedAt ? new Date(gate.decidedAt) : undefined),
      decision.decision,
    );
}

/** Shows in the gate's Slack messages that nobody answered in time and who was asked next; no buttons. */
export function slackEscalationUpdater(client: SlackClient): EscalationListener {
  return (gate, to) =>
    updateSlackMessages(
      client,
      gate.slackMessages ?? [],
      `:arrow_double_up: Nobody answered in time: handed to ${escapeSlack(to.approvers.join(', ') || 'the next approvers')} ${slackDate(new Date(to.at))}`,
      'escalated',
    );
}

/**
 * Updates each message in place (chat.update) with `status` as its status line and its buttons
 * gone; one message failing does not stop the others, and the first failure is thrown after.
 */
export async function updateSlackMessages(
  client: SlackClient,
  messages: readonly SlackMessageRef[],
  status: string,
  outcome: string,
): Promise<void> {
  if (messages.length === 0) return;
  const web = await client.get();
  const updates = await Promise.allSettled(
    messages.map((message) =>
      web.chat.update({
        channel: message.channel,
        ts: message.ts,
        text: `${message.text}: ${outcome}`,
        blocks: asBlocks(updatedBlocks(message.blocks, status, true)),
      }),
    ),
  );
  const failed = updates.find((u) => u.status === 'rejected');
  if (failed) throw failed.reason;
}

/** "✅ *APPROVE* by alice at <time>", as the message's status line. */
export function decidedLine(decision: GateDecision, at: Date | undefined): string {
  const mark =
    decision.decision === 'APPROVE' || decision.decision === 'RETRY'
      ? ':white_check_mark:'
      : decision.decision === 'ASK_FOR_CLARIFICATION'
        ? ':question:'
        : ':x:';
  const said = saidWith(decision);
  const reason = said ? `: ${escapeSlack(said)}` : '';
  return `${mark} *${decision.decision}* by ${escapeSlack(decision.by ?? 'unknown')}${reason}${at ? ` ${slackDate(at)}` : ''}`;
}

/**
 * The same line as plain text ("APPROVE by alice at 2025-…Z"), where Slack shows text as is (a
 * modal's errors): no emoji codes, no bold, no date tokens, nothing escaped.
 */
export function decidedText(decision: GateDecision, at: Date | undefined): string {
  const said = saidWith(decision);
  return `${decision.decision} by ${decision.by ?? 'unknown'}${said ? `: ${said}` : ''}${at ? ` at ${at.toISOString()}` : ''}`;
}

/** The reason or question a decision was given with. */
function saidWith(decision: GateDecision): string | undefined {
  if ('reason' in decision && decision.reason) return decision.reason;
  return 'question' in decision ? decision.question : undefined;
}

/** The message's blocks with the status line replaced, and the buttons gone once decided. */
export function updatedBlocks(
  blocks: readonly Record<string, unknown>[],
  status: string,
  decided: boolean,
): Record<string, unknown>[] {
  const kept = blocks.filter(
    (b) => b.block_id !== SLACK_BLOCK_IDS.status && !(decided && b.block_id === SLACK_BLOCK_IDS.actions),
  );
  return [
    ...kept,
    { type: 'context', block_id: SLACK_BLOCK_IDS.status, elements: [{ type: 'mrkdwn', text: status }] },
  ];
}

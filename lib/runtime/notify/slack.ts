/**
 * Approval requests in Slack through its Web API (@slack/web-api): the notifier posts the Block
 * Kit message (chat.postMessage) to a channel; the approvals API's Slack route answers its buttons
 * and updates it in place (chat.update). The bot token is a secret: read when first needed (from
 * Secrets Manager or the environment) and given to the WebClient only, never to a message or log.
 */
import { type Block, type KnownBlock, LogLevel, WebClient } from '@slack/web-api';
import { NotConfiguredError } from '../shared/errors.ts';
import type { ApprovalMessage } from './message.ts';

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

  /** Posts the message; returns where it went (the channel and the message's `ts`). */
  async send(message: ApprovalMessage): Promise<{ channel: string; ts: string }> {
    const client = await this.props.client.get();
    const posted = await client.chat.postMessage({
      channel: this.props.channel,
      text: message.subject,
      blocks: asBlocks(message.slackBlocks),
      unfurl_links: false,
    });
    return { channel: posted.channel ?? this.props.channel, ts: posted.ts ?? '' };
  }
}

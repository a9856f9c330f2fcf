/**
 * Approval requests in Slack through its Web API (`@slack/web-api`): posted with Block Kit buttons,
 * and updated in place once the gate is decided. The bot token is a secret: read from Secrets
 * Manager when first needed, it goes nowhere but Slack's Authorization header.
 */
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { WebClient } from '@slack/web-api';
import { NotConfiguredError, ToolFailedError } from '../shared/errors.ts';
import type { ApprovalMessage } from './message.ts';

export interface SlackNotifierProps {
  /** A Web API client with the bot token (see {@link slackClientFromSecret}). */
  readonly client: Promise<WebClient> | WebClient;
  /** The channel approval requests go to (an id such as C0123, or #name). */
  readonly channel: string;
}

export class SlackNotifier {
  constructor(private readonly props: SlackNotifierProps) {}

  async send(message: ApprovalMessage): Promise<{ channel: string; ts: string }> {
    const client = await this.props.client;
    const posted = await client.chat.postMessage({
      channel: this.props.channel,
      text: message.subject,
      blocks: message.slackBlocks as never,
    });
    if (!posted.ok || !posted.ts)
      throw new ToolFailedError(`Slack refused the message: ${posted.error ?? 'no ts'}`);
    return { channel: posted.channel ?? this.props.channel, ts: posted.ts };
  }
}

export interface SlackClientOptions {
  /** Slack's Web API base, e.g. a local test server. @default https://slack.com/api/ */
  readonly slackApiUrl?: string;
}

/** A Web API client whose bot token is the string value of a Secrets Manager secret. */
export async function slackClientFromSecret(
  secretsManager: SecretsManagerClient,
  secretId: string,
  options: SlackClientOptions = {},
): Promise<WebClient> {
  const out = await secretsManager.send(new GetSecretValueCommand({ SecretId: secretId }));
  const token = out.SecretString?.trim();
  if (!token) throw new NotConfiguredError(`secret ${secretId} does not hold a Slack bot token`);
  return new WebClient(token, {
    ...(options.slackApiUrl ? { slackApiUrl: options.slackApiUrl } : {}),
    retryConfig: { retries: 3 },
  });
}

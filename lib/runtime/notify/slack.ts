/**
 * Approval requests in Slack through an incoming webhook. The webhook URL is a secret: it is read
 * from Secrets Manager (an injected client) when first needed and goes nowhere but the request.
 */
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { NotConfiguredError, ToolFailedError } from '../shared/errors.ts';
import type { ApprovalMessage } from './message.ts';

export interface SlackNotifierProps {
  readonly secretsManager: SecretsManagerClient;
  /** The secret (name or ARN) whose string value is the webhook URL. */
  readonly webhookSecretId: string;
  /**
   * How long one POST may take.
   * @default 10_000
   */
  readonly timeoutMs?: number;
}

export class SlackNotifier {
  private webhook: Promise<string> | undefined;

  constructor(private readonly props: SlackNotifierProps) {}

  async send(message: ApprovalMessage): Promise<void> {
    const url = await this.webhookUrl();
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: message.subject, blocks: message.slackBlocks }),
      signal: AbortSignal.timeout(this.props.timeoutMs ?? 10_000),
    });
    if (!response.ok) {
      // The URL is a secret: the error names the status only.
      throw new ToolFailedError(`Slack webhook answered HTTP ${response.status}`, {
        httpStatus: response.status,
      });
    }
  }

  private webhookUrl(): Promise<string> {
    this.webhook ??= this.props.secretsManager
      .send(new GetSecretValueCommand({ SecretId: this.props.webhookSecretId }))
      .then((out) => {
        const url = out.SecretString?.trim();
        if (!url || !/^https?:\/\//.test(url))
          throw new NotConfiguredError(`secret ${this.props.webhookSecretId} does not hold a webhook URL`);
        return url;
      });
    this.webhook.catch(() => {
      this.webhook = undefined;
    });
    return this.webhook;
  }
}

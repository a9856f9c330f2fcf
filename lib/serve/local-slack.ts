/**
 * Slack for a local stack (`plangate run`, `plangate serve`), when the environment configures a
 * Slack app (PLANGATE_SLACK_BOT_TOKEN, PLANGATE_SLACK_SIGNING_SECRET, PLANGATE_SLACK_CHANNEL,
 * PLANGATE_SLACK_APPROVERS; optionally PLANGATE_SLACK_API_URL): the same handlers as on AWS, here
 * in this process. The notifier Lambda posts each gate's message; the approvals API Lambda, behind
 * the local API Gateway, answers the buttons at `/slack/interactions` (point the app's request URL
 * there, e.g. through a tunnel) and serves the page the message links to.
 */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { slackFromEnv } from '../../lambdas/approvals-api.ts';
import { makeHandler as makeNotifier, slackMessageRecorder } from '../../lambdas/notifier.ts';
import type { SlackInteractionsConfig } from '../runtime/api/slack-interactions.ts';
import type { ApprovalNotice, ApprovalsDeps } from '../runtime/gate/gate.ts';
import { SlackNotifier } from '../runtime/notify/slack.ts';
import { NotConfiguredError } from '../runtime/shared/errors.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** A Slack app configured by the environment, for a local stack (plangate run, plangate serve). */
export interface LocalSlackApp {
  /** What the approvals API's Slack route needs to answer the buttons. */
  readonly interactions: SlackInteractionsConfig;
  /**
   * The notifier Lambda's handler: posts each gate to the channel with links to `approvalsBaseUrl`,
   * and keeps where each message went in the gates table.
   */
  notifier(
    approvalsBaseUrl: string,
    gates: Pick<ApprovalsDeps, 'dynamo' | 'tables' | 'telemetry'>,
  ): (notice: ApprovalNotice) => Promise<unknown>;
}

/** The Slack app of PLANGATE_SLACK_*; undefined when the environment does not mention Slack at all. */
export async function localSlackApp(env: Env): Promise<LocalSlackApp | undefined> {
  // Values come from the environment here; the client is never asked for a secret.
  const { slack } = await slackFromEnv(env, new SecretsManagerClient({ region: 'us-east-1' }));
  if (!slack) return undefined;
  const channel = env.PLANGATE_SLACK_CHANNEL;
  if (!channel)
    throw new NotConfiguredError(
      'Slack needs PLANGATE_SLACK_CHANNEL (the channel id to post approval requests to)',
    );
  return {
    interactions: slack,
    notifier: (approvalsBaseUrl, gates) =>
      makeNotifier({
        approvalsBaseUrl,
        slack: new SlackNotifier({ client: slack.client, channel }),
        recordSlackMessage: slackMessageRecorder(gates.dynamo, gates.tables.gates),
        telemetry: gates.telemetry,
      }),
  };
}

/**
 * Slack for `plangate run`, when the environment configures a Slack app (PLANGATE_SLACK_BOT_TOKEN,
 * PLANGATE_SLACK_SIGNING_SECRET, PLANGATE_SLACK_CHANNEL, PLANGATE_SLACK_APPROVERS; optionally
 * PLANGATE_SLACK_API_URL): the same handlers as on AWS, here in this process. The notifier Lambda
 * posts each gate's message; the approvals API Lambda, served on loopback as API Gateway would
 * call it, answers the buttons at `/slack/interactions` (point the app's request URL there, e.g.
 * through a tunnel) and serves the page the message links to.
 */
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { makeHandler as makeApprovalsApi, slackFromEnv } from '../../../lambdas/approvals-api.ts';
import { makeHandler as makeNotifier, slackMessageRecorder } from '../../../lambdas/notifier.ts';
import { LOCAL_IDENTITY_HEADER } from '../../runtime/api/http.ts';
import type { SlackInteractionsConfig } from '../../runtime/api/slack-interactions.ts';
import type { ApprovalNotice, ApprovalsDeps } from '../../runtime/gate/gate.ts';
import type { DecisionListener, EscalationListener } from '../../runtime/gate/gate-item.ts';
import { SlackNotifier, slackDecisionUpdater, slackEscalationUpdater } from '../../runtime/notify/slack.ts';
import { NotConfiguredError } from '../../runtime/shared/errors.ts';
import { LocalHttpApi } from '../http-api.ts';

type Env = Readonly<Record<string, string | undefined>>;

export class LocalSlack {
  private constructor(
    private readonly api: LocalHttpApi,
    private readonly notifier: (notice: ApprovalNotice) => Promise<unknown>,
    /** Shows a decision made in the terminal, on the page or by the timeout ladder in the gate's Slack messages. */
    readonly onDecided: DecisionListener,
    /** Shows in the gate's Slack messages that the timeout ladder handed it to the next group. */
    readonly onEscalated: EscalationListener,
  ) {}

  /** Slack's interactivity request URL on this machine. */
  get interactionsUrl(): string {
    return `${this.api.url}/slack/interactions`;
  }

  /** Starts when the environment configures Slack; undefined when it does not mention it at all. */
  static async start(env: Env, deps: ApprovalsDeps): Promise<LocalSlack | undefined> {
    const app = await localSlackApp(env);
    if (!app) return undefined;
    const api = await LocalHttpApi.start(
      makeApprovalsApi({
        ...deps,
        identity: { mode: 'header', header: LOCAL_IDENTITY_HEADER },
        slack: app.interactions,
      }),
    );
    return new LocalSlack(
      api,
      app.notifier(api.url, deps),
      slackDecisionUpdater(app.interactions.client),
      slackEscalationUpdater(app.interactions.client),
    );
  }

  /** Posts the gate's message (the notifier Lambda's work). */
  async notify(notice: ApprovalNotice): Promise<void> {
    await this.notifier(notice);
  }

  close(): Promise<void> {
    return this.api.close();
  }
}

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
    gates: Pick<ApprovalsDeps, 'dynamo' | 'tables'>,
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
      }),
  };
}

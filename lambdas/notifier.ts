/**
 * Notifier Lambda, invoked asynchronously by the gate (PLANGATE_NOTIFIER_FUNCTION) with an
 * ApprovalNotice: emails the plan's approvers through SES and posts to Slack. Each emailed
 * recipient gets its own recipient-bound link (signed with the approval signing key); the Slack
 * message carries the shared link id in its buttons (answered by the approvals API's Slack route).
 *
 * Environment: PLANGATE_API_URL (base of the approval links), PLANGATE_SES_SENDER (verified
 * sender; without it no email), PLANGATE_NOTIFY_EMAILS (comma-separated extra recipients),
 * PLANGATE_SLACK_CHANNEL with PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN (or PLANGATE_SLACK_BOT_TOKEN
 * locally; without both no Slack), PLANGATE_SLACK_API_URL (tests), PLANGATE_APPROVAL_SIGNING_KEY_SECRET
 * (or PLANGATE_APPROVAL_SIGNING_KEY; needed with email), PLANGATE_GATES_TABLE (with Slack: where
 * each gate's message went is kept on the gate, so a decision made elsewhere shows in it), and the
 * events table and bus: a notice that reaches nobody is journaled (GATE_NOTICE_UNDELIVERED), logged
 * as an error and counted (GateNoticeUndelivered).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import type { HandlerEnv } from '../lib/runtime/catalog.ts';
import { journalFor } from '../lib/runtime/deps.ts';
import { recordSlackMessage } from '../lib/runtime/gate/gate-item.ts';
import { LinkSigner } from '../lib/runtime/gate/links.ts';
import { documentClient } from '../lib/runtime/journal/document-client.ts';
import { tableNamesFromEnv } from '../lib/runtime/journal/tables.ts';
import { EmailNotifier } from '../lib/runtime/notify/email.ts';
import { type NotifyDeps, type NotifyResult, sendApprovalRequest } from '../lib/runtime/notify/notify.ts';
import { SlackNotifier } from '../lib/runtime/notify/slack.ts';
import { undeliveredReporter } from '../lib/runtime/notify/undelivered.ts';
import { ApprovalNoticeSchema } from '../lib/runtime/payloads/index.ts';
import type { Telemetry } from '../lib/runtime/telemetry/telemetry.ts';
import { awsHandler } from './aws-handler.ts';
import { signingKey, slackClientFromEnv, traced } from './default-deps.ts';
import { instrumented, parseEvent } from './edge.ts';

type NotifierDeps = NotifyDeps & { readonly telemetry?: Telemetry };

export const makeHandler = (deps: NotifierDeps | Promise<NotifierDeps>) =>
  instrumented(
    deps,
    async (event: unknown, _context?: Context): Promise<NotifyResult> =>
      sendApprovalRequest(parseEvent(ApprovalNoticeSchema, event), await deps),
  );

export async function defaultNotifyDeps(
  env: HandlerEnv<'notifier'>,
  telemetry: Telemetry,
): Promise<NotifierDeps> {
  const extra = (env.PLANGATE_NOTIFY_EMAILS ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  const secretsManager = traced(telemetry, new SecretsManagerClient({}));
  const slack = slackClientFromEnv(env, secretsManager);
  const dynamo = documentClient(traced(telemetry, new DynamoDBClient({})));
  const tables = tableNamesFromEnv(env);
  const journal = journalFor({
    dynamo,
    tables,
    events: traced(telemetry, new EventBridgeClient({})),
    eventBusName: env.PLANGATE_EVENT_BUS,
    telemetry,
  });
  return {
    approvalsBaseUrl: env.PLANGATE_API_URL,
    telemetry,
    onUndelivered: undeliveredReporter({ journal, telemetry }),
    ...(env.PLANGATE_SES_SENDER
      ? {
          linkSigner: new LinkSigner(await signingKey(env, secretsManager)),
          email: new EmailNotifier({
            ses: traced(telemetry, new SESv2Client({})),
            from: env.PLANGATE_SES_SENDER,
            alwaysTo: extra,
          }),
        }
      : {}),
    ...(slack && env.PLANGATE_SLACK_CHANNEL
      ? {
          slack: new SlackNotifier({ client: slack, channel: env.PLANGATE_SLACK_CHANNEL }),
          recordSlackMessage: slackMessageRecorder(dynamo, tables.gates),
        }
      : {}),
  };
}

/** Keeps where each gate's Slack message went, in the gates table (PLANGATE_GATES_TABLE). */
export function slackMessageRecorder(
  dynamo: DynamoDBDocumentClient,
  gatesTable: string,
): NonNullable<NotifyDeps['recordSlackMessage']> {
  return (approvalId, message) => recordSlackMessage(dynamo, gatesTable, approvalId, message);
}

export const handler = awsHandler('notifier', makeHandler, defaultNotifyDeps);

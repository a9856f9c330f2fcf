/**
 * Environment variables the platform gives the harness Lambdas. Table names use
 * lib/runtime/journal/tables.ts's `tableNamesFromEnv` names.
 */
export const PLATFORM_ENV = {
  eventsTable: 'PLANGATE_EVENTS_TABLE',
  gatesTable: 'PLANGATE_GATES_TABLE',
  eventBus: 'PLANGATE_EVENT_BUS',
  /** Base URL of the Plans/approvals API, for approval links. */
  apiUrl: 'PLANGATE_API_URL',
  /** The address approval emails are sent from (lambdas/notifier.ts). */
  sesSender: 'PLANGATE_SES_SENDER',
  /** Comma-separated addresses every approval email also goes to. */
  notifyEmails: 'PLANGATE_NOTIFY_EMAILS',
  /** ARN of the secret holding the Slack app's bot token (notifier: post; approvals API and gate: update). */
  slackBotTokenSecretArn: 'PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN',
  /** ARN of the secret holding the Slack app's signing secret (approvals API: verify clicks). */
  slackSigningSecretArn: 'PLANGATE_SLACK_SIGNING_SECRET_SECRET_ARN',
  /** The Slack channel id approval requests are posted to. */
  slackChannel: 'PLANGATE_SLACK_CHANNEL',
  /** `<Slack user id>=<approver name>,…`: who a click in Slack answers as. */
  slackApprovers: 'PLANGATE_SLACK_APPROVERS',
  /** Secret (ARN) holding the approval-id HMAC key (lambdas/default-deps.ts reads it). */
  approvalSigningKeySecret: 'PLANGATE_APPROVAL_SIGNING_KEY_SECRET',
  /** Base URL of the approvers' hosted sign-in (Cognito domain), for the approval page. */
  cognitoDomain: 'PLANGATE_COGNITO_DOMAIN',
  /** The approval page's public app client id (no secret). */
  cognitoClientId: 'PLANGATE_COGNITO_CLIENT_ID',
  /** The function the gate invokes (asynchronously) to send an approval request. */
  notifierFunction: 'PLANGATE_NOTIFIER_FUNCTION',
  /** Secrets Manager name prefix plans' secrets must use. */
  planSecretsPrefix: 'PLANGATE_PLAN_SECRETS_PREFIX',
  /** Working directory of process tools and command contracts (lambdas/default-deps.ts reads it). */
  workdir: 'PLANGATE_WORKDIR',
  /** Prefix of state machine names (run-time plans are named `<prefix>-<planId>`). */
  namePrefix: 'PLANGATE_NAME_PREFIX',
  runtimePlanRoleArn: 'PLANGATE_RUNTIME_PLAN_ROLE_ARN',
  runtimePlanLogGroupArn: 'PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN',
  /** JSON object: placeholder name → value, for compiling plans at run time. */
  substitutions: 'PLANGATE_SUBSTITUTIONS',
  /** The planner Lambda the Plans API hands goals to (asynchronously). */
  plannerFunction: 'PLANGATE_PLANNER_FUNCTION',
  /** The planner's provider (bedrock | openai), model and rounds (lib/planner/providers.ts reads them). */
  plannerProvider: 'PLANGATE_PLANNER_PROVIDER',
  plannerModel: 'PLANGATE_PLANNER_MODEL',
  plannerMaxRounds: 'PLANGATE_PLANNER_MAX_ROUNDS',
  /** An OpenAI-compatible server's base URL, and the secret holding its API key. */
  openAiBaseUrl: 'OPENAI_BASE_URL',
  openAiApiKeySecretArn: 'OPENAI_API_KEY_SECRET_ARN',
} as const;

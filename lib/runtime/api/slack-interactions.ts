/**
 * `POST /slack/interactions`: a click on an approval message's button. The request is verified
 * with Slack's own request signing (@slack/bolt's verifySlackRequest: the app's signing secret,
 * v0 HMAC, a 5-minute replay window) before anything is read from it. The clicking Slack user is
 * mapped to an approver name (a configured mapping; an unmapped user is refused in Slack); the
 * button's value is the gate's opaque link id and nothing else. The answer goes through Approvals
 * like any other (policy, quorum, single use), then the message is updated in place to show who
 * decided what and when; a click on a gate already decided is told so, and decides nothing.
 */
import type { Approvals } from '../gate/approvals.ts';
import { ApprovalError } from '../gate/links.ts';
import { escapeSlack, SLACK_ACTION_PREFIX, SLACK_DECISIONS, type SlackDecision } from '../notify/message.ts';
import {
  asBlocks,
  decidedLine,
  type SlackClient,
  slackDate,
  updatedBlocks,
  updateSlackMessages,
} from '../notify/slack.ts';
import { bodyText, type HttpEvent, type HttpResult, headerOf, json } from './http.ts';

export interface SlackInteractionsConfig {
  /** The Slack app's signing secret (from Secrets Manager or the environment). */
  readonly signingSecret: string;
  /** Slack user id → approver name, as the plans' approval policies name approvers. */
  readonly approvers: Readonly<Record<string, string>>;
  readonly client: SlackClient;
  /** @default () => Date.now() */
  readonly now?: () => number;
}

/** The parts of a `block_actions` payload this route reads. */
interface BlockActions {
  readonly type: string;
  readonly user?: { readonly id?: string };
  readonly channel?: { readonly id?: string };
  readonly container?: { readonly channel_id?: string; readonly message_ts?: string };
  readonly message?: {
    readonly ts?: string;
    readonly text?: string;
    readonly blocks?: Record<string, unknown>[];
  };
  readonly actions?: readonly { readonly action_id?: string; readonly value?: string }[];
}

const REASONS: Partial<Record<SlackDecision, string>> = {
  REJECT: 'rejected in Slack',
  ABORT: 'aborted in Slack',
};

export async function handleSlackInteraction(
  event: HttpEvent,
  approvals: Approvals,
  config: SlackInteractionsConfig,
): Promise<HttpResult> {
  const body = bodyText(event);
  const signature = headerOf(event, 'x-slack-signature');
  const timestamp = Number(headerOf(event, 'x-slack-request-timestamp'));
  // Loaded here, not at the top: the approvals API's other routes never pay for Bolt.
  const { isValidSlackRequest } = await import('@slack/bolt');
  if (
    !signature ||
    !Number.isFinite(timestamp) ||
    !isValidSlackRequest({
      signingSecret: config.signingSecret,
      body,
      headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestamp },
      nowMilliseconds: (config.now ?? Date.now)(),
    })
  )
    return json(401, { error: 'not a signed Slack request' });

  const payload = parsePayload(body);
  if (!payload) return json(400, { error: 'no interaction payload' });
  const action = payload.actions?.[0];
  const decision = SLACK_DECISIONS.find((d) => action?.action_id === `${SLACK_ACTION_PREFIX}${d}`);
  const channel = payload.channel?.id ?? payload.container?.channel_id;
  const ts = payload.message?.ts ?? payload.container?.message_ts;
  const user = payload.user?.id;
  // Anything but a decision button (the page link, other interactions) needs only an ack.
  if (payload.type !== 'block_actions' || !decision || !action?.value || !channel || !ts || !user)
    return ack();

  const client = await config.client.get();
  const tell = (text: string) => client.chat.postEphemeral({ channel, user, text });
  const by = config.approvers[user];
  if (by === undefined) {
    await tell(
      'Your Slack account is not mapped to a plangate approver, so your click was not recorded. Ask the platform team to map your Slack user id.',
    );
    return ack();
  }
  const linkId = action.value;
  try {
    const gate = await approvals.describe(linkId);
    const outcome = await approvals.answer(linkId, {
      by,
      // The message showed this digest, and the link id's signature binds it.
      digest: gate.planDigest,
      decision: { decision, ...(REASONS[decision] ? { reason: `${REASONS[decision]} by ${by}` } : {}) },
      via: 'slack',
    });
    const at = new Date((config.now ?? Date.now)());
    const status =
      outcome.status === 'decided'
        ? decidedLine(outcome.decision, at)
        : `:hourglass_flowing_sand: approved by ${escapeSlack([...gate.votes.map((v) => v.by), by].join(', '))}: ${outcome.votes} of ${gate.policy.quorum} approvals so far ${slackDate(at)}`;
    await client.chat.update({
      channel,
      ts,
      text: `${payload.message?.text ?? 'plangate approval'}: ${outcome.status === 'decided' ? outcome.decision.decision : 'approval recorded'}`,
      blocks: asBlocks(updatedBlocks(payload.message?.blocks ?? [], status, outcome.status === 'decided')),
    });
    // The gate's other messages (its reminders) show the decision too, and lose their buttons.
    if (outcome.status === 'decided')
      await updateSlackMessages(
        config.client,
        (gate.slackMessages ?? []).filter((m) => m.channel !== channel || m.ts !== ts),
        status,
        outcome.decision.decision,
      ).catch(() => {});
  } catch (error) {
    if (!(error instanceof ApprovalError)) throw error;
    await tell(await refusal(error, linkId, approvals));
  }
  return ack();
}

/** What a refused click is told; for a gate already decided, who decided what and when. */
async function refusal(error: ApprovalError, linkId: string, approvals: Approvals): Promise<string> {
  if (error.reason === 'used') {
    const decided = await approvals.decided(linkId).catch(() => undefined);
    if (decided)
      return `Not recorded: this gate was already decided. ${decidedLine(decided.decision, decided.decidedAt ? new Date(decided.decidedAt) : undefined)}`;
  }
  return `Not recorded: ${error.message}.`;
}

function parsePayload(body: string): BlockActions | undefined {
  const raw = new URLSearchParams(body).get('payload');
  if (!raw) return undefined;
  try {
    const value = JSON.parse(raw) as unknown;
    return value !== null && typeof value === 'object' ? (value as BlockActions) : undefined;
  } catch {
    return undefined;
  }
}

/** Slack wants a 200 within three seconds; what the click did is shown in Slack itself. */
function ack(): HttpResult {
  return { statusCode: 200, headers: { 'cache-control': 'no-store' }, body: '' };
}

/**
 * `POST /slack/interactions`: a click on an approval message's button. The request is verified
 * with Slack's own request signing (@slack/bolt's verifySlackRequest: the app's signing secret,
 * v0 HMAC, at most five minutes old) and dated at most five minutes ahead (Bolt does not look
 * ahead, and a request dated in the future would stay replayable until then) before anything is
 * read from it. The clicking Slack user is
 * mapped to an approver name (a configured mapping; an unmapped user is refused in Slack); the
 * button's value is the gate's opaque link id and nothing else. The answer goes through Approvals
 * like any other (policy, quorum, single use), then the message is updated in place to show who
 * decided what and when; a click on a gate already decided is told so, and decides nothing.
 * "Ask a question" opens a modal (views.open); its submission asks for clarification as the page does.
 */
import type { Approvals } from '../gate/approvals.ts';
import { ApprovalError } from '../gate/links.ts';
import {
  escapeSlack,
  parseSlackButtonValue,
  SLACK_ACTION_PREFIX,
  SLACK_ASK,
  SLACK_DECISIONS,
  type SlackDecision,
  slackButtonValue,
} from '../notify/message.ts';
import {
  asBlocks,
  decidedLine,
  decidedText,
  type SlackClient,
  slackDate,
  updatedBlocks,
  updateSlackMessages,
} from '../notify/slack.ts';
import { shortenAtWord } from '../shared/truncate.ts';
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

/** The parts of a `block_actions` or `view_submission` payload this route reads. */
interface Interaction {
  readonly type: string;
  readonly trigger_id?: string;
  readonly view?: {
    readonly callback_id?: string;
    readonly private_metadata?: string;
    readonly state?: {
      readonly values?: Record<string, Record<string, { readonly value?: string | null }>>;
    };
  };
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

/** How far a request's date may be from now, either way (Slack's own replay window). */
const SLACK_CLOCK_SKEW_MS = 5 * 60 * 1000;

/** Longest error a modal shows beside an input. */
const MAX_MODAL_ERROR = 150;

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
  const nowMilliseconds = (config.now ?? Date.now)();
  // Loaded here, not at the top: the approvals API's other routes never pay for Bolt.
  const { isValidSlackRequest } = await import('@slack/bolt');
  if (
    !signature ||
    !Number.isFinite(timestamp) ||
    timestamp * 1000 > nowMilliseconds + SLACK_CLOCK_SKEW_MS ||
    !isValidSlackRequest({
      signingSecret: config.signingSecret,
      body,
      headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': timestamp },
      nowMilliseconds,
    })
  )
    return json(401, {
      error: 'not a signed Slack request',
      message:
        "the request must be signed with the Slack app's signing secret and dated within five minutes of now",
    });

  const payload = parsePayload(body);
  if (!payload)
    return json(400, {
      error: 'no interaction payload',
      message: 'the form field `payload` holds no interaction',
    });
  if (payload.type === 'view_submission' && payload.view?.callback_id === SLACK_ASK.callback)
    return askQuestion(payload, approvals, config);
  const action = payload.actions?.[0];
  if (payload.type === 'block_actions' && action?.action_id === SLACK_ASK.action && action.value)
    return openQuestion(payload, parseSlackButtonValue(action.value), approvals, config);
  const decision = SLACK_DECISIONS.find((d) => action?.action_id === `${SLACK_ACTION_PREFIX}${d}`);
  const channel = payload.channel?.id ?? payload.container?.channel_id;
  const ts = payload.message?.ts ?? payload.container?.message_ts;
  const user = payload.user?.id;
  // Anything but a decision button (the page link, other interactions) needs only an ack.
  if (payload.type !== 'block_actions' || !decision || !action?.value || !channel || !ts || !user)
    return ack();

  const client = await config.client.get();
  const tell = (text: string) => client.chat.postEphemeral({ channel, user, text });
  const by = approverOf(config, user);
  if (by === undefined) {
    await tell(
      'Your Slack account is not mapped to a plangate approver, so your click was not recorded. Ask the platform team to map your Slack user id.',
    );
    return ack();
  }
  const { linkId, digest } = parseSlackButtonValue(action.value);
  try {
    // Not `describe`: an answer to a gate that no longer waits is refused, and journaled, by answer.
    const gate = await approvals.gateOf(linkId);
    const outcome = await approvals.answer(linkId, {
      by,
      // The message showed this content: a revision's, or the plan's (which the link's signature binds).
      digest: digest ?? gate.planDigest,
      decision: { decision, ...(REASONS[decision] ? { reason: `${REASONS[decision]} by ${by}` } : {}) },
      via: 'slack',
    });
    // Slack's buttons approve or reject as shown; they never modify (the page does).
    if (outcome.status === 'modified') return ack();
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

/**
 * "Ask a question" clicked: a mapped approver of a gate still waiting gets a modal for the
 * question (Slack's trigger lasts three seconds, so nothing slow comes first); anyone else is
 * told why not, in Slack.
 */
async function openQuestion(
  payload: Interaction,
  { linkId, digest }: { linkId: string; digest?: string },
  approvals: Approvals,
  config: SlackInteractionsConfig,
): Promise<HttpResult> {
  const channel = payload.channel?.id ?? payload.container?.channel_id;
  const user = payload.user?.id;
  if (!channel || !user || !payload.trigger_id) return ack();
  const client = await config.client.get();
  const tell = (text: string) => client.chat.postEphemeral({ channel, user, text });
  if (approverOf(config, user) === undefined) {
    await tell('Your Slack account is not mapped to a plangate approver, so you cannot ask here.');
    return ack();
  }
  let gate: Awaited<ReturnType<Approvals['describe']>>;
  try {
    gate = await approvals.describe(linkId);
  } catch (error) {
    if (!(error instanceof ApprovalError)) throw error;
    await tell(await refusal(error, linkId, approvals));
    return ack();
  }
  await client.views.open({
    trigger_id: payload.trigger_id,
    view: {
      type: 'modal',
      callback_id: SLACK_ASK.callback,
      // Comes back, signed by Slack, with the submission: which gate is asked.
      private_metadata: slackButtonValue(linkId, digest ?? gate.planDigest),
      title: { type: 'plain_text', text: 'Ask a question' },
      submit: { type: 'plain_text', text: 'Send the question' },
      close: { type: 'plain_text', text: 'Cancel' },
      blocks: [
        {
          type: 'section',
          text: {
            type: 'mrkdwn',
            text: `*${escapeSlack(`${gate.planId} v${gate.planVersion}`)}*${gate.stepId ? ` / ${escapeSlack(gate.stepId)}` : ''}: nothing is approved. The gate asks again with your question, for a clearer plan.`,
          },
        },
        {
          type: 'input',
          block_id: SLACK_ASK.block,
          label: { type: 'plain_text', text: 'Your question' },
          element: {
            type: 'plain_text_input',
            action_id: SLACK_ASK.input,
            multiline: true,
            max_length: MAX_QUESTION,
          },
        },
      ],
    },
  });
  return ack();
}

/** Longest question a modal takes. */
const MAX_QUESTION = 2000;

/**
 * The modal submitted: the question answers the gate as ASK_FOR_CLARIFICATION by the mapped
 * approver, through Approvals as the page's does (policy, single use, audit); the gate's messages
 * then show it (the decision listener). A refusal is shown in the modal, beside the question.
 */
async function askQuestion(
  payload: Interaction,
  approvals: Approvals,
  config: SlackInteractionsConfig,
): Promise<HttpResult> {
  // Slack shows a modal's errors as plain text, so they are written as plain text and cut at a word.
  const refuse = (message: string): HttpResult =>
    json(200, {
      response_action: 'errors',
      errors: { [SLACK_ASK.block]: shortenAtWord(message, MAX_MODAL_ERROR) },
    });
  const by = approverOf(config, payload.user?.id ?? '');
  if (by === undefined) return refuse('Your Slack account is not mapped to a plangate approver.');
  const { linkId, digest } = parseSlackButtonValue(payload.view?.private_metadata ?? '');
  const question = payload.view?.state?.values?.[SLACK_ASK.block]?.[SLACK_ASK.input]?.value?.trim() ?? '';
  if (!linkId)
    return json(400, { error: 'no gate in the view', message: "the modal's private metadata names no gate" });
  if (!question) return refuse('Write the question first.');
  try {
    const gate = await approvals.gateOf(linkId);
    await approvals.answer(linkId, {
      by,
      digest: digest ?? gate.planDigest,
      decision: { decision: 'ASK_FOR_CLARIFICATION', question: question.slice(0, MAX_QUESTION) },
    });
  } catch (error) {
    if (!(error instanceof ApprovalError)) throw error;
    return refuse(await refusal(error, linkId, approvals, 'plain'));
  }
  // An empty 200 closes the modal.
  return ack();
}

/**
 * What a refused click is told (mrkdwn, in an ephemeral message) or a refused modal shows (plain
 * text); for a gate already decided, who decided what and when.
 */
async function refusal(
  error: ApprovalError,
  linkId: string,
  approvals: Approvals,
  format: 'mrkdwn' | 'plain' = 'mrkdwn',
): Promise<string> {
  if (error.reason === 'used') {
    const decided = await approvals.decided(linkId).catch(() => undefined);
    if (decided) {
      const at = decided.decidedAt ? new Date(decided.decidedAt) : undefined;
      return format === 'plain'
        ? `Not recorded: this gate was already decided: ${decidedText(decided.decision, at)}.`
        : `Not recorded: this gate was already decided. ${decidedLine(decided.decision, at)}`;
    }
  }
  return `Not recorded: ${format === 'plain' ? error.message : escapeSlack(error.message)}.`;
}

function parsePayload(body: string): Interaction | undefined {
  const raw = new URLSearchParams(body).get('payload');
  if (!raw) return undefined;
  try {
    const value = JSON.parse(raw) as unknown;
    return value !== null && typeof value === 'object' ? (value as Interaction) : undefined;
  } catch {
    return undefined;
  }
}

/** Slack wants a 200 within three seconds; what the click did is shown in Slack itself. */
function ack(): HttpResult {
  return { statusCode: 200, headers: { 'cache-control': 'no-store' }, body: '' };
}

/** The approver a Slack user id is mapped to; an id that is only an object's property (`constructor`) is no one. */
function approverOf(config: SlackInteractionsConfig, user: string): string | undefined {
  return Object.hasOwn(config.approvers, user) ? config.approvers[user] : undefined;
}

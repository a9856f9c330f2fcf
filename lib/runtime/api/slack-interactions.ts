/**
 * `POST /slack/interactions`: Approve and Reject clicked in Slack. The request is verified with
 * Slack's own request signing check (`verifySlackRequest` from @slack/bolt: the signing secret and
 * its 5-minute replay window), the Slack user is mapped to an approver, and the answer goes through
 * Approvals like any other (link signature, plan digest, policy, first answer wins). The message is
 * then updated in place to say who decided what and when; a late click is told who decided first.
 */
import { verifySlackRequest } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import { z } from 'zod';
import type { ApprovalsDeps } from '../gate/gate.ts';
import { approvalsFor } from '../gate/gate.ts';
import { ApprovalError } from '../gate/links.ts';
import { SLACK_ACTIONS } from '../notify/message.ts';
import { bodyText, type HttpEvent, type HttpResult, headerOf, json } from './http.ts';

export interface SlackInteractionsDeps extends ApprovalsDeps {
  readonly slack: {
    readonly signingSecret: string;
    /** Posts the ephemeral replies and updates the decided message. */
    readonly client: WebClient;
    /** Slack user id → the approver name the plans' approval policies use. */
    readonly approvers: Readonly<Record<string, string>>;
    /** @default the clock */
    readonly now?: () => number;
  };
}

/** The part of a `block_actions` payload this endpoint reads. */
const BlockActionsSchema = z.object({
  type: z.literal('block_actions'),
  user: z.object({ id: z.string(), name: z.string().optional() }),
  channel: z.object({ id: z.string() }).optional(),
  container: z.object({ message_ts: z.string().optional(), channel_id: z.string().optional() }).optional(),
  actions: z.array(z.object({ action_id: z.string(), value: z.string().max(400).optional() })).min(1),
});

export async function handleSlackInteraction(
  event: HttpEvent,
  deps: SlackInteractionsDeps,
): Promise<HttpResult> {
  const body = bodyText(event);
  try {
    verifySlackRequest({
      signingSecret: deps.slack.signingSecret,
      body,
      headers: {
        'x-slack-signature': headerOf(event, 'x-slack-signature') ?? '',
        'x-slack-request-timestamp': Number(headerOf(event, 'x-slack-request-timestamp')),
      },
      ...(deps.slack.now ? { nowMilliseconds: deps.slack.now() } : {}),
    });
  } catch {
    return json(401, { error: 'not a verified Slack request' });
  }
  let payload: z.infer<typeof BlockActionsSchema>;
  try {
    payload = BlockActionsSchema.parse(JSON.parse(new URLSearchParams(body).get('payload') ?? ''));
  } catch {
    return json(400, { error: 'not a block_actions payload' });
  }
  const action = payload.actions[0] as (typeof payload.actions)[number];
  const channel = payload.channel?.id ?? payload.container?.channel_id;
  const messageTs = payload.container?.message_ts;
  const tell = async (text: string) => {
    if (channel) await deps.slack.client.chat.postEphemeral({ channel, user: payload.user.id, text });
    return json(200, { text });
  };
  if (action.action_id !== SLACK_ACTIONS.approve && action.action_id !== SLACK_ACTIONS.reject)
    return json(200, {}); // a button that only opens the page
  const by = Object.hasOwn(deps.slack.approvers, payload.user.id)
    ? deps.slack.approvers[payload.user.id]
    : undefined;
  if (!by)
    return tell('You are not a plangate approver: ask an admin to map your Slack user to an approver.');
  const linkId = action.value ?? '';
  const approvals = approvalsFor(deps);
  try {
    const gate = await approvals.describe(linkId);
    const decision =
      action.action_id === SLACK_ACTIONS.approve
        ? { decision: 'APPROVE' }
        : { decision: 'REJECT', reason: `rejected in Slack by ${by}` };
    const outcome = await approvals.answer(linkId, { by, digest: gate.planDigest, decision });
    if (outcome.status === 'pending')
      return tell(`Your approval was recorded: ${outcome.votes} of ${gate.policy.quorum} so far.`);
    const verdict = `${outcome.decision.decision === 'APPROVE' ? '✅ Approved' : '⛔ Rejected'} by ${by} at ${new Date().toISOString()}`;
    if (channel && messageTs)
      await deps.slack.client.chat.update({
        channel,
        ts: messageTs,
        text: verdict,
        blocks: [
          {
            type: 'section',
            text: { type: 'mrkdwn', text: `*${gate.planId} v${gate.planVersion}*: ${verdict}` },
          },
        ],
      });
    return json(200, { text: verdict });
  } catch (error) {
    if (error instanceof ApprovalError) return tell(`Not recorded: ${error.message}`);
    throw error;
  }
}

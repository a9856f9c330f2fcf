/**
 * Slack approvals end to end over HTTP: the gate Lambda opens a gate, the notifier Lambda posts
 * the Block Kit message through @slack/web-api's WebClient to a local server that speaks Slack's
 * Web API, and that server sends signed block_actions interactions (as Slack does on a click) to
 * the approvals API Lambda, served on loopback as API Gateway would call it. Verification is
 * Bolt's; answers go through the gates table (dynalite) and SendTaskSuccess (a recording SFN).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as makeApprovalsApi } from '../../lambdas/approvals-api.ts';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { makeHandler as makeNotifier, slackMessageRecorder } from '../../lambdas/notifier.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { journalFor } from '../../lib/runtime/deps.ts';
import type { GateDeps } from '../../lib/runtime/gate/gate.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { SlackClient, SlackNotifier } from '../../lib/runtime/notify/slack.ts';
import type { GateApprovers } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';
import { FakeSlack, type SlackMessage, statusOf } from '../fake-slack.ts';
import { LocalHttpApi } from '../support/bare-http-api.ts';
import { type RecordingSfn, startRecordingSfn } from './recording-sfn.ts';

const BOT_TOKEN = `xoxb-1234-5678-${'t'.repeat(24)}`;
const SIGNING_SECRET = `8f742231b10e8888abcd${'s'.repeat(12)}`;
const KEY = 'k'.repeat(40);
const plan = { id: 'deploy', version: 1, digest: 'sha256:cafe' };
const APPROVERS = { U0ALICE: 'alice', U0BOB: 'bob', U0MALLORY: 'mallory' };

let dir: string;
let plane: LocalDataPlane;
let recorder: RecordingSfn;
let slack: FakeSlack;
let api: LocalHttpApi;
let pageApi: LocalHttpApi;
let gate: ReturnType<typeof makeGate>;
let interactions: string;
let gateDeps: GateDeps;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-slack-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  recorder = await startRecordingSfn();
  slack = await FakeSlack.start({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET });
  const client = new SlackClient({ botToken: async () => BOT_TOKEN, slackApiUrl: slack.apiUrl });
  const base = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    sfn: recorder.client,
    signingKey: KEY,
  };
  api = await LocalHttpApi.start(
    makeApprovalsApi({
      ...base,
      identity: { mode: 'jwt' },
      slack: { signingSecret: SIGNING_SECRET, approvers: APPROVERS, client },
    }),
  );
  interactions = `${api.url}/slack/interactions`;
  const notifier = makeNotifier({
    approvalsBaseUrl: api.url,
    slack: new SlackNotifier({ client, channel: 'C0APPROVALS' }),
    recordSlackMessage: slackMessageRecorder(plane.clients.doc, plane.tableNames.gates),
  });
  // The page's and scripts' API, answering as the x-plangate-user header names (loopback only); a
  // modification made there is posted to Slack as a revision, as the notifier is wired on AWS.
  pageApi = await LocalHttpApi.start(
    makeApprovalsApi({
      ...base,
      identity: { mode: 'header', header: 'x-plangate-user' },
      slack: { signingSecret: SIGNING_SECRET, approvers: APPROVERS, client },
      notify: async (notice) => {
        await notifier(notice);
      },
    }),
  );
  gateDeps = {
    ...base,
    tools: builtinRegistry(),
    cwd: dir,
    notify: async (notice) => {
      await notifier(notice);
    },
  };
  gate = makeGate(gateDeps);
});
afterAll(async () => {
  await api.close();
  await pageApi.close();
  await slack.close();
  await recorder.close();
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

let executions = 0;
/** Opens a plan gate (after PLAN_CREATED, naming the submitter when given); returns its Slack message. */
async function openPlanGate(
  policy: GateApprovers,
  submittedBy?: string,
): Promise<{ message: SlackMessage; token: string; executionId: string }> {
  const executionId = `arn:aws:states:us-east-1:123456789012:execution:deploy:slack-${++executions}`;
  await journalFor(gateDeps).append({
    executionId,
    planId: plan.id,
    planVersion: plan.version,
    planDigest: plan.digest,
    event: 'PLAN_CREATED',
    details: {
      task_count: 1,
      dependencies: { ship: [] },
      ...(submittedBy ? { submitted_by: submittedBy } : {}),
    },
  });
  const token = `AQ-token-${executions}-${'x'.repeat(200)}`;
  const before = slack.messages.length;
  await gate({
    kind: 'plan',
    taskToken: token,
    executionId,
    plan,
    approval: policy,
    round: 1,
    timeoutSeconds: 3600,
    summary: { objective: 'Ship the release', steps: 1 },
  });
  const message = await slack.until('the approval message', () => slack.messages[before]);
  return { message, token, executionId };
}

const ephemeralsTo = (user: string) => slack.ephemerals.filter((e) => e.user === user).map((e) => e.text);
const successesFor = (token: string) => recorder.successes.filter((s) => s.taskToken === token);

describe('Slack approvals', { timeout: 30_000 }, () => {
  it('posts Block Kit buttons through the Web API that carry the opaque link id only, never a token or secret', async () => {
    const { message, token } = await openPlanGate({
      approvers: ['alice', 'bob'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    expect(message.channel).toBe('C0APPROVALS');
    const buttons = slack.buttons(message);
    expect(buttons.map((b) => b.action_id)).toEqual([
      'plangate.APPROVE',
      'plangate.REJECT',
      'plangate.ask',
      'plangate.page',
    ]);
    // The opaque link id and the digest the message showed: what a click answers.
    const { linkId, digest } = JSON.parse(buttons[0]?.value as string) as { linkId: string; digest: string };
    expect(linkId).toMatch(/^[A-Za-z0-9_-]+\.\d+\.[A-Za-z0-9_-]+$/);
    expect(digest).toBe(plan.digest);
    expect(buttons[2]?.value).toBe(buttons[0]?.value);
    expect(buttons[3]?.url).toBe(`${api.url}/approvals/${encodeURIComponent(linkId)}`);
    const wire = JSON.stringify(message.history);
    expect(wire).not.toContain(token);
    expect(wire).not.toContain(BOT_TOKEN);
    expect(wire).not.toContain(SIGNING_SECRET);
  });

  it('refuses forged, replayed and unsigned clicks with 401 and changes nothing', async () => {
    const { message, token } = await openPlanGate({
      approvers: ['alice'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    expect(
      await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE', { signWith: 'not-the-secret' }),
    ).toBe(401);
    // Slack's replay window is five minutes.
    const stale = Math.floor(Date.now() / 1000) - 6 * 60;
    expect(
      await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE', { timestamp: stale }),
    ).toBe(401);
    const unsigned = await fetch(interactions, { method: 'POST', body: 'payload=%7B%7D' });
    expect(unsigned.status).toBe(401);
    expect(successesFor(token)).toEqual([]);
    expect(slack.messages.find((m) => m.ts === message.ts)?.history).toHaveLength(1);
  });

  it('refuses an unmapped Slack user and an approver outside the allowlist, in Slack, deciding nothing', async () => {
    const { message, token } = await openPlanGate({
      approvers: ['alice', 'bob'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    expect(await slack.click(interactions, message, 'plangate.APPROVE', 'U0STRANGER')).toBe(200);
    expect(ephemeralsTo('U0STRANGER').at(-1)).toContain('not mapped to a plangate approver');
    expect(await slack.click(interactions, message, 'plangate.APPROVE', 'U0MALLORY')).toBe(200);
    expect(ephemeralsTo('U0MALLORY').at(-1)).toContain("mallory is not one of this plan's approvers");
    expect(successesFor(token)).toEqual([]);
  });

  it('needs a quorum of distinct approvers, shows the votes in place, then who decided what and when', async () => {
    const { message, token, executionId } = await openPlanGate({
      approvers: ['alice', 'bob'],
      forbiddenApprovers: [],
      quorum: 2,
    });
    await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE');
    expect(statusOf(message)).toContain('approved by alice: 1 of 2 approvals so far');
    expect(slack.buttons(message).map((b) => b.action_id)).toContain('plangate.APPROVE');
    // The same person twice is one vote.
    await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE');
    expect(ephemeralsTo('U0ALICE').at(-1)).toContain('alice has already approved this gate');
    expect(successesFor(token)).toEqual([]);

    await slack.click(interactions, message, 'plangate.APPROVE', 'U0BOB');
    expect(successesFor(token)).toHaveLength(1);
    expect(successesFor(token)[0]?.output).toMatchObject({ decision: 'APPROVE', by: 'alice, bob' });
    expect(statusOf(message)).toMatch(/^:white_check_mark: \*APPROVE\* by alice, bob at <!date\^\d+\^/);
    // Decided: the buttons are gone from the message.
    expect(slack.buttons(message)).toEqual([]);
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, executionId);
    // Every vote is its own event; the decision names every approver and the digest approved.
    expect(events.filter((e) => e.event === 'GATE_VOTE').map((e) => e.details.voter)).toEqual([
      'alice',
      'bob',
    ]);
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details).toMatchObject({
      approver: 'alice, bob',
      approvers: ['alice', 'bob'],
    });

    // A stale client still shows the buttons: a second click says what happened and decides nothing.
    const stale = { ...message, blocks: message.history[0] as Record<string, unknown>[] };
    await slack.click(interactions, stale, 'plangate.REJECT', 'U0BOB');
    expect(ephemeralsTo('U0BOB').at(-1)).toMatch(
      /already decided\. :white_check_mark: \*APPROVE\* by alice, bob at/,
    );
    expect(successesFor(token)).toHaveLength(1);
  });

  it('does not let the submitter approve their own plan; another approver can', async () => {
    const { message, token, executionId } = await openPlanGate(
      { approvers: ['alice', 'bob'], forbiddenApprovers: [], quorum: 1 },
      'alice',
    );
    await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE');
    expect(ephemeralsTo('U0ALICE').at(-1)).toContain('alice submitted this plan and may not approve it');
    expect(successesFor(token)).toEqual([]);
    await slack.click(interactions, message, 'plangate.APPROVE', 'U0BOB');
    expect(successesFor(token)[0]?.output).toMatchObject({ decision: 'APPROVE', by: 'bob' });
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, executionId);
    // The submitter's own click is refused and audited; the other approver's decides.
    expect(events.map((e) => e.event)).toEqual([
      'PLAN_CREATED',
      'GATE_APPROVAL_REQUESTED',
      'GATE_ANSWER_REFUSED',
      'GATE_VOTE',
      'GATE_APPROVED',
    ]);
  });

  it('rejects from Slack with who rejected it as the reason', async () => {
    const { message, token } = await openPlanGate({ approvers: [], forbiddenApprovers: [], quorum: 1 });
    await slack.click(interactions, message, 'plangate.REJECT', 'U0MALLORY');
    expect(successesFor(token)[0]?.output).toEqual({
      decision: 'REJECT',
      by: 'mallory',
      reason: 'rejected in Slack by mallory',
    });
    expect(statusOf(message)).toContain(':x: *REJECT* by mallory: rejected in Slack by mallory at');
  });

  it('asks a question from Slack in a modal: answered ASK_FOR_CLARIFICATION as on the page, shown in the message', async () => {
    const { message, token, executionId } = await openPlanGate({
      approvers: ['alice'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    // Someone not mapped to an approver gets no modal, only a note.
    const before = slack.views.length;
    await slack.click(interactions, message, 'plangate.ask', 'U0NOBODY');
    expect(ephemeralsTo('U0NOBODY').at(-1)).toContain('not mapped to a plangate approver');
    expect(slack.views).toHaveLength(before);

    expect(await slack.click(interactions, message, 'plangate.ask', 'U0ALICE')).toBe(200);
    const opened = await slack.until('the question modal', () => slack.views[before]);
    expect(opened.view).toMatchObject({ type: 'modal', callback_id: 'plangate.ask' });
    expect(JSON.stringify(opened.view)).not.toContain(token);
    const ask = (user: string, question: string) =>
      slack.submit(interactions, opened, user, { 'plangate.question': { question } });
    const errorOf = (answer: { body: string }) =>
      (JSON.parse(answer.body) as { errors: Record<string, string> }).errors['plangate.question'];
    // Refusals are shown in the modal, beside the question, and decide nothing.
    expect(errorOf(await ask('U0ALICE', '   '))).toBe('Write the question first.');
    expect(errorOf(await ask('U0BOB', 'Why?'))).toBe(
      "Not recorded: bob is not one of this plan's approvers.",
    );
    const forged = await slack.submit(
      interactions,
      opened,
      'U0ALICE',
      { 'plangate.question': { question: 'Forged?' } },
      { signWith: 'not-the-secret' },
    );
    expect(forged.status).toBe(401);
    expect(successesFor(token)).toHaveLength(0);

    expect(await ask('U0ALICE', 'Which region does this ship to?')).toEqual({ status: 200, body: '' });
    expect(successesFor(token)[0]?.output).toEqual({
      decision: 'ASK_FOR_CLARIFICATION',
      by: 'alice',
      question: 'Which region does this ship to?',
    });
    await slack.until('the question in the message', () =>
      statusOf(message)?.includes('ASK_FOR_CLARIFICATION') ? true : undefined,
    );
    expect(statusOf(message)).toMatch(
      /^:question: \*ASK_FOR_CLARIFICATION\* by alice: Which region does this ship to\? at <!date/,
    );
    expect(slack.buttons(message)).toEqual([]);
    const events = await readEvents(plane.clients.doc, plane.tableNames.events, executionId);
    expect(events.filter((e) => e.event === 'GATE_CLARIFICATION_REQUESTED').map((e) => e.details)).toEqual([
      { gate: 'plan', question: 'Which region does this ship to?', asked_by: 'alice' },
    ]);
    // The modal sent again is told the gate was answered already.
    expect(errorOf(await ask('U0ALICE', 'Again?'))).toMatch(/^Not recorded: this gate was already decided/);
    expect(successesFor(token)).toHaveLength(1);
  });

  it('shows a decision made outside Slack in the message, without buttons, so nobody clicks a decided gate', async () => {
    const { message, token } = await openPlanGate({
      approvers: ['alice', 'bob'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    const { linkId } = JSON.parse(slack.buttons(message)[0]?.value as string) as { linkId: string };
    const answered = await fetch(`${pageApi.url}/approvals/${encodeURIComponent(linkId)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-plangate-user': 'bob' },
      body: JSON.stringify({ digest: plan.digest, decision: 'REJECT', reason: 'not this week' }),
    });
    expect(answered.status, await answered.clone().text()).toBe(200);
    expect(successesFor(token)).toHaveLength(1);
    await slack.until('the message to show the decision', () =>
      statusOf(message)?.includes('REJECT') ? true : undefined,
    );
    expect(statusOf(message)).toMatch(/^:x: \*REJECT\* by bob: not this week at <!date\^\d+\^/);
    expect(slack.buttons(message)).toEqual([]);
    // What the message showed before is kept; only the buttons went.
    expect(message.blocks.length).toBe((message.history[0] as unknown[]).length);
    expect(JSON.stringify(message.history)).not.toContain(token);
    // A stale client's click is told who decided, and decides nothing.
    const stale = { ...message, blocks: message.history[0] as Record<string, unknown>[] };
    await slack.click(interactions, stale, 'plangate.APPROVE', 'U0ALICE');
    expect(ephemeralsTo('U0ALICE').at(-1)).toContain('already decided');
    expect(successesFor(token)).toHaveLength(1);
  });

  it('posts a revision made on the page as a new message whose buttons answer the revision; the old one is refused as stale', async () => {
    const { message, token } = await openPlanGate({
      approvers: ['alice', 'bob'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    const { linkId } = JSON.parse(slack.buttons(message)[0]?.value as string) as { linkId: string };
    const before = slack.messages.length;
    const modified = await fetch(`${pageApi.url}/approvals/${encodeURIComponent(linkId)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-plangate-user': 'bob', accept: 'application/json' },
      body: JSON.stringify({
        digest: plan.digest,
        decision: 'APPROVE_WITH_MODIFICATIONS',
        skipSteps: ['ship'],
      }),
    });
    const body = (await modified.json()) as { status: string; digest: string };
    expect(body.status).toBe('modified');
    const revised = await slack.until('the revision message', () => slack.messages[before]);
    expect(JSON.stringify(revised.blocks)).toContain('skips ship');
    expect(JSON.parse(slack.buttons(revised)[0]?.value as string)).toEqual({ linkId, digest: body.digest });

    // A click on the message about the plan as first posted answers content nobody may approve now.
    await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE');
    expect(ephemeralsTo('U0ALICE').at(-1)).toContain('modified by bob');
    expect(successesFor(token)).toHaveLength(0);
    // The revision's own message approves the revision.
    await slack.click(interactions, revised, 'plangate.APPROVE', 'U0ALICE');
    expect(successesFor(token)).toHaveLength(1);
    expect(successesFor(token)[0]?.output).toMatchObject({
      decision: 'APPROVE_WITH_MODIFICATIONS',
      by: 'alice',
      skipSteps: ['ship'],
    });
  });

  it('refuses a signed request dated more than five minutes ahead, as it refuses one five minutes behind', async () => {
    const { message, token } = await openPlanGate({
      approvers: ['alice'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    const now = Math.floor(Date.now() / 1000);
    // Signed with the right secret, but dated a year from now: a captured request replayable for a year.
    const nextYear = now + 365 * 24 * 3600;
    expect(
      await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE', { timestamp: nextYear }),
    ).toBe(401);
    expect(
      await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE', { timestamp: now + 6 * 60 }),
    ).toBe(401);
    expect(successesFor(token)).toEqual([]);
    // A clock a few minutes fast is still within the window.
    expect(
      await slack.click(interactions, message, 'plangate.APPROVE', 'U0ALICE', { timestamp: now + 4 * 60 }),
    ).toBe(200);
    expect(successesFor(token)[0]?.output).toMatchObject({ decision: 'APPROVE', by: 'alice' });
  });

  it('shows a refusal in the modal as plain text, cut at a word with "…", never as raw mrkdwn', async () => {
    const { message, token } = await openPlanGate({
      approvers: ['alice'],
      forbiddenApprovers: [],
      quorum: 1,
    });
    const before = slack.views.length;
    await slack.click(interactions, message, 'plangate.ask', 'U0ALICE');
    const opened = await slack.until('the question modal', () => slack.views[before]);
    const ask = (question: string) =>
      slack.submit(interactions, opened, 'U0ALICE', { 'plangate.question': { question } });
    const question = `Does *this* ship to _every_ region? ${'Please list each region and its rollout window. '.repeat(6)}`;
    expect((await ask(question)).status).toBe(200);
    expect(successesFor(token)).toHaveLength(1);
    const again = await ask('And again?');
    const error =
      (JSON.parse(again.body) as { errors: Record<string, string> }).errors['plangate.question'] ?? '';
    // Slack shows a modal's errors as plain text: no mrkdwn (bold, emoji codes, <!date…> tokens).
    expect(error).toMatch(/^Not recorded: this gate was already decided: ASK_FOR_CLARIFICATION by alice/);
    expect(error).not.toMatch(/<!date|\*ASK|:question:|\u200b|&lt;|&gt;|&amp;/);
    // The question is quoted as typed, its asterisks and underscores literal.
    expect(error).toContain('alice: Does *this* ship to _every_ region? Please list');
    // Too long for the modal: cut after a whole word, marked with "…".
    expect(error.length).toBeLessThanOrEqual(150);
    expect(error).toMatch(/\S…$/);
    const quoted = error.slice(error.indexOf('by alice: ') + 'by alice: '.length, -1);
    expect(`${question} `).toContain(`${quoted} `);
    expect(successesFor(token)).toHaveLength(1);
  });
});

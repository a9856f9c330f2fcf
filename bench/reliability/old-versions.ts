/**
 * Old-version attacks through the real HTTP edge (`plangate serve`'s platform: SigV4 to submit, an
 * approver's JWT, emailed links, page sessions, Slack clicks): v1 of a plan is gated, then v2,
 * and v1 is approved in every way there is: its shared link through the API (with its own
 * digest, v2's digest, with modifications), its emailed link, a page opened before v2 came and
 * posted after, a Slack message still showing its buttons; and v1 launched again after v2. None
 * may be accepted, and no superseded execution may run a step. Then an approval of v1 races the
 * submission of v2, many times: exactly one wins each race (the approval, and v1 runs; or the
 * closing, and the approval is refused), never both, never neither.
 */

import { rm } from 'node:fs/promises';
import { signedFetch } from '../../lib/aws-local/api-gateway/signed-fetch.ts';
import { parseLinkId } from '../../lib/runtime/gate/links.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { echoChainPlan } from '../../tests/support/echo-plan.ts';
import {
  APPROVERS,
  JSON_HEADERS,
  openPage,
  type Platform,
  reasonOf,
  SUBMITTER,
  slackUser,
  startPlatform,
} from './approval-attacks.ts';

export interface OldVersionResult {
  /** Answers to superseded gates (and old versions launched again), and how many were accepted. */
  readonly attempts: number;
  readonly accepted: number;
  readonly byWay: Record<
    string,
    { attempts: number; accepted: number; statuses: Record<string, number>; sampleReason: string }
  >;
  /** Executions whose gate was superseded; those that ran a step or succeeded. */
  readonly supersededExecutions: number;
  readonly supersededThatRan: number;
  /** Superseded gates whose Slack message shows the closing (no buttons left), of those superseded. */
  readonly slackMessagesUpdated: number;
  /** An approval of v1 racing the submission of v2. */
  readonly race: {
    readonly trials: number;
    /** The approval won: v1 approved before v2 was gated, and it ran. */
    readonly approvalFirst: number;
    /** The closing won: the approval was refused as superseded, and v1 ran nothing. */
    readonly closedFirst: number;
    readonly both: number;
    readonly neither: number;
    /** How far the approvals were staggered after the submissions (ms), so both orders happen. */
    readonly staggerMs: readonly [number, number];
  };
}

const approval = { approvers: APPROVERS.slice(0, 5), allowAutoApprove: false, timeoutSeconds: 3600 };
const v1Of = (id: string) => echoChainPlan(id, ['build', 'ship'], { approval });
const v2Of = (id: string) => ({ ...echoChainPlan(id, ['build', 'test', 'ship'], { approval }), version: 2 });

export async function runOldVersionAttacks(rounds = 10, races = 30): Promise<OldVersionResult> {
  const p = await startPlatform();
  try {
    const byWay: OldVersionResult['byWay'] = {};
    const record = (way: string, status: number, accepted: boolean, reason: string) => {
      const entry = byWay[way] ?? {
        attempts: 0,
        accepted: 0,
        statuses: {},
        sampleReason: reason.slice(0, 160),
      };
      byWay[way] = entry;
      entry.attempts++;
      entry.statuses[status] = (entry.statuses[status] ?? 0) + 1;
      if (accepted) entry.accepted++;
    };
    const superseded: string[] = [];
    const gatingMs: number[] = [];
    let slackMessagesUpdated = 0;

    for (let round = 0; round < rounds; round++) {
      const id = `old-version-${round}`;
      const v1 = await submitAndGate(p, v1Of(id), 1);
      const link = parseLinkId(v1.notice.approvalId);
      const bound = p.signer.bound(
        link.approvalId,
        link.expiresAtEpoch,
        v1.notice.plan.digest,
        APPROVERS[1] as string,
      );
      // Opened before v2 comes: a page session of the shared link and one of an emailed link, and
      // the Slack message as it showed then (a client that has not refreshed it).
      const sharedPage = await openPage(p, v1.notice.approvalId);
      const emailedPage = await openPage(p, bound);
      const slackMessage = await p.slack.until("v1's Slack message", () =>
        p.slack.messages.find((m) => p.slack.linkIdOf(m) === v1.notice.approvalId),
      );
      const stale = { ...slackMessage, blocks: slackMessage.history[0] ?? slackMessage.blocks };

      const started = performance.now();
      const v2 = await submitAndGate(p, v2Of(id), 2);
      gatingMs.push(performance.now() - started);
      await until(
        'GATE_SUPERSEDED in v1',
        async () =>
          (await journal(p, v1.executionArn)).some((e) => e.event === 'GATE_SUPERSEDED') || undefined,
      );
      superseded.push(v1.executionArn);
      const updated = await until("v1's Slack message to change", () =>
        p.slack.buttons(slackMessage).length === 0 ? true : undefined,
      ).catch(() => false);
      if (updated) slackMessagesUpdated++;

      const v1Digest = v1.notice.plan.digest;
      const asApprover = (i: number) => ({
        ...JSON_HEADERS,
        authorization: `Bearer ${p.issuer.token(APPROVERS[i] as string)}`,
      });
      const post = async (way: string, path: string, headers: Record<string, string>, body: string) => {
        const response = await fetch(`${p.platform.url}${path}`, { method: 'POST', headers, body });
        record(way, response.status, response.status < 400, reasonOf(await response.text()));
      };
      const linkPath = `/approvals/${encodeURIComponent(v1.notice.approvalId)}`;
      await post(
        'shared link through the API (JWT)',
        linkPath,
        asApprover(0),
        JSON.stringify({ digest: v1Digest, decision: 'APPROVE' }),
      );
      await post(
        "shared link with v2's digest",
        linkPath,
        asApprover(0),
        JSON.stringify({ digest: v2.notice.plan.digest, decision: 'APPROVE' }),
      );
      await post(
        'shared link, approved with modifications',
        linkPath,
        asApprover(2),
        JSON.stringify({ digest: v1Digest, decision: 'APPROVE_WITH_MODIFICATIONS', skipSteps: [] }),
      );
      await post(
        'emailed (recipient-bound) link',
        `/approvals/${encodeURIComponent(bound)}/as-recipient`,
        JSON_HEADERS,
        JSON.stringify({ digest: v1Digest, decision: 'APPROVE' }),
      );
      const form = (formToken: string) =>
        new URLSearchParams({ digest: v1Digest, decision: 'APPROVE', form_token: formToken }).toString();
      const formHeaders = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
      await post(
        'page opened before v2, posted after (signed in)',
        sharedPage.answerPath,
        { ...formHeaders, cookie: sharedPage.cookie, authorization: asApprover(3).authorization },
        form(sharedPage.formToken),
      );
      await post(
        'emailed page opened before v2, posted after',
        emailedPage.answerPath,
        { ...formHeaders, cookie: emailedPage.cookie },
        form(emailedPage.formToken),
      );
      const status = await p.slack.click(
        `${p.platform.url}/slack/interactions`,
        stale,
        'plangate.APPROVE',
        slackUser(4),
      );
      const told = p.slack.ephemerals.filter((e) => e.user === slackUser(4)).at(-1)?.text ?? '';
      record('Slack message still showing its buttons', status, !/superseded by v2/.test(told), told);

      // v1 launched again after v2, same content: its gate is closed at once and nobody is asked.
      const asked = p.gates.length;
      const again = await submit(p, v1Of(id));
      await until('v1 launched again to end', async () => ((await completion(p, again)) ? true : undefined));
      const noticed = p.gates.slice(asked).some((g) => g.executionId === again);
      record(
        'v1 launched again after v2',
        201,
        noticed,
        noticed ? 'its approvers were asked' : 'closed at once',
      );
      superseded.push(again);
    }
    // Nothing of a superseded version ran, whatever was tried.
    let ran = 0;
    for (const arn of superseded) {
      const events = await until('a superseded execution to end', async () => {
        const all = await journal(p, arn);
        return all.some((e) => e.event === 'EXECUTION_COMPLETE') ? all : undefined;
      });
      const complete = events.find((e) => e.event === 'EXECUTION_COMPLETE');
      if (
        events.some((e) => e.event.startsWith('TASK_') || e.event === 'GATE_APPROVED') ||
        complete?.details.succeeded !== false ||
        complete.details.reason !== 'superseded by v2'
      )
        ran++;
    }

    const race = await raceApprovalAndClosing(p, races, median(gatingMs));
    const attempts = Object.values(byWay).reduce((n, w) => n + w.attempts, 0);
    const accepted = Object.values(byWay).reduce((n, w) => n + w.accepted, 0);
    return {
      attempts,
      accepted,
      byWay,
      supersededExecutions: superseded.length,
      supersededThatRan: ran,
      slackMessagesUpdated,
      race,
    };
  } finally {
    await p.platform.close();
    await p.slack.close();
    await rm(p.dir, { recursive: true, force: true });
  }
}

/** Approves v1 while v2 is submitted, the approval staggered across twice the time gating v2 takes. */
async function raceApprovalAndClosing(
  p: Platform,
  trials: number,
  gatingMs: number,
): Promise<OldVersionResult['race']> {
  const outcome = { approvalFirst: 0, closedFirst: 0, both: 0, neither: 0 };
  const spread = Math.max(20, Math.round(2 * gatingMs));
  for (let i = 0; i < trials; i++) {
    const id = `old-version-race-${i}`;
    const v1 = await submitAndGate(p, v1Of(id), 1);
    const [answer] = await Promise.all([
      new Promise((r) => setTimeout(r, Math.round((i / trials) * spread))).then(() =>
        fetch(`${p.platform.url}/approvals/${encodeURIComponent(v1.notice.approvalId)}`, {
          method: 'POST',
          headers: { ...JSON_HEADERS, authorization: `Bearer ${p.issuer.token(APPROVERS[0] as string)}` },
          body: JSON.stringify({ digest: v1.notice.plan.digest, decision: 'APPROVE' }),
        }),
      ),
      submitAndGate(p, v2Of(id), 2),
    ]);
    const events = await until('v1 to end', async () => {
      const all = await journal(p, v1.executionArn);
      return all.some((e) => e.event === 'EXECUTION_COMPLETE') ? all : undefined;
    });
    const has = (event: string) => events.some((e) => e.event === event);
    const succeeded = events.find((e) => e.event === 'EXECUTION_COMPLETE')?.details.succeeded === true;
    const approved = answer.status === 200 && has('GATE_APPROVED') && succeeded;
    const closed =
      answer.status === 410 &&
      has('GATE_SUPERSEDED') &&
      !has('GATE_APPROVED') &&
      !events.some((e) => e.event.startsWith('TASK_'));
    if (has('GATE_APPROVED') && has('GATE_SUPERSEDED')) outcome.both++;
    else if (approved && !has('GATE_SUPERSEDED')) outcome.approvalFirst++;
    else if (closed) outcome.closedFirst++;
    else outcome.neither++;
  }
  return { trials, ...outcome, staggerMs: [0, spread] };
}

async function submit(p: Platform, plan: object): Promise<string> {
  const response = await signedFetch(`${p.platform.url}/plans`, SUBMITTER, {
    method: 'POST',
    body: JSON.stringify(plan),
    headers: { 'content-type': 'application/json' },
  });
  if (response.status !== 201) throw new Error(`submit: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { executionArn: string }).executionArn;
}

async function submitAndGate(
  p: Platform,
  plan: { id: string },
  version: number,
): Promise<{ executionArn: string; notice: ApprovalNotice }> {
  const executionArn = await submit(p, plan);
  const notice = await until(`the gate of ${plan.id} v${version}`, () =>
    p.gates.find((g) => g.executionId === executionArn && g.kind === 'plan'),
  );
  return { executionArn, notice };
}

function journal(p: Platform, executionArn: string): Promise<JournalRecord[]> {
  return readEvents(p.platform.stack.data.clients.doc, p.platform.stack.data.tableNames.events, executionArn);
}

async function completion(p: Platform, executionArn: string): Promise<JournalRecord | undefined> {
  return (await journal(p, executionArn)).find((e) => e.event === 'EXECUTION_COMPLETE');
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

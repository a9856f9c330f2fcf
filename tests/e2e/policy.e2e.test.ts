import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { FakeSlack, type SlackMessage, statusOf } from '../fake-slack.ts';
import { writeMarkerPlan } from '../support/marker-plan.ts';
import { type CliRun, runPlan, storedEvents, verifyChain, workDir } from './cli.ts';
import { seedOrderProblems } from './seed-order.ts';

const BOT_TOKEN = `xoxb-7-7-${'e'.repeat(24)}`;
const SIGNING_SECRET = `e2e${'5'.repeat(29)}`;
const USERS = { U0ALICE: 'alice', U0BOB: 'bob', U0CAROL: 'carol', U0MALLORY: 'mallory' };

let slack: FakeSlack;
beforeAll(async () => {
  slack = await FakeSlack.start({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET });
});
afterAll(async () => {
  await slack.close();
});

let channels = 0;
/** A one-step plan with this approval policy, run with Slack configured; its own channel. */
async function runWithSlack(
  approval: Record<string, unknown>,
  extra: readonly string[] = [],
  timeScale = '0.01',
) {
  const cwd = await workDir();
  const file = await writeMarkerPlan(cwd, 'policy-e2e', approval);
  const channel = `C0E2E${++channels}`;
  const run = runPlan(file, cwd, ['--time-scale', timeScale, ...extra], {
    PLANGATE_SLACK_BOT_TOKEN: BOT_TOKEN,
    PLANGATE_SLACK_SIGNING_SECRET: SIGNING_SECRET,
    PLANGATE_SLACK_CHANNEL: channel,
    PLANGATE_SLACK_APPROVERS: Object.entries(USERS)
      .map(([id, name]) => `${id}=${name}`)
      .join(','),
    PLANGATE_SLACK_API_URL: slack.apiUrl,
  });
  await run.until('Slack interactions URL', () => /Slack interactions: (\S+)/.test(run.stderr));
  const interactions = /Slack interactions: (\S+)/.exec(run.stderr)?.[1] as string;
  const messages = (n = 1) =>
    slack.until(`${n} message(s) in ${channel}`, () => {
      const posted = slack.messages.filter((m) => m.channel === channel);
      return posted.length >= n ? posted : undefined;
    });
  const click = (message: SlackMessage, decision: string, user: keyof typeof USERS) =>
    slack.click(interactions, message, `plangate.${decision}`, user);
  const told = (user: string) =>
    slack.ephemerals.filter((e) => e.channel === channel && e.user === user).map((e) => e.text);
  return { cwd, run, messages, click, told };
}

async function checkedEvents(cwd: string, run: CliRun): Promise<JournalRecord[]> {
  const events = await storedEvents(cwd, run.executionArn);
  expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
  expect(seedOrderProblems(events)).toEqual([]);
  return events;
}

describe.concurrent('approval policy, end to end on the local stack through Slack', {
  timeout: 90_000,
}, () => {
  it('allowlist: an approver outside it and an unmapped Slack user are refused; a listed one approves', async () => {
    const { cwd, run, messages, click, told } = await runWithSlack({ approvers: ['alice'] });
    const [message] = (await messages()) as [SlackMessage];
    expect(await click(message, 'APPROVE', 'U0MALLORY')).toBe(200);
    expect(told('U0MALLORY').at(-1)).toContain("mallory is not one of this plan's approvers");
    await slack.click(
      /Slack interactions: (\S+)/.exec(run.stderr)?.[1] as string,
      message,
      'plangate.APPROVE',
      'U0NOBODY',
    );
    expect(told('U0NOBODY').at(-1)).toContain('not mapped to a plangate approver');
    await click(message, 'APPROVE', 'U0ALICE');
    expect(await run.exited).toBe(0);
    expect(statusOf(message)).toContain('*APPROVE* by alice at');
    const events = await checkedEvents(cwd, run);
    expect(events.filter((e) => e.event === 'GATE_APPROVED').map((e) => e.details.approver)).toEqual([
      'alice',
    ]);
  });

  it('quorum: two distinct approvers are needed; the same one twice counts once', async () => {
    const { cwd, run, messages, click, told } = await runWithSlack({
      approvers: ['alice', 'bob'],
      quorum: 2,
    });
    const [message] = (await messages()) as [SlackMessage];
    await click(message, 'APPROVE', 'U0ALICE');
    expect(statusOf(message)).toContain('1 of 2 approvals so far');
    await click(message, 'APPROVE', 'U0ALICE');
    expect(told('U0ALICE').at(-1)).toContain('alice has already approved this gate');
    expect(run.count('TASK_STARTED')).toBe(0);
    await click(message, 'APPROVE', 'U0BOB');
    expect(await run.exited).toBe(0);
    expect(statusOf(message)).toContain('*APPROVE* by alice, bob at');
    const events = await checkedEvents(cwd, run);
    expect(events.map((e) => e.event)).toContain('TASK_COMPLETED');
  });

  it('no self-approval: the submitter cannot approve their own plan; someone else can', async () => {
    const { cwd, run, messages, click, told } = await runWithSlack({ approvers: ['alice', 'bob'] }, [
      '--as',
      'alice',
    ]);
    const [message] = (await messages()) as [SlackMessage];
    await click(message, 'APPROVE', 'U0ALICE');
    expect(told('U0ALICE').at(-1)).toContain('alice submitted this plan and may not approve it');
    await click(message, 'APPROVE', 'U0BOB');
    expect(await run.exited).toBe(0);
    const events = await checkedEvents(cwd, run);
    expect(events[0]?.details.submitted_by).toBe('alice');
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details.approver).toBe('bob');
  });

  it('timeout ladder: reminds, escalates to the next group (whose approval counts, the first group’s no longer), never approves by itself', async () => {
    // 1 s of plan time is 10 ms here: each group has 6 s, and is reminded after 3 s.
    const { cwd, run, messages, click, told } = await runWithSlack({
      approvers: ['alice'],
      timeoutSeconds: 600,
      remindAfterSeconds: 300,
      escalateTo: [{ approvers: ['carol'] }],
    });
    const [first, reminder, escalated] = (await messages(3)) as [SlackMessage, SlackMessage, SlackMessage];
    expect(reminder.text).toContain('Reminder: Plan approval requested');
    expect(escalated.text).toContain('Escalated to you: Plan approval requested');
    // The first group's messages lost their buttons when the gate was escalated, and its link
    // stopped working: a click from a client still showing the old message changes nothing.
    await slack.until('the escalation shown in the first message', () =>
      statusOf(first)?.includes('handed to carol'),
    );
    expect(slack.buttons(first)).toEqual([]);
    await click({ ...first, blocks: first.history[0] as Record<string, unknown>[] }, 'APPROVE', 'U0ALICE');
    expect(told('U0ALICE').at(-1)).toContain('handed to other approvers');
    await click(escalated, 'APPROVE', 'U0CAROL');
    expect(await run.exited).toBe(0);
    const events = await checkedEvents(cwd, run);
    // alice's click on the retired gate is refused and journaled; carol's vote decides.
    expect(events.map((e) => e.event).slice(0, 7)).toEqual([
      'PLAN_CREATED',
      'GATE_APPROVAL_REQUESTED',
      'GATE_REMINDED',
      'GATE_ESCALATED',
      'GATE_ANSWER_REFUSED',
      'GATE_VOTE',
      'GATE_APPROVED',
    ]);
    expect(events.find((e) => e.event === 'GATE_ESCALATED')?.details).toEqual({
      gate: 'plan',
      level: 1,
      approvers: ['carol'],
      // The gate that asks carol: its own link and policy (GET /plans/{id} shows it).
      opened: expect.objectContaining({ policy: expect.objectContaining({ approvers: ['carol'] }) }),
    });
    expect(events.find((e) => e.event === 'GATE_APPROVED')?.details.approver).toBe('carol');
    // The first group's messages say where the gate went and offer no buttons; carol's shows her decision.
    for (const message of [first, reminder]) {
      expect(statusOf(message)).toMatch(/^:arrow_double_up: Nobody answered in time: handed to carol at /);
      expect(slack.buttons(message)).toEqual([]);
    }
    expect(statusOf(escalated)).toContain('*APPROVE* by carol at');
  });

  it('timeout ladder: when nobody answers at all, the gate rejects with reason "timed out" and nothing runs', async () => {
    // 1.2 s per rung: well above the gate Lambda's own latency on a busy machine.
    const { cwd, run, messages } = await runWithSlack({
      approvers: ['alice'],
      timeoutSeconds: 240,
      remindAfterSeconds: 120,
      escalateTo: [{ approvers: ['carol'] }],
    });
    expect(await run.exited).toBe(1);
    // Asked, reminded, escalated, reminded: four messages, then the gate rejected itself.
    expect((await messages(4)).map((m) => m.text.split(':')[0])).toEqual([
      '[plangate] Plan approval requested',
      '[plangate] Reminder',
      '[plangate] Escalated to you',
      '[plangate] Reminder',
    ]);
    const events = await checkedEvents(cwd, run);
    expect(events.map((e) => e.event)).toEqual([
      'PLAN_CREATED',
      'GATE_APPROVAL_REQUESTED',
      'GATE_REMINDED',
      'GATE_ESCALATED',
      'GATE_REMINDED',
      'GATE_REJECTED',
      'EXECUTION_COMPLETE',
    ]);
    expect(events.find((e) => e.event === 'GATE_REJECTED')?.details).toMatchObject({
      gate: 'plan',
      approver: 'plangate-timeout',
      reason: 'timed out',
    });
    expect(run.count('GATE_APPROVED')).toBe(0);
    expect(run.stderr).toContain('timed out');
    // Every message shows what became of its gate, in place, and none offers a decision any more:
    // the first gate's two were escalated, the second gate's two rejected by the ladder.
    const [asked, reminded, escalated, remindedAgain] = await messages(4);
    await slack.until('the rejection in the last messages', () =>
      [escalated, remindedAgain].every((m) => statusOf(m as SlackMessage)?.includes('*REJECT*')),
    );
    for (const message of [asked, reminded])
      expect(statusOf(message as SlackMessage)).toMatch(
        /^:arrow_double_up: Nobody answered in time: handed to carol at /,
      );
    for (const message of [escalated, remindedAgain])
      expect(statusOf(message as SlackMessage)).toMatch(/^:x: \*REJECT\* by plangate-timeout: timed out at /);
    for (const message of [asked, reminded, escalated, remindedAgain])
      expect(slack.buttons(message as SlackMessage)).toEqual([]);
  });
});

/**
 * People are named one way (docs/policy.md, "Names"): through `plangate run` and its Slack
 * interactions, an approver spelled in another case is the same person to forbiddenApprovers,
 * the submitter rule and the quorum; a click from a Slack user id that is a property of every
 * JavaScript object is an unmapped user, not a crash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack, type SlackMessage } from '../fake-slack.ts';
import { writeMarkerPlan } from '../support/marker-plan.ts';
import { runPlan, storedEvents, workDir } from './cli.ts';

const BOT_TOKEN = `xoxb-8-8-${'n'.repeat(24)}`;
const SIGNING_SECRET = `names${'7'.repeat(27)}`;
const USERS = {
  U0MAL: 'MALLORY@EXAMPLE.COM',
  U0ALICE: 'alice@example.com',
  U0ALICE2: 'Alice@Example.COM.',
  U0BOB: 'bob@example.com',
  U0CAROL: 'CAROL@example.com',
};

let slack: FakeSlack;
beforeAll(async () => {
  slack = await FakeSlack.start({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET });
});
afterAll(async () => {
  await slack.close();
});

let channels = 0;
async function runWithSlack(approval: Record<string, unknown>, extra: readonly string[] = []) {
  const cwd = await workDir();
  const file = await writeMarkerPlan(cwd, 'names-e2e', approval);
  const channel = `C0NAMES${++channels}`;
  const run = runPlan(file, cwd, extra, {
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
  const [message] = (await slack.until(`a message in ${channel}`, () => {
    const posted = slack.messages.filter((m) => m.channel === channel);
    return posted.length >= 1 ? posted : undefined;
  })) as [SlackMessage];
  const click = (decision: string, user: string) =>
    slack.click(interactions, message, `plangate.${decision}`, user);
  const told = (user: string) =>
    slack.ephemerals.filter((e) => e.channel === channel && e.user === user).map((e) => e.text);
  return { cwd, run, click, told };
}

describe.concurrent('names, one way, through plangate run and Slack', { timeout: 90_000 }, () => {
  it('forbiddenApprovers, the submitter and the quorum compare emails case-insensitively', async () => {
    const { cwd, run, click, told } = await runWithSlack(
      { forbiddenApprovers: ['mallory@example.com'], quorum: 2 },
      ['--as', 'carol@EXAMPLE.com'],
    );
    expect(await click('APPROVE', 'U0MAL')).toBe(200);
    expect(told('U0MAL').at(-1)).toContain('mallory@example.com may not answer this gate');
    expect(await click('APPROVE', 'U0CAROL')).toBe(200);
    expect(told('U0CAROL').at(-1)).toContain('carol@example.com submitted this plan and may not approve it');
    expect(await click('APPROVE', 'U0ALICE')).toBe(200);
    // The same mailbox spelled otherwise (case, a trailing dot) is the same voter: it counts once.
    expect(await click('APPROVE', 'U0ALICE2')).toBe(200);
    expect(told('U0ALICE2').at(-1)).toContain('alice@example.com has already approved this gate');
    expect(run.count('TASK_STARTED')).toBe(0);
    expect(await click('APPROVE', 'U0BOB')).toBe(200);
    expect(await run.exited).toBe(0);
    const events = await storedEvents(cwd, run.executionArn);
    expect(events[0]?.details.submitted_by).toBe('carol@example.com');
    expect(events.filter((e) => e.event === 'GATE_VOTE').map((e) => e.details.voter)).toEqual([
      'alice@example.com',
      'bob@example.com',
    ]);
  });

  it('a click from a Slack user id named like an object property is an unmapped user', async () => {
    const { run, click, told } = await runWithSlack({});
    for (const user of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(await click('APPROVE', user)).toBe(200);
      expect(told(user).at(-1)).toContain('not mapped to a plangate approver');
    }
    expect(run.count('GATE_APPROVED')).toBe(0);
    expect(await click('APPROVE', 'U0BOB')).toBe(200);
    expect(await run.exited).toBe(0);
  });
});

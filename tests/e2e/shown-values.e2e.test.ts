/**
 * What is shown is what runs, values filled in, through `plangate run` and the real channels: a
 * plan's `context` at the plan gate (terminal, approval page, Slack, gate JSON) with its risk
 * marks; the escalation's "abort will undo" list with each rollback's values filled in from the
 * journal and its outside-the-workspace mark, before the person decides; a rollback contract that
 * reads its own step's output; and a run-time policy denial whose POLICY_DECISION names the call
 * and the reason (`plangate events` shows both).
 */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GateViewSchema } from '../../lib/launch/plans-api-schemas.ts';
import { FakeSlack, type SlackMessage } from '../fake-slack.ts';
import { CliRun, REPO, runPlan, storedEvents, workDir } from './cli.ts';

const BOT_TOKEN = `xoxb-8-8-${'w'.repeat(24)}`;
const SIGNING_SECRET = `vals${'5'.repeat(28)}`;
const SECRET_ENV = 'PLANGATE_SHOWN_VALUES_E2E_TOKEN';
const SECRET_VALUE = 'tok-e2e-shown-values-7731';

const fromEntities = (text: string) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

function slackText(message: SlackMessage): string {
  return fromEntities(
    message.blocks
      .flatMap((b) => [
        (b.text as { text?: string } | undefined)?.text ?? '',
        ...((b.fields as { text: string }[] | undefined) ?? []).map((f) => f.text),
      ])
      .join('\n'),
  );
}

function pageLink(message: SlackMessage): string {
  const actions = message.blocks.find((b) => b.type === 'actions') as { elements: { url?: string }[] };
  return actions.elements.find((e) => e.url)?.url as string;
}

async function gateJson(link: string) {
  const response = await fetch(link, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return GateViewSchema.parse(await response.json());
}

/** The approval page as a browser opens it: the link redeems into a page session (303 and its cookie). */
async function pageHtml(link: string): Promise<string> {
  const opened = await fetch(link, { headers: { accept: 'text/html' }, redirect: 'manual' });
  expect(opened.status).toBe(303);
  const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const response = await fetch(new URL(opened.headers.get('location') as string, link), {
    headers: { accept: 'text/html', cookie },
  });
  expect(response.status).toBe(200);
  return response.text();
}

/** The approval page link `plangate run` printed last (the terminal's own link, answering as its user). */
function printedLink(stderr: string): string {
  const links = [...stderr.matchAll(/open (http:\/\/127\.0\.0\.1:\d+\/approvals\/\S+)/g)];
  return links.at(-1)?.[1] as string;
}

let slack: FakeSlack;
beforeAll(async () => {
  slack = await FakeSlack.start({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET });
});
afterAll(async () => {
  await slack.close();
});

function slackEnv(channel: string): Record<string, string> {
  return {
    PLANGATE_SLACK_BOT_TOKEN: BOT_TOKEN,
    PLANGATE_SLACK_SIGNING_SECRET: SIGNING_SECRET,
    PLANGATE_SLACK_CHANNEL: channel,
    PLANGATE_SLACK_APPROVERS: 'U0ANA=ana',
    PLANGATE_SLACK_API_URL: slack.apiUrl,
  };
}

const messagesIn = (channel: string, n: number) =>
  slack.until(`${n} message(s) in ${channel}`, () => {
    const posted = slack.messages.filter((m) => m.channel === channel);
    return posted.length >= n ? posted : undefined;
  });

describe.concurrent('values are shown where they are approved', { timeout: 120_000 }, () => {
  it('the plan gate shows the context, its values and risk marks, on every channel', async () => {
    const cwd = await workDir();
    const file = join(cwd, 'plan.json');
    await writeFile(
      file,
      JSON.stringify({
        id: 'context-shown-e2e',
        objective: 'Make a directory the context names',
        approval: { allowAutoApprove: false },
        sizePolicy: { minSteps: 1 },
        context: { dir: '../../outside-0451', limits: { n: 3 }, note: 'safe\u202Eevil' },
        steps: [
          {
            id: 'mk',
            description: 'Make the directory',
            tool: 'shell',
            args: { command: 'mkdir -p "${context.dir}"' },
            contract: { kind: 'command', command: 'test -d "${context.dir}"' },
          },
        ],
      }),
    );
    const channel = 'C0CTX1';
    const run = runPlan(file, cwd, [], slackEnv(channel));
    try {
      await run.until('the plan gate’s view', () => run.stderr.includes('Secrets used (names only)'));
      const gate = run.stderr.slice(run.stderr.indexOf('Approve plan'));
      // The terminal: each key with its value, the outside path marked, the bidi override escaped.
      expect(gate).toContain('Context (what ${context.<key>} is):');
      expect(gate).toContain('- dir = ../../outside-0451');
      expect(gate).toMatch(/!! reaches outside the workspace: context\.dir: uses \.\.\/\.\.\/outside-0451/);
      expect(gate).toContain('- limits = {"n":3}');
      expect(gate).toContain('- note = safe⟨U+202E RLO⟩evil');
      expect(gate).toContain('   - context.note: U+202E RLO');
      expect(gate).not.toContain('\u202E');

      const [message] = await messagesIn(channel, 1);
      const text = slackText(message as SlackMessage);
      expect(text).toContain('../../outside-0451');
      expect(text).toMatch(/reaches outside the workspace: context\.dir/);
      expect(text).toContain('{"n":3}');

      const link = pageLink(message as SlackMessage);
      const json = await gateJson(link);
      expect(json.view?.context).toEqual([
        {
          key: 'dir',
          value: '../../outside-0451',
          outsideWorkspace: ['context.dir: uses ../../outside-0451, above the workspace'],
        },
        { key: 'limits', value: '{"n":3}' },
        { key: 'note', value: 'safe\u202Eevil' },
      ]);
      await run.until('the printed link', () => printedLink(run.stderr) !== undefined);
      const html = await pageHtml(printedLink(run.stderr));
      expect(html).toContain('<section class="pg-context"');
      expect(fromEntities(html)).toContain('../../outside-0451');
      expect(html).toContain('context.dir: uses ../../outside-0451, above the workspace');
      expect(html).not.toContain('\u202E');
      run.answer('reject not this');
      expect(await run.exited).toBe(1);
    } finally {
      run.terminate();
    }
  });

  it('an abort shows each rollback with its values filled in and marked, then its contract reads the step’s output', async () => {
    const root = await workDir();
    const cwd = join(root, 'ws');
    await mkdir(cwd);
    await mkdir(join(root, 'victim-0451'));
    const file = join(cwd, 'plan.json');
    await writeFile(
      file,
      JSON.stringify({
        id: 'abort-filled-e2e',
        objective: 'Name a directory, then fail, and undo on abort',
        sizePolicy: { minSteps: 1 },
        context: { label: 'undo-0451' },
        steps: [
          {
            id: 'mk',
            description: 'Name the directory to clean',
            tool: 'shell',
            args: { command: 'echo "dir=../victim-0451" >> "$PLANGATE_OUTPUT"' },
            outputs: ['dir'],
            contract: { kind: 'command', command: 'test -n "${steps.mk.dir}"' },
            rollback: {
              tool: 'shell',
              args: { command: 'rm -rf "${steps.mk.dir}" && echo "${context.label}" > undo.log' },
              contract: { kind: 'command', command: 'test ! -e "${steps.mk.dir}"' },
            },
          },
          {
            id: 'fail',
            description: 'Fail on purpose',
            dependsOn: ['mk'],
            onFail: { retries: 0, escalation: 'ask' },
            tool: 'shell',
            args: { command: 'echo nope' },
            contract: { kind: 'command', command: 'test -e never-0451' },
          },
        ],
      }),
    );
    const channel = 'C0ABORT1';
    const run = runPlan(file, cwd, ['--approve'], slackEnv(channel));
    try {
      await run.until('the escalation', () => run.stderr.includes('skip    skip this step'));
      const prompt = run.stderr.slice(run.stderr.lastIndexOf('failed:'));
      expect(prompt).toContain('1. undo mk (shell)');
      expect(prompt).toContain('rm -rf "../victim-0451" && echo "undo-0451" > undo.log');
      expect(prompt).toMatch(/!! destructive: .*rm -rf/);
      expect(prompt).toMatch(/!! reaches outside the workspace: .*\.\.\/victim-0451/);
      expect(prompt).toContain('${steps.mk.dir} = ../victim-0451');
      expect(prompt).toContain('${context.label} = undo-0451');

      const escalation = await slack.until('the escalation in Slack', () =>
        slack.messages.find((m) => m.channel === channel && slackText(m).includes('If you abort')),
      );
      const text = slackText(escalation);
      expect(text).toContain('rm -rf "../victim-0451"');
      expect(text).toMatch(/reaches outside the workspace/);
      const json = await gateJson(pageLink(escalation));
      expect(json.abortRollsBack?.[0]).toMatchObject({
        stepId: 'mk',
        filled: { form: 'command', text: 'rm -rf "../victim-0451" && echo "undo-0451" > undo.log' },
        values: [
          { raw: '${steps.mk.dir}', value: '../victim-0451' },
          { raw: '${context.label}', value: 'undo-0451' },
        ],
      });
      expect(json.abortRollsBack?.[0]?.risks?.outsideWorkspace?.join(' ')).toContain('../victim-0451');
      const page = fromEntities(await pageHtml(printedLink(run.stderr)));
      expect(page).toContain('rm -rf "../victim-0451"');
      expect(page).toContain('${steps.mk.dir} = ../victim-0451');

      run.answer('abort');
      expect(await run.exited).toBe(1);
      const events = await storedEvents(cwd, run.executionArn);
      // The rollback's contract read `${steps.mk.dir}`, the step's own output, and passed.
      expect(events.find((e) => e.event === 'ROLLBACK_COMPLETED' && e.task_id === 'mk')).toMatchObject({
        details: { evidence: { kind: 'command', passed: true } },
      });
      expect(events.some((e) => e.event === 'ROLLBACK_FAILED')).toBe(false);
    } finally {
      run.terminate();
    }
  });

  it('a step the policy denies at run time: POLICY_DECISION names the call and the reason', async () => {
    const cwd = await workDir();
    const policies = join(cwd, 'policies');
    await cp(join(REPO, 'policies/default'), policies, { recursive: true });
    await writeFile(
      join(policies, 'quarantine.cedar'),
      [
        '@id("no-quarantine-word")',
        '@reason("nothing may echo the quarantined word")',
        'forbid (principal, action == Action::"RunStep", resource)',
        'when { resource.hasTag("command") && resource.getTag("command") like "*quarantine-0451*" };',
        '',
      ].join('\n'),
    );
    const file = join(cwd, 'plan.json');
    await writeFile(
      file,
      JSON.stringify({
        id: 'policy-denied-e2e',
        objective: 'Echo a word the policy forbids',
        sizePolicy: { minSteps: 1 },
        secrets: [{ name: 'tok', source: 'env', ref: SECRET_ENV }],
        steps: [
          {
            id: 'say',
            description: 'Echo the word',
            tool: 'shell',
            onFail: { retries: 0, escalation: 'abort' },
            args: { command: 'echo quarantine-0451 > said.txt', env: { TOKEN: '${secrets.tok}' } },
            contract: { kind: 'command', command: 'test -f said.txt' },
          },
        ],
      }),
    );
    const run = runPlan(file, cwd, ['--approve', '--policy', policies], { [SECRET_ENV]: SECRET_VALUE });
    expect(await run.exited).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    const decision = events.find((e) => e.event === 'POLICY_DECISION' && e.task_id === 'say');
    expect(decision?.details).toMatchObject({
      action: 'RunStep',
      decision: 'deny',
      policies: ['no-quarantine-word'],
      call: { tool: 'shell', args: { command: 'echo quarantine-0451 > said.txt' } },
      reasons: [{ policy: 'no-quarantine-word', reason: 'nothing may echo the quarantined word' }],
    });
    expect(String(decision?.details.reason)).toMatch(/forbidden by no-quarantine-word/);
    expect(String(decision?.details.reason)).toContain('nothing may echo the quarantined word');
    expect(JSON.stringify(decision)).not.toContain(SECRET_VALUE);

    const shown = new CliRun(['events', run.executionArn], cwd);
    expect(await shown.exited).toBe(0);
    const line = shown.stdout.split('\n').find((l) => l.includes('POLICY_DECISION')) ?? '';
    expect(line).toContain('echo quarantine-0451 > said.txt');
    expect(line).toContain('nothing may echo the quarantined word');
    expect(shown.stdout).not.toContain(SECRET_VALUE);
    expect(await readFile(join(cwd, 'said.txt'), 'utf8').catch(() => 'not written')).toBe('not written');
  });
});

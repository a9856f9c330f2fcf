/**
 * What the approver sees is what runs, on every channel, through the real interfaces: a plan
 * whose step says "Create the directory" but runs `mkdir -p out && find out -delete`, and a
 * `requiresApproval` step `rm -rf ./tmpdir` that consumes another step's output and a secret.
 * `plangate run` prints the commands, contracts, rollback and postcondition at the plan gate and
 * at each step gate (its terminal, driven through stdin/stderr), posts them to Slack (a local
 * server speaking Slack's Web API) and serves them as the gate JSON of the approvals API;
 * `plangate serve` emails them (the local mail sink). The secret's value appears nowhere.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GateViewSchema } from '../../lib/launch/plans-api-schemas.ts';
import { FakeSlack, type SlackMessage } from '../fake-slack.ts';
import { runPlan, workDir } from './cli.ts';
import { startServe } from './serve-process.ts';

const SECRET_VALUE = 's3cr3t-e2e-value-0451';
const SECRET_ENV = 'PLANGATE_GATE_VIEW_E2E_TOKEN';
const BOT_TOKEN = `xoxb-9-9-${'v'.repeat(24)}`;
const SIGNING_SECRET = `view${'7'.repeat(28)}`;

/** Every command the harness will execute for this plan, as the plan writes it. */
const COMMANDS = {
  makeDir: 'mkdir -p out && find out -delete',
  makeDirContract: 'test ! -e out',
  rollback: 'mkdir -p out-rollback-0451',
  rollbackContract: 'test -d out-rollback-0451',
  nameDir: 'mkdir -p tmpdir && echo "dir=tmpdir" >> "$PLANGATE_OUTPUT"',
  cleanup: 'rm -rf ./tmpdir',
  cleanupContract: 'test ! -e ./tmpdir',
  postcondition: 'test ! -e ./tmpdir-post-0451 && test ! -e ./tmpdir',
} as const;

function plan(approval: Record<string, unknown>) {
  return {
    id: 'gate-view-e2e',
    objective: 'Make and clean scratch directories',
    approval: { allowAutoApprove: false, ...approval },
    secrets: [{ name: 'api_token', source: 'env', ref: SECRET_ENV }],
    steps: [
      {
        id: 'make-dir',
        description: 'Create the directory',
        tool: 'shell',
        args: { command: COMMANDS.makeDir },
        requiresApproval: true,
        contract: { kind: 'command', command: COMMANDS.makeDirContract },
        rollback: {
          tool: 'shell',
          args: { command: COMMANDS.rollback },
          contract: { kind: 'command', command: COMMANDS.rollbackContract },
        },
      },
      {
        id: 'name-dir',
        description: 'Make the scratch directory and name it',
        dependsOn: ['make-dir'],
        tool: 'shell',
        args: { command: COMMANDS.nameDir },
        outputs: ['dir'],
        contract: { kind: 'command', command: 'test -d tmpdir' },
      },
      {
        id: 'cleanup',
        description: 'Remove the scratch directory tmpdir recursively',
        dependsOn: ['name-dir'],
        tool: 'shell',
        args: {
          command: COMMANDS.cleanup,
          env: { WHERE: '${steps.name-dir.dir}', TOKEN: '${secrets.api_token}' },
        },
        requiresApproval: true,
        contract: { kind: 'command', command: COMMANDS.cleanupContract },
      },
    ],
    postconditions: [
      {
        id: 'tmpdir-gone',
        description: 'The scratch directory is gone',
        contract: { kind: 'command', command: COMMANDS.postcondition },
      },
    ],
  };
}

/** Slack's mrkdwn and HTML entities back to text. */
const fromEntities = (text: string) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

/** Every text of a Slack message's blocks (sections, fields), unescaped. */
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

/** The approval page link of a Slack message (its "Open the page" button). */
function pageLink(message: SlackMessage): string {
  const actions = message.blocks.find((b) => b.type === 'actions') as { elements: { url?: string }[] };
  return actions.elements.find((e) => e.url)?.url as string;
}

async function gateJson(link: string) {
  const response = await fetch(link, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  const body = await response.text();
  expect(body).not.toContain(SECRET_VALUE);
  return GateViewSchema.parse(JSON.parse(body));
}

let slack: FakeSlack;
beforeAll(async () => {
  slack = await FakeSlack.start({ botToken: BOT_TOKEN, signingSecret: SIGNING_SECRET });
});
afterAll(async () => {
  await slack.close();
});

describe('the gate shows what will run', () => {
  it('in the terminal of plangate run, in Slack and in the gate JSON: plan gate and each step gate', async () => {
    const cwd = await workDir();
    const file = join(cwd, 'plan.json');
    await writeFile(file, JSON.stringify(plan({})));
    const channel = 'C0VIEW1';
    const run = runPlan(file, cwd, ['--solo'], {
      [SECRET_ENV]: SECRET_VALUE,
      PLANGATE_SLACK_BOT_TOKEN: BOT_TOKEN,
      PLANGATE_SLACK_SIGNING_SECRET: SIGNING_SECRET,
      PLANGATE_SLACK_CHANNEL: channel,
      PLANGATE_SLACK_APPROVERS: 'U0ANA=ana',
      PLANGATE_SLACK_API_URL: slack.apiUrl,
    });
    const messages = (n: number) =>
      slack.until(`${n} message(s) in ${channel}`, () => {
        const posted = slack.messages.filter((m) => m.channel === channel);
        return posted.length >= n ? posted : undefined;
      });
    try {
      // The plan gate: every command, contract, rollback and postcondition, in the terminal.
      await run.until('the plan gate', () => run.stderr.includes('Approve plan "gate-view-e2e" v1?'));
      await run.until('the plan gate’s view', () => run.stderr.includes('Secrets used (names only)'));
      const planGate = run.stderr.slice(run.stderr.indexOf('Approve plan'));
      for (const command of Object.values(COMMANDS)) expect(planGate).toContain(command);
      expect(planGate).toContain('1. make-dir: Create the directory');
      expect(planGate).toContain('${steps.name-dir.dir}: filled at run time from step name-dir');
      expect(planGate).toContain('Secrets used (names only): api_token');
      expect(planGate).toMatch(/!! destructive: .+/);

      // … in Slack …
      const [planMessage] = await messages(1);
      const planSlack = slackText(planMessage as SlackMessage);
      for (const command of Object.values(COMMANDS)) expect(planSlack).toContain(command);
      // … and in the gate JSON the page's link answers.
      const planJson = await gateJson(pageLink(planMessage as SlackMessage));
      expect(planJson.view?.steps.map((s) => s.call?.text)).toEqual([
        COMMANDS.makeDir,
        COMMANDS.nameDir,
        COMMANDS.cleanup,
      ]);
      expect(planJson.view?.steps[0]?.contract?.text).toBe(COMMANDS.makeDirContract);
      expect(planJson.view?.steps[0]?.rollback?.call.text).toBe(COMMANDS.rollback);
      expect(planJson.view?.steps[0]?.rollback?.contract?.text).toBe(COMMANDS.rollbackContract);
      expect(planJson.view?.postconditions[0]?.contract?.text).toBe(COMMANDS.postcondition);
      expect(planJson.view?.secrets).toEqual(['api_token']);
      expect(planJson.view?.steps[2]?.risks.ownGate).toBe(true);
      run.answer('approve');

      // The step gate of "Create the directory" shows what it really runs.
      await run.until('the make-dir step gate', () =>
        run.stderr.includes('Step "Create the directory" needs approval'),
      );
      await run.until('its view', () => /needs approval[\s\S]*Already done/.test(run.stderr));
      const makeDirGate = run.stderr.slice(run.stderr.indexOf('Step "Create the directory" needs approval'));
      expect(makeDirGate).toContain(COMMANDS.makeDir);
      expect(makeDirGate).toContain(COMMANDS.rollback);
      const makeDirSlack = slackText((await messages(2))[1] as SlackMessage);
      expect(makeDirSlack).toContain(COMMANDS.makeDir);
      run.answer('approve');

      // The step gate of the rm -rf: the command, what already ran, the value it will consume.
      const cleanupTitle = 'Step "Remove the scratch directory tmpdir recursively" needs approval';
      await run.until('the cleanup step gate', () => run.stderr.includes(cleanupTitle));
      await run.until('its view', () =>
        run.stderr.slice(run.stderr.indexOf(cleanupTitle)).includes('Already done'),
      );
      await run.until('its whole view', () =>
        run.stderr.slice(run.stderr.indexOf(cleanupTitle)).includes('Answer here or open'),
      );
      const cleanupGate = run.stderr.slice(run.stderr.indexOf(cleanupTitle));
      expect(cleanupGate).toContain(COMMANDS.cleanup);
      expect(cleanupGate).toContain(COMMANDS.cleanupContract);
      expect(cleanupGate).toContain('- ${steps.name-dir.dir} = "tmpdir"');
      expect(cleanupGate).toContain('- make-dir: passed command contract');
      expect(cleanupGate).toContain('- name-dir: passed command contract');
      const cleanupMessage = (await messages(3))[2] as SlackMessage;
      expect(slackText(cleanupMessage)).toContain(COMMANDS.cleanup);
      const cleanupJson = await gateJson(pageLink(cleanupMessage));
      expect(cleanupJson.stepGate?.step.call?.text).toBe(COMMANDS.cleanup);
      expect(cleanupJson.stepGate?.completed?.map((c) => c.id)).toEqual(['make-dir', 'name-dir']);
      expect(cleanupJson.stepGate?.consumes).toEqual([
        { raw: '${steps.name-dir.dir}', step: 'name-dir', output: 'dir', value: '"tmpdir"' },
      ]);
      run.answer('approve');

      expect(await run.exited).toBe(0);
      expect(run.stderr + run.stdout).not.toContain(SECRET_VALUE);
      for (const message of slack.messages.filter((m) => m.channel === channel))
        expect(JSON.stringify(message.history)).not.toContain(SECRET_VALUE);
    } finally {
      run.terminate();
    }
  }, 120_000);

  it('in the approval emails of plangate serve (text and HTML parts), plan gate and step gate', async () => {
    const store = await mkdtemp(join(tmpdir(), 'plangate-gate-view-serve-'));
    const previous = process.env[SECRET_ENV];
    process.env[SECRET_ENV] = SECRET_VALUE;
    const serve = startServe(['--identity', 'header', '--store', store], await workDir());
    if (previous === undefined) delete process.env[SECRET_ENV];
    else process.env[SECRET_ENV] = previous;
    try {
      const url = await serve.line((l) => /^http:\/\/127\.0\.0\.1:\d+$/.test(l));
      const submitted = await fetch(`${url}/plans`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-plangate-user': 'carol' },
        body: JSON.stringify(plan({ approvers: ['ana@example.test'] })),
      });
      expect(submitted.status, await submitted.clone().text()).toBe(201);

      /** The gate's link, and the text and HTML parts of its email to ana. */
      const gate = async (prefix: string) => {
        const line = await serve.line((l) => l.startsWith(prefix));
        const index = serve.lines.indexOf(line);
        const emailLine = await serve.line(
          (l) => serve.lines.indexOf(l) > index && l.startsWith('  email: '),
        );
        const eml = await readFile(emailLine.slice('  email: '.length), 'utf8');
        const parts = [
          ...eml.matchAll(
            /Content-Type: (text\/\w+); charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n([A-Za-z0-9+/=\r\n]+)/g,
          ),
        ];
        const part = (type: string) =>
          Buffer.from((parts.find((p) => p[1] === type)?.[2] ?? '').replace(/\r\n/g, ''), 'base64').toString(
            'utf8',
          );
        return { link: line.slice(line.indexOf('http')), text: part('text/plain'), html: part('text/html') };
      };
      const approve = async (link: string) => {
        const json = await gateJson(link);
        const answered = await fetch(link, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-plangate-user': 'ana@example.test' },
          body: JSON.stringify({ digest: json.planDigest, decision: 'APPROVE' }),
        });
        expect(answered.status, await answered.clone().text()).toBe(200);
      };

      const planGate = await gate('gate plan of gate-view-e2e v1 waits: ');
      for (const command of Object.values(COMMANDS)) {
        expect(planGate.text).toContain(command);
        expect(fromEntities(planGate.html)).toContain(command);
      }
      expect(planGate.html).toContain('<pre><code>mkdir -p out &amp;&amp; find out -delete</code></pre>');
      expect(planGate.text).toContain('Submitted by: carol');
      expect(planGate.text).toContain('May approve: ana@example.test (never carol)');
      expect(planGate.text).toMatch(/Answer by: \d{4}-\d\d-\d\d \d\d:\d\d UTC, in 24 h/);
      await approve(planGate.link);

      const makeDirGate = await gate('gate step make-dir of gate-view-e2e v1 waits: ');
      expect(makeDirGate.text).toContain(COMMANDS.makeDir);
      expect(fromEntities(makeDirGate.html)).toContain(COMMANDS.makeDir);
      await approve(makeDirGate.link);

      const cleanupGate = await gate('gate step cleanup of gate-view-e2e v1 waits: ');
      expect(cleanupGate.text).toContain(COMMANDS.cleanup);
      expect(cleanupGate.text).toContain('- ${steps.name-dir.dir} = "tmpdir"');
      expect(cleanupGate.text).toContain('- make-dir: passed command contract');
      expect(fromEntities(cleanupGate.html)).toContain(COMMANDS.cleanup);
      for (const email of [planGate, makeDirGate, cleanupGate])
        expect(email.text + email.html).not.toContain(SECRET_VALUE);
      await approve(cleanupGate.link);
    } finally {
      expect(await serve.stop()).toBe(0);
    }
  }, 120_000);
});

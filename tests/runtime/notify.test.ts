/**
 * Notifications for gates: SES through the real SESv2Client against a tiny local SES endpoint,
 * Slack through @slack/web-api's WebClient against a local server that speaks Slack's Web API.
 * No message may carry a task token, a secret or live markup, whatever the plan's authors wrote.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeHandler } from '../../lambdas/notifier.ts';
import { LOCAL_CREDENTIALS } from '../../lib/aws-local/clients.ts';
import { LinkSigner } from '../../lib/runtime/gate/links.ts';
import { EmailNotifier } from '../../lib/runtime/notify/email.ts';
import { approvalMessage } from '../../lib/runtime/notify/message.ts';
import { SlackClient, SlackNotifier } from '../../lib/runtime/notify/slack.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { FakeSlack } from '../fake-slack.ts';

const TOKEN = `AQ${'Tk9'.repeat(60)}`;
const SIGNER = new LinkSigner('n'.repeat(32));
const APPROVAL_ID = SIGNER.shared('aB3-dE_f', 1900000000, 'sha256:abc123');
const BASE = 'https://approvals.example.com/';
const BOT_TOKEN = `xoxb-42-42-${'b'.repeat(24)}`;

interface Recorded {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let url: string;
const requests: Recorded[] = [];
let slack: FakeSlack;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      if (req.url === '/v2/email/outbound-emails') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ MessageId: `m-${requests.length}` }));
      } else {
        res.writeHead(404);
        res.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  slack = await FakeSlack.start({ botToken: BOT_TOKEN, signingSecret: 'unused-here' });
});
afterAll(async () => {
  await slack.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  requests.length = 0;
  slack.messages.length = 0;
});

const clients = () => ({
  ses: new SESv2Client({ region: 'us-east-1', endpoint: url, credentials: LOCAL_CREDENTIALS }),
});

const notice = (over: Partial<ApprovalNotice> = {}): ApprovalNotice => ({
  approvalId: APPROVAL_ID,
  kind: 'plan',
  executionId: 'arn:aws:states:us-east-1:123456789012:execution:demo:run-1',
  plan: { id: 'demo', version: 2, digest: 'sha256:abc123' },
  summary: { objective: 'Ship the report', steps: 4 },
  round: 1,
  expiresAt: '2030-01-01T00:00:00.000Z',
  policy: {
    approvers: ['ana@example.com', 'ben', 'author@example.com'],
    forbiddenApprovers: ['author@example.com'],
    quorum: 1,
  },
  ...over,
});

const handler = (slackOnly = false, botToken = BOT_TOKEN) => {
  const { ses } = clients();
  return makeHandler({
    approvalsBaseUrl: BASE,
    linkSigner: SIGNER,
    ...(slackOnly
      ? {}
      : { email: new EmailNotifier({ ses, from: 'plangate@example.com', alwaysTo: ['ops@example.com'] }) }),
    slack: new SlackNotifier({
      client: new SlackClient({ botToken: async () => botToken, slackApiUrl: slack.apiUrl }),
      channel: 'C0APPROVALS',
    }),
  });
};

describe('notifier Lambda', () => {
  it('emails the approvers (never the forbidden ones) and posts Slack decision buttons carrying the link id', async () => {
    const result = await handler()(notice());
    expect(result).toEqual({ emailed: 2, slack: true });
    const link = `https://approvals.example.com/approvals/${encodeURIComponent(APPROVAL_ID)}`;

    const emails = requests
      .filter((r) => r.path === '/v2/email/outbound-emails')
      .map(
        (email) =>
          JSON.parse(email.body) as {
            FromEmailAddress: string;
            Destination: { ToAddresses: string[] };
            Content: {
              Simple: { Subject: { Data: string }; Body: { Text: { Data: string }; Html: { Data: string } } };
            };
          },
      );
    // One email per recipient, each with that recipient's own link (never the shared one).
    expect(emails.map((e) => e.Destination.ToAddresses).sort()).toEqual([
      ['ana@example.com'],
      ['ops@example.com'],
    ]);
    for (const sent of emails) {
      const recipient = sent.Destination.ToAddresses[0] as string;
      const own = `https://approvals.example.com/approvals/${encodeURIComponent(SIGNER.forRecipient(APPROVAL_ID, 'sha256:abc123', recipient))}`;
      expect(sent.FromEmailAddress).toBe('plangate@example.com');
      expect(sent.Content.Simple.Body.Text.Data).toContain(own);
      expect(sent.Content.Simple.Body.Text.Data).toContain(`it answers as ${recipient}`);
      expect(sent.Content.Simple.Body.Html.Data).toContain(`href="${own}"`);
      expect(sent.Content.Simple.Body.Text.Data).not.toContain(`${link}\n`);
      expect(sent.Content.Simple.Body.Text.Data).toContain('sha256:abc123');
    }

    const [posted] = slack.messages;
    expect(posted?.channel).toBe('C0APPROVALS');
    const buttons = slack.buttons(posted as NonNullable<typeof posted>);
    expect(buttons.map((b) => [b.text.text, b.value ?? b.url])).toEqual([
      // Each button answers the content its message showed: the link id and that digest.
      ['Approve', JSON.stringify({ linkId: APPROVAL_ID, digest: 'sha256:abc123' })],
      ['Reject', JSON.stringify({ linkId: APPROVAL_ID, digest: 'sha256:abc123' })],
      ['Ask a question', JSON.stringify({ linkId: APPROVAL_ID, digest: 'sha256:abc123' })],
      ['Open the page', link],
    ]);
  });

  it('tells a person what to do for a human step, and which values to report', async () => {
    await handler()(
      notice({
        kind: 'human',
        stepId: 'key',
        description: 'Create the deploy key',
        human: { instructions: 'Open the console; create key "deploy"', outputs: ['keyId'] },
      }),
    );
    const email = JSON.parse((requests.find((r) => r.path.startsWith('/v2/')) as Recorded).body);
    expect(email.Content.Simple.Body.Text.Data).toContain(
      'What to do: Open the console; create key "deploy"',
    );
    expect(email.Content.Simple.Body.Text.Data).toContain('Report: keyId');
  });

  it('fails (so the event is retried) when every channel fails, and never names the bot token', async () => {
    const wrongToken = `xoxb-0-0-${'w'.repeat(24)}`;
    const error = await handler(true, wrongToken)(notice()).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message)).toContain('invalid_auth');
    expect(JSON.stringify(error)).not.toContain(wrongToken);
    expect(slack.messages).toEqual([]);
  });

  it('rejects a malformed notice, located, sending nothing', async () => {
    await expect(handler()({ ...notice(), approvalId: '' })).rejects.toMatchObject({
      name: 'Plangate.InvalidInput',
      message: expect.stringContaining('approvalId'),
    });
    expect(requests).toEqual([]);
  });

  it('sends no token, secret or live markup over the wire, whatever the step says', async () => {
    const hostile = `<script>alert(1)</script> *bold* <https://evil.example|click> & password=hunter22 ${TOKEN}`;
    await handler()(notice({ kind: 'escalation', stepId: 'x', description: hostile, question: hostile }));
    const wire = [...requests.map((r) => r.body), JSON.stringify(slack.messages)].join('\n');
    expect(wire).not.toContain(TOKEN.slice(0, 40));
    expect(wire).not.toContain('hunter22');
    // Markup is live only in the HTML part and in Slack mrkdwn; plain text may show it as text.
    const email = JSON.parse((requests.find((r) => r.path.startsWith('/v2/')) as Recorded).body);
    for (const live of [email.Content.Simple.Body.Html.Data as string, JSON.stringify(slack.messages)]) {
      expect(live).not.toContain('<script>');
      expect(live).not.toContain('<https://evil.example|click>');
    }
    // The bot token authenticates the request; it is never in a message.
    expect(wire).not.toContain(BOT_TOKEN);
  });
});

describe('approval messages', () => {
  const text = fc.string({ unit: 'binary', maxLength: 80 });
  const hostile = fc
    .tuple(
      text,
      fc.constantFrom(
        '',
        TOKEN,
        'password=hunter22',
        'Bearer abcdefghijkl',
        '<b>',
        '<!here>',
        '&amp;',
        '"\'',
      ),
      text,
    )
    .map(([a, b, c]) => `${a}${b}${c}`);

  it('never carries a task token or credential, and escapes every plan-authored string for HTML and Slack', () => {
    fc.assert(
      fc.property(
        fc.record({
          description: hostile,
          objective: hostile,
          question: hostile,
          instructions: hostile,
          failure: hostile,
        }),
        fc.constantFrom<ApprovalNotice['kind']>('plan', 'step', 'escalation', 'human'),
        (s, kind) => {
          const message = approvalMessage(
            notice({
              kind,
              stepId: 'step-1',
              description: s.description,
              summary: { objective: s.objective, steps: 3 },
              question: s.question,
              human: { instructions: s.instructions, outputs: ['out'] },
              failure: { failureClass: 'unknown', error: 'E', message: s.failure, phase: 'run' },
            }),
            BASE,
          );
          const all = JSON.stringify(message);
          expect(all).not.toContain(TOKEN.slice(0, 40));
          expect(all).not.toContain('hunter22');
          expect(all).not.toContain('abcdefghijkl');
          // HTML: the only tags are the template's own.
          const tags = [...message.html.matchAll(/<\/?([a-z!][a-z0-9]*)/gi)].map((m) =>
            (m[1] as string).toLowerCase(),
          );
          const template = new Set([
            ...[
              '!doctype',
              'html',
              'head',
              'meta',
              'style',
              'body',
              'h2',
              'table',
              'tr',
              'th',
              'td',
              'p',
              'a',
            ],
            // The gate view's: who may approve and the deadline.
            ...['dl', 'dt', 'dd', 'time'],
            // Its warnings (hidden characters in the plan's text) and the symbols shown for them.
            ...['section', 'ul', 'li', 'span'],
          ]);
          expect(tags.filter((tag) => !template.has(tag))).toEqual([]);
          // Slack: no control characters from the plan survive in mrkdwn (no links, mentions or entities).
          const mrkdwn = (message.slackBlocks[1] as { text: { text: string } }).text.text;
          expect(mrkdwn).not.toMatch(/[<>]/);
          expect(mrkdwn.replace(/&(amp|lt|gt);/g, '')).not.toContain('&');
          // The link carries the approval id and nothing else.
          expect(message.link).toBe(
            `https://approvals.example.com/approvals/${encodeURIComponent(APPROVAL_ID)}`,
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("shows the model's recovery suggestion beside the choices in email (text, HTML) and Slack, its text escaped and redacted", () => {
    fc.assert(
      fc.property(hostile, hostile, (reasons, command) => {
        fc.pre(reasons.trim().length > 0);
        const message = approvalMessage(
          notice({
            kind: 'escalation',
            stepId: 'deploy',
            description: 'Deploy',
            failure: { failureClass: 'unknown', error: 'Plangate.Unknown', message: 'exit 3', phase: 'run' },
            recovery: {
              suggestion: { strategy: 'retry_with_args', reasons, args: { command } },
              provider: 'openai',
              model: 'scripted',
              inputTokens: 10,
              outputTokens: 5,
              revision: { version: 3, digest: 'sha256:def456' },
            },
          }),
          BASE,
        );
        const headline =
          'The model (openai scripted) suggests: retry the step with changed args. The decision is yours.';
        expect(message.text).toContain(headline);
        expect(message.text).toContain(
          'accepting it ends this run and sends version 3 of the plan (sha256:def456)',
        );
        expect(message.html).toContain('<section class="pg-suggestion"');
        expect(message.html).toContain(headline);
        const slack = JSON.stringify(message.slackBlocks);
        expect(slack).toContain(':bulb:');
        expect(slack).toContain('accept it on the page');
        // The model's words are hostile input like the plan's: no credential, no live markup.
        const all = JSON.stringify(message);
        expect(all).not.toContain(TOKEN.slice(0, 40));
        expect(all).not.toContain('hunter22');
        expect(message.html).not.toMatch(/<b>|<!here>/);
        const suggestionBlock = message.slackBlocks.find((b) => JSON.stringify(b).includes(':bulb:')) as {
          text: { text: string };
        };
        expect(suggestionBlock.text.text).not.toMatch(/[<>]/);
      }),
      { numRuns: 200 },
    );
  });
});

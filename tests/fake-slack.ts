/**
 * A local stand-in for Slack on 127.0.0.1, for tests: it speaks the Web API methods plangate
 * calls (chat.postMessage, chat.update, chat.postEphemeral, views.open; bearer token checked, form
 * or JSON bodies as @slack/web-api sends them) and keeps each message's current blocks; and, as
 * Slack does when someone clicks a button or submits a modal, it sends a signed `block_actions` or
 * `view_submission` interaction (v0 signature over the timestamp and the form-encoded
 * `payload=`) to the app's request URL.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SlackMessage {
  readonly channel: string;
  readonly ts: string;
  text: string;
  blocks: Record<string, unknown>[];
  /** Every version of the blocks, the first as posted. */
  readonly history: Record<string, unknown>[][];
}

export interface Ephemeral {
  readonly channel: string;
  readonly user: string;
  readonly text: string;
}

interface Button {
  readonly action_id: string;
  readonly value?: string;
  readonly url?: string;
  readonly text: { readonly text: string };
}

/** A modal opened with views.open, with the trigger of the click that opened it. */
export interface OpenedView {
  readonly triggerId: string;
  readonly view: Record<string, unknown>;
}

export class FakeSlack {
  readonly messages: SlackMessage[] = [];
  readonly ephemerals: Ephemeral[] = [];
  readonly views: OpenedView[] = [];
  /** Triggers of clicks sent, each good for one views.open (Slack's last three seconds). */
  private readonly triggers = new Set<string>();
  /** Web API calls in order, by method name. */
  readonly calls: string[] = [];
  private seq = 0;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    /** The Web API base URL for `slackApiUrl`, e.g. `http://127.0.0.1:4321/api/`. */
    readonly apiUrl: string,
    private readonly botToken: string,
    private readonly signingSecret: string,
  ) {}

  static async start(opts: { botToken: string; signingSecret: string }): Promise<FakeSlack> {
    let fake: FakeSlack | undefined;
    const server = createServer((req, res) => {
      void readBody(req).then((body) => {
        const answer = fake?.handle(req, body) ?? { ok: false, error: 'not_ready' };
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    fake = new FakeSlack(server, `http://127.0.0.1:${port}/api/`, opts.botToken, opts.signingSecret);
    return fake;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  /** Resolves when `check` holds (rechecked after every call); rejects after `timeoutMs`. */
  async until<T>(what: string, check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = check();
      if (found !== undefined && found !== false) return found;
      if (Date.now() > deadline)
        throw new Error(
          `Slack: ${what} not seen; calls: ${this.calls.join(', ')}; messages: ${this.messages.map((m) => m.text).join(' | ')}`,
        );
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
  }

  /** The decision and page buttons of a message, as posted or last updated. */
  /** The gate link id a message's buttons answer (their value is `{linkId, digest}`); undefined without buttons. */
  linkIdOf(message: SlackMessage): string | undefined {
    const value = this.buttons(message)[0]?.value;
    if (value === undefined) return undefined;
    return (JSON.parse(value) as { linkId?: string }).linkId;
  }

  buttons(message: SlackMessage): Button[] {
    return message.blocks.flatMap((b) =>
      b.type === 'actions' ? ((b as { elements: Button[] }).elements ?? []) : [],
    );
  }

  /**
   * Clicks the button `actionId` of `message` as Slack user `user`: sends the signed interaction
   * to `requestUrl` and returns the HTTP status plangate answered. `signWith` and `timestamp`
   * forge or replay a request.
   */
  async click(
    requestUrl: string,
    message: SlackMessage,
    actionId: string,
    user: string,
    opts: { signWith?: string; timestamp?: number } = {},
  ): Promise<number> {
    const button = this.buttons(message).find((b) => b.action_id === actionId);
    if (!button)
      throw new Error(
        `no button ${actionId} on the message (${this.buttons(message)
          .map((b) => b.action_id)
          .join(', ')})`,
      );
    const triggerId = `${Date.now()}.${++this.seq}.trigger`;
    this.triggers.add(triggerId);
    const payload = {
      type: 'block_actions',
      user: { id: user, username: user.toLowerCase(), team_id: 'T0PLANGATE' },
      api_app_id: 'A0PLANGATE',
      token: 'deprecated-verification-token',
      container: {
        type: 'message',
        message_ts: message.ts,
        channel_id: message.channel,
        is_ephemeral: false,
      },
      trigger_id: triggerId,
      team: { id: 'T0PLANGATE', domain: 'plangate' },
      channel: { id: message.channel, name: 'approvals' },
      message: { type: 'message', ts: message.ts, text: message.text, blocks: message.blocks },
      response_url: 'https://hooks.slack.invalid/actions/T0/1/x',
      actions: [
        {
          type: 'button',
          action_id: actionId,
          block_id: 'plangate.actions',
          text: { type: 'plain_text', text: button.text.text },
          ...(button.value !== undefined ? { value: button.value } : {}),
          action_ts: `${Date.now() / 1000}`,
        },
      ],
    };
    return (await this.send(requestUrl, payload, opts)).status;
  }

  /**
   * Submits a modal as `user` with `values` typed into its inputs (block id → action id → text):
   * the signed `view_submission` Slack sends; returns the status and what plangate answered.
   */
  async submit(
    requestUrl: string,
    opened: OpenedView,
    user: string,
    values: Record<string, Record<string, string>>,
    opts: { signWith?: string } = {},
  ): Promise<{ status: number; body: string }> {
    const state = Object.fromEntries(
      Object.entries(values).map(([block, inputs]) => [
        block,
        Object.fromEntries(
          Object.entries(inputs).map(([action, value]) => [action, { type: 'plain_text_input', value }]),
        ),
      ]),
    );
    return this.send(
      requestUrl,
      {
        type: 'view_submission',
        user: { id: user, username: user.toLowerCase(), team_id: 'T0PLANGATE' },
        api_app_id: 'A0PLANGATE',
        team: { id: 'T0PLANGATE', domain: 'plangate' },
        view: { id: `V0${this.seq}`, ...opened.view, state: { values: state } },
      },
      opts,
    );
  }

  private async send(
    requestUrl: string,
    payload: unknown,
    opts: { signWith?: string; timestamp?: number } = {},
  ): Promise<{ status: number; body: string }> {
    const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
    const timestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
    const signature = `v0=${createHmac('sha256', opts.signWith ?? this.signingSecret)
      .update(`v0:${timestamp}:${body}`)
      .digest('hex')}`;
    const response = await fetch(requestUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-signature': signature,
        'x-slack-request-timestamp': String(timestamp),
      },
      body,
    });
    return { status: response.status, body: await response.text() };
  }

  private handle(req: IncomingMessage, body: string): Record<string, unknown> {
    const method = /^\/api\/([a-zA-Z.]+)$/.exec(req.url ?? '')?.[1] ?? '';
    this.calls.push(method);
    this.wake();
    if (req.headers.authorization !== `Bearer ${this.botToken}`) return { ok: false, error: 'invalid_auth' };
    const args = parseArgs(req, body);
    const blocks = typeof args.blocks === 'string' ? JSON.parse(args.blocks) : (args.blocks ?? []);
    switch (method) {
      case 'chat.postMessage': {
        const ts = `1700000000.${String(++this.seq).padStart(6, '0')}`;
        const message: SlackMessage = {
          channel: String(args.channel),
          ts,
          text: String(args.text ?? ''),
          blocks,
          history: [blocks],
        };
        this.messages.push(message);
        return { ok: true, channel: message.channel, ts, message: { ts, text: message.text } };
      }
      case 'chat.update': {
        const message = this.messages.find((m) => m.ts === args.ts && m.channel === args.channel);
        if (!message) return { ok: false, error: 'message_not_found' };
        message.blocks = blocks;
        message.text = String(args.text ?? message.text);
        message.history.push(blocks);
        return { ok: true, channel: message.channel, ts: message.ts };
      }
      case 'views.open': {
        const triggerId = String(args.trigger_id ?? '');
        if (!this.triggers.delete(triggerId)) return { ok: false, error: 'invalid_trigger_id' };
        const view = (typeof args.view === 'string' ? JSON.parse(args.view) : args.view) as Record<
          string,
          unknown
        >;
        this.views.push({ triggerId, view });
        return { ok: true, view: { id: `V0${++this.seq}`, ...view } };
      }
      case 'chat.postEphemeral':
        this.ephemerals.push({
          channel: String(args.channel),
          user: String(args.user),
          text: String(args.text),
        });
        return { ok: true, message_ts: `${Date.now() / 1000}` };
      default:
        return { ok: false, error: 'unknown_method' };
    }
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) setImmediate(w);
  }
}

function parseArgs(req: IncomingMessage, body: string): Record<string, unknown> {
  if ((req.headers['content-type'] ?? '').includes('application/json'))
    return JSON.parse(body) as Record<string, unknown>;
  return Object.fromEntries(new URLSearchParams(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/** The text of a message's status line (the context block plangate adds when it updates it). */
export function statusOf(message: SlackMessage): string | undefined {
  const status = message.blocks.find((b) => b.block_id === 'plangate.status') as
    | { elements: { text: string }[] }
    | undefined;
  return status?.elements[0]?.text;
}

/**
 * Answering a gate from Slack: signed interaction payloads (as Slack sends them) to the approvals
 * API, verified with Slack's own request verification; the decision goes through Approvals over
 * dynalite and a recording Step Functions endpoint; @slack/web-api's WebClient updates the message
 * in place and tells late or unknown clickers, against a local server speaking Slack's Web API.
 */
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as makeApprovalsApi } from '../../lambdas/approvals-api.ts';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/local/stack.ts';
import type { HttpEvent, HttpResult } from '../../lib/runtime/api/http.ts';
import type { GateDeps } from '../../lib/runtime/gate/gate.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';
import { type RecordingSfn, startRecordingSfn } from './recording-sfn.ts';

const SIGNING_SECRET = 'slack-signing-secret-0123456789abcdef';
const BOT_TOKEN = 'xoxb-local-bot-token';
const TOKEN = `AQ${'y'.repeat(200)}`;
const plan = { id: 'demo', version: 1, digest: 'sha256:cafe' };

let dir: string;
let plane: LocalDataPlane;
let recorder: RecordingSfn;
let slackServer: Server;
const slackCalls: { method: string; form: URLSearchParams; auth?: string }[] = [];
const notices: ApprovalNotice[] = [];
let gateDeps: GateDeps;
let api: (event: HttpEvent) => Promise<HttpResult>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-slack-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  recorder = await startRecordingSfn();
  slackServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      slackCalls.push({
        method: (req.url ?? '').replace('/api/', ''),
        form,
        ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ ok: true, channel: form.get('channel'), ts: form.get('ts') ?? '1700000000.000200' }),
      );
    });
  });
  await new Promise<void>((r) => slackServer.listen(0, '127.0.0.1', r));
  const slackApiUrl = `http://127.0.0.1:${(slackServer.address() as AddressInfo).port}/api/`;
  gateDeps = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    tools: builtinRegistry(),
    cwd: dir,
    sfn: recorder.client,
    signingKey: 's'.repeat(40),
    notify: async (n) => {
      notices.push(n);
    },
  };
  api = makeApprovalsApi({
    ...gateDeps,
    identity: { mode: 'jwt' },
    slack: {
      signingSecret: SIGNING_SECRET,
      client: new WebClient(BOT_TOKEN, { slackApiUrl }),
      approvers: { U0ANA: 'ana@example.com', U0BEN: 'ben@example.com', U0EVE: 'eve@example.com' },
    },
  });
});

afterAll(async () => {
  await recorder.close();
  await new Promise((r) => slackServer.close(r));
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

async function openGate(executionId: string): Promise<ApprovalNotice> {
  await makeGate(gateDeps)({
    kind: 'plan',
    taskToken: `${TOKEN}-${executionId}`,
    plan,
    executionId,
    approval: { approvers: ['ana@example.com', 'ben@example.com'], forbiddenApprovers: [], quorum: 1 },
    round: 1,
    timeoutSeconds: 3600,
  });
  return notices.at(-1) as ApprovalNotice;
}

/** An interaction as Slack posts it: form-encoded `payload`, signed v0 over timestamp and body. */
function click(
  notice: ApprovalNotice,
  user: string,
  action: 'plangate-approve' | 'plangate-reject',
  sign: { secret?: string; secondsAgo?: number } = {},
): HttpEvent {
  const payload = {
    type: 'block_actions',
    user: { id: user },
    channel: { id: 'C0APPROVALS' },
    container: { type: 'message', message_ts: '1700000000.000100', channel_id: 'C0APPROVALS' },
    actions: [{ action_id: action, value: notice.approvalId, type: 'button' }],
  };
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const timestamp = Math.floor(Date.now() / 1000) - (sign.secondsAgo ?? 0);
  const signature = `v0=${createHmac('sha256', sign.secret ?? SIGNING_SECRET)
    .update(`v0:${timestamp}:${body}`)
    .digest('hex')}`;
  return {
    version: '2.0',
    routeKey: 'POST /slack/interactions',
    rawPath: '/slack/interactions',
    rawQueryString: '',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-signature': signature,
      'x-slack-request-timestamp': String(timestamp),
    },
    body,
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: 'POST',
        path: '/slack/interactions',
        protocol: 'HTTP/1.1',
        sourceIp: '198.51.100.7',
        userAgent: 'Slackbot',
      },
      requestId: 'r',
      routeKey: 'POST /slack/interactions',
      stage: '$default',
      time: '',
      timeEpoch: 0,
    },
  } as HttpEvent;
}

const eventsOf = async (executionId: string) =>
  (await readEvents(plane.clients.doc, plane.tableNames.events, executionId)).map((e) => [
    e.event,
    e.details.approver ?? e.details.by,
  ]);

it('approves from Slack once, updates the message in place, and tells a second clicker who decided first', async () => {
  const n = await openGate('exec-slack');
  const first = await api(click(n, 'U0ANA', 'plangate-approve'));
  expect(first.statusCode).toBe(200);
  expect(recorder.successes.filter((s) => s.taskToken === `${TOKEN}-exec-slack`)).toHaveLength(1);
  const update = slackCalls.find((c) => c.method === 'chat.update');
  expect(update?.form.get('ts')).toBe('1700000000.000100');
  expect(update?.form.get('text')).toMatch(/^✅ Approved by ana@example\.com at \d{4}-/);
  expect(update?.auth).toBe(`Bearer ${BOT_TOKEN}`);

  const late = await api(click(n, 'U0BEN', 'plangate-approve'));
  expect(late.statusCode).toBe(200);
  const told = slackCalls.filter((c) => c.method === 'chat.postEphemeral').at(-1);
  expect(told?.form.get('user')).toBe('U0BEN');
  expect(told?.form.get('text')).toMatch(
    /^Not recorded: this gate was already answered: APPROVE by ana@example\.com at /,
  );
  expect(recorder.successes.filter((s) => s.taskToken === `${TOKEN}-exec-slack`)).toHaveLength(1);
  expect(await eventsOf('exec-slack')).toEqual([
    ['GATE_APPROVAL_REQUESTED', undefined],
    ['GATE_APPROVED', 'ana@example.com'],
  ]);
  // Nothing Slack saw carries the task token.
  for (const call of slackCalls) expect(call.form.toString()).not.toContain(TOKEN.slice(0, 40));
});

it('rejects from Slack with the clicker named', async () => {
  const n = await openGate('exec-slack-reject');
  expect((await api(click(n, 'U0BEN', 'plangate-reject'))).statusCode).toBe(200);
  expect(await eventsOf('exec-slack-reject')).toEqual([
    ['GATE_APPROVAL_REQUESTED', undefined],
    ['GATE_REJECTED', 'ben@example.com'],
  ]);
});

it('refuses forged, replayed-too-late and unmapped clicks, changing nothing', async () => {
  const n = await openGate('exec-slack-refused');
  expect(
    (await api(click(n, 'U0ANA', 'plangate-approve', { secret: 'not-the-signing-secret' }))).statusCode,
  ).toBe(401);
  expect((await api(click(n, 'U0ANA', 'plangate-approve', { secondsAgo: 6 * 60 }))).statusCode).toBe(401);
  const unmapped = await api(click(n, 'U0MALLORY', 'plangate-approve'));
  expect(JSON.parse(unmapped.body as string).text).toMatch(/not a plangate approver/);
  // Mapped, but not one of this plan's approvers: the policy refuses, and the refusal is audited.
  const outsider = await api(click(n, 'U0EVE', 'plangate-approve'));
  expect(JSON.parse(outsider.body as string).text).toBe(
    "Not recorded: eve@example.com is not one of this plan's approvers",
  );
  expect(recorder.successes.some((s) => s.taskToken === `${TOKEN}-exec-slack-refused`)).toBe(false);
  expect(await eventsOf('exec-slack-refused')).toEqual([
    ['GATE_APPROVAL_REQUESTED', undefined],
    ['GATE_ANSWER_REFUSED', 'eve@example.com'],
  ]);
});

/**
 * A notifier that tells nobody fails visibly. The notifier Lambda's own `handler`, started as AWS
 * starts it (its environment parsed, its clients made from it, here against dynalite and the local
 * bus), in a deployment with neither an SES sender nor Slack: GATE_NOTICE_UNDELIVERED in the gate's
 * execution, an error entry, and GateNoticeUndelivered (namespace plangate, service
 * plangate-notifier: the alarm's metric). Then the notifier function with real SES and Slack
 * clients: nobody to send to, and every send failing (which still fails the invocation, so Lambda
 * tries the notice again), are reported too; a notice that went out is not.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler, makeHandler } from '../../lambdas/notifier.ts';
import { LOCAL_CREDENTIALS } from '../../lib/aws-local/clients.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { TABLE_NAME_ENV } from '../../lib/runtime/catalog.ts';
import { journalFor } from '../../lib/runtime/deps.ts';
import { LinkSigner } from '../../lib/runtime/gate/links.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { DEFAULT_TABLE_NAMES, type TableNames } from '../../lib/runtime/journal/tables.ts';
import { EmailNotifier } from '../../lib/runtime/notify/email.ts';
import { undeliveredReporter } from '../../lib/runtime/notify/undelivered.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { NOTICE_UNDELIVERED_METRIC, Telemetry } from '../../lib/runtime/telemetry/telemetry.ts';

type Entry = Record<string, unknown>;

const SIGNER = new LinkSigner('u'.repeat(32));
let dir: string;
let plane: LocalDataPlane;
let ses: Server;
let sesUrl: string;
let sesFails = false;
const saved = { ...process.env };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-undelivered-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  ses = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(sesFails ? 400 : 200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(sesFails ? { message: 'Email address is not verified.' } : { MessageId: 'm-1' }),
      );
    });
  });
  await new Promise<void>((r) => ses.listen(0, '127.0.0.1', r));
  sesUrl = `http://127.0.0.1:${(ses.address() as AddressInfo).port}`;
});
afterAll(async () => {
  process.env = saved;
  ses.closeAllConnections();
  await new Promise((r) => ses.close(r));
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

const notice = (executionId: string, approvers: string[] = ['dana@example.com']): ApprovalNotice => ({
  approvalId: SIGNER.shared('gate-1', 1900000000, 'sha256:feed'),
  kind: 'plan',
  executionId,
  plan: { id: 'demo', version: 1, digest: 'sha256:feed' },
  summary: { objective: 'Ship the report', steps: 2 },
  round: 1,
  expiresAt: '2030-01-01T00:00:00.000Z',
  policy: { approvers, forbiddenApprovers: [], quorum: 1 },
});

async function eventsOf(executionId: string) {
  return readEvents(plane.clients.doc, plane.tableNames.events, executionId);
}

describe('the notifier Lambda of a deployment with no SES sender and no Slack', () => {
  it('journals GATE_NOTICE_UNDELIVERED, logs an error and counts GateNoticeUndelivered for the alarm', async () => {
    const executionId = 'arn:aws:states:us-east-1:123456789012:execution:demo:no-channel';
    process.env = {
      PATH: saved.PATH,
      ...plane.env,
      ...Object.fromEntries(
        Object.entries(TABLE_NAME_ENV).map(([id, env]) => [env, DEFAULT_TABLE_NAMES[id as keyof TableNames]]),
      ),
      PLANGATE_EVENT_BUS: 'default',
      // The platform's service name: the metric's own is plangate-notifier all the same.
      POWERTOOLS_SERVICE_NAME: 'plangate',
      POWERTOOLS_METRICS_NAMESPACE: 'plangate',
      PLANGATE_API_URL: 'https://api.example.com/',
    };
    const lines: Entry[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      for (const line of String(chunk).split('\n'))
        if (line.startsWith('{')) lines.push(JSON.parse(line) as Entry);
      return true;
    });
    let result: unknown;
    try {
      result = await handler(notice(executionId));
    } finally {
      write.mockRestore();
      process.env = saved;
    }
    expect(result).toEqual({ emailed: 0, slack: false, undelivered: 'no-channel' });
    const [event, ...more] = await eventsOf(executionId);
    expect(more).toEqual([]);
    expect(event).toMatchObject({
      event: 'GATE_NOTICE_UNDELIVERED',
      planId: 'demo',
      details: {
        gate: 'plan',
        link_id: notice(executionId).approvalId,
        reason: 'no-channel',
        message: expect.stringContaining('neither an SES sender (PLANGATE_SES_SENDER) nor Slack'),
      },
    });
    expect(lines.find((e) => e.message === 'gate notice undelivered: no-channel')).toMatchObject({
      level: 'ERROR',
      execution: executionId,
      gate: 'plan',
      reason: 'no-channel',
    });
    const metric = lines.find((e) => NOTICE_UNDELIVERED_METRIC.name in e) as Entry;
    expect(metric).toMatchObject({ [NOTICE_UNDELIVERED_METRIC.name]: 1, service: 'plangate-notifier' });
    expect((metric._aws as { CloudWatchMetrics: unknown[] }).CloudWatchMetrics).toEqual([
      {
        Namespace: 'plangate',
        Dimensions: [['service']],
        Metrics: [{ Name: 'GateNoticeUndelivered', Unit: 'Count' }],
      },
    ]);
  });
});

describe('the notifier function, with SES through the real SESv2Client', () => {
  const lines: string[] = [];
  const telemetry = new Telemetry({ handler: 'notifier', sink: { write: (line) => void lines.push(line) } });
  const notifier = (alwaysTo: string[] = []) =>
    makeHandler({
      approvalsBaseUrl: 'https://api.example.com',
      linkSigner: SIGNER,
      email: new EmailNotifier({
        ses: new SESv2Client({
          region: 'us-east-1',
          endpoint: sesUrl,
          credentials: LOCAL_CREDENTIALS,
          maxAttempts: 1,
        }),
        from: 'plangate@example.com',
        alwaysTo,
      }),
      telemetry,
      onUndelivered: undeliveredReporter({
        journal: journalFor({
          dynamo: plane.clients.doc,
          tables: plane.tableNames,
          events: plane.clients.events,
        }),
        telemetry,
      }),
    });

  it('reports nobody to send to when no approver is an email address', async () => {
    const executionId = 'arn:aws:states:us-east-1:123456789012:execution:demo:no-recipient';
    expect(await notifier()(notice(executionId, ['ben']))).toEqual({
      emailed: 0,
      slack: false,
      undelivered: 'no-recipient',
    });
    expect((await eventsOf(executionId)).map((e) => e.details.reason)).toEqual(['no-recipient']);
  });

  it('reports every send failing and still fails, so Lambda tries the notice again', async () => {
    const executionId = 'arn:aws:states:us-east-1:123456789012:execution:demo:send-failed';
    sesFails = true;
    try {
      await expect(notifier()(notice(executionId))).rejects.toThrow(/not verified/);
    } finally {
      sesFails = false;
    }
    const [event] = await eventsOf(executionId);
    expect(event?.details).toMatchObject({
      reason: 'send-failed',
      message: expect.stringMatching(/^nothing could be sent: email: .*not verified/),
    });
    expect(lines.some((l) => l.includes('"GateNoticeUndelivered":1'))).toBe(true);
  });

  it('reports nothing when the notice went out', async () => {
    const executionId = 'arn:aws:states:us-east-1:123456789012:execution:demo:delivered';
    expect(await notifier()(notice(executionId))).toEqual({ emailed: 1, slack: false });
    expect(await eventsOf(executionId)).toEqual([]);
  });
});

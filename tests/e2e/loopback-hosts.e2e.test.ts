/**
 * Every endpoint a real `plangate serve --identity header` process listens on (the API and its
 * pages, the engine, the local DynamoDB and event bus), and `plangate run`'s front door, answers
 * only its own names: a request
 * whose Host is a foreign name — what a page whose domain rebinds to 127.0.0.1 sends — or whose
 * Origin is foreign is refused with 403 before any handler runs, and changes nothing.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListExecutionsCommand, ListStateMachinesCommand } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localClients } from '../../lib/aws-local/clients.ts';
import { echoChainPlan } from '../support/echo-plan.ts';
import { writeMarkerPlan } from '../support/marker-plan.ts';
import { runPlan, storedEvents, workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

interface RawReply {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

/** A request with exactly these headers (fetch cannot set Host), as a browser or curl sends it. */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const PLAN = echoChainPlan('rebound', ['only']);

let serve: ServeProcess;
let url: string;
let port: string;
let session: { dynamoEndpoint: string; eventsEndpoint: string; sfnEndpoint: string };

beforeAll(async () => {
  const store = await mkdtemp(join(tmpdir(), 'plangate-loopback-'));
  serve = startServe(['--identity', 'header', '--store', store], await workDir());
  url = await serve.line(() => true);
  port = new URL(url).port;
  // The session file is written before the URL is printed.
  session = JSON.parse(await readFile(join(store, 'session.json'), 'utf8'));
}, 120_000);

afterAll(async () => {
  expect(await serve?.stop()).toBe(0);
});

async function executionsOnEngine(): Promise<number> {
  const clients = localClients(session);
  try {
    const sfn = clients.sfn;
    if (!sfn) throw new Error('no engine endpoint in the session');
    const machines = (await sfn.send(new ListStateMachinesCommand({}))).stateMachines ?? [];
    let count = 0;
    for (const machine of machines)
      count += (
        (await sfn.send(new ListExecutionsCommand({ stateMachineArn: machine.stateMachineArn })))
          .executions ?? []
      ).length;
    return count;
  } finally {
    clients.destroy();
  }
}

describe('plangate serve --identity header answers only its own names', () => {
  it('refuses a rebound page submitting a plan as anyone (foreign Host and Origin): 403, nothing submitted', async () => {
    const attack = await raw(`${url}/plans`, {
      method: 'POST',
      headers: {
        host: `evil.example:${port}`,
        origin: `http://evil.example:${port}`,
        'content-type': 'application/json',
        'x-plangate-user': 'carol',
      },
      body: JSON.stringify(PLAN),
    });
    expect(attack.status, attack.text).toBe(403);
    expect(attack.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(attack.text).message).toMatch(/Host "evil\.example:\d+" is not .*127\.0\.0\.1:\d+/);
    expect(await executionsOnEngine()).toBe(0);
  }, 30_000);

  it('refuses a foreign Origin even with the right Host, and `Origin: null`', async () => {
    for (const origin of [`http://evil.example:${port}`, 'null', `http://127.0.0.1:${Number(port) + 1}`]) {
      const reply = await raw(`${url}/plans`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/json', 'x-plangate-user': 'carol' },
        body: JSON.stringify(PLAN),
      });
      expect(reply.status, `${origin}: ${reply.text}`).toBe(403);
      expect(JSON.parse(reply.text).message).toContain('Origin');
    }
    expect(await executionsOnEngine()).toBe(0);
  }, 30_000);

  it('answers the same request with its own Host (and its own origin), and refuses its events to a foreign Host', async () => {
    const submitted = await raw(`${url}/plans`, {
      method: 'POST',
      headers: {
        origin: url,
        'content-type': 'application/json',
        'x-plangate-user': 'carol',
      },
      body: JSON.stringify(PLAN),
    });
    expect(submitted.status, submitted.text).toBe(201);
    const executionArn = JSON.parse(submitted.text).executionArn as string;
    const eventsPath = `/executions/${encodeURIComponent(executionArn)}/events`;
    const own = await raw(`${url}${eventsPath}`, {
      headers: { host: `localhost:${port}`, 'x-plangate-user': 'carol' },
    });
    expect(own.status, own.text).toBe(200);
    expect(JSON.parse(own.text).events[0]).toMatchObject({ event: 'PLAN_CREATED' });
    const foreign = await raw(`${url}${eventsPath}`, {
      headers: { host: `evil.example:${port}`, 'x-plangate-user': 'carol' },
    });
    expect(foreign.status).toBe(403);
    expect(foreign.text).not.toContain('PLAN_CREATED');
    expect(await executionsOnEngine()).toBe(1);
  }, 30_000);

  it('refuses a foreign Host on the engine, DynamoDB and the event bus, in their own (AWS JSON) error style', async () => {
    const calls = [
      { endpoint: session.sfnEndpoint, target: 'AWSStepFunctions.ListStateMachines', json: '1.0' },
      { endpoint: session.dynamoEndpoint, target: 'DynamoDB_20120810.ListTables', json: '1.0' },
      { endpoint: session.eventsEndpoint, target: 'AWSEvents.ListRules', json: '1.1' },
    ];
    for (const call of calls) {
      const endpointPort = new URL(call.endpoint).port;
      const headers = {
        'content-type': `application/x-amz-json-${call.json}`,
        'x-amz-target': call.target,
        // dynalite wants one there; the local services check no signature.
        authorization: `AWS4-HMAC-SHA256 Credential=plangate-local/20260101/us-east-1/x/aws4_request, SignedHeaders=host, Signature=${'0'.repeat(64)}`,
        'x-amz-date': '20260101T000000Z',
      };
      const refused = await raw(call.endpoint, {
        method: 'POST',
        headers: { ...headers, host: `evil.example:${endpointPort}` },
        body: '{}',
      });
      expect(refused.status, `${call.target}: ${refused.text}`).toBe(403);
      expect(JSON.parse(refused.text)).toMatchObject({ __type: expect.stringContaining('AccessDenied') });
      const answered = await raw(call.endpoint, { method: 'POST', headers, body: '{}' });
      expect(answered.status, `${call.target}: ${answered.text}`).toBe(200);
    }
  }, 30_000);
});

describe("plangate run's front door answers only its own names", () => {
  it('refuses its printed approval link and an answer under a foreign Host; the run goes on', async () => {
    const cwd = await workDir();
    const run = runPlan(await writeMarkerPlan(cwd, 'rebound-door'), cwd, ['--as', 'alice']);
    const LINK = /Answer here or open (http:\/\/127\.0\.0\.1:(\d+)\/\S+)/;
    await run.until('the approval link', () => LINK.test(run.stderr), 60_000);
    const [, link, doorPort] = LINK.exec(run.stderr) as RegExpExecArray;
    const opened = await raw(link as string, { headers: { host: `evil.example:${doorPort}` } });
    expect(opened.status, opened.text).toBe(403);
    expect(JSON.parse(opened.text).message).toContain("is not this server's address");
    const answered = await raw(link as string, {
      method: 'POST',
      headers: {
        host: `127.0.0.1.evil.example:${doorPort}`,
        origin: `http://127.0.0.1.evil.example:${doorPort}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ decision: 'APPROVE', digest: 'sha256:x' }),
    });
    expect(answered.status).toBe(403);
    run.answer('reject not through a rebound page');
    expect(await run.exited).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    expect(events.filter((e) => e.event === 'GATE_APPROVED')).toEqual([]);
    // The rebound page's answer changed nothing, and is journaled in the gate it tried (opening the
    // page is not an answer: nothing is journaled for it).
    expect(events.filter((e) => e.event === 'GATE_ANSWER_REFUSED').map((e) => e.details)).toEqual([
      {
        gate: 'plan',
        reason: 'unverified',
        message: expect.stringContaining(
          `Host "127.0.0.1.evil.example:${doorPort}" is not this server's address`,
        ),
        source: expect.stringMatching(/^127\.0\.0\.1/),
      },
    ]);
    expect(events.find((e) => e.event === 'GATE_REJECTED')?.details).toMatchObject({ approver: 'alice' });
  }, 120_000);
});

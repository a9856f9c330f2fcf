/**
 * The Plans and approvals APIs end to end: a plan submitted to the Plans API is validated,
 * compiled, deployed and started on the embedded engine's Step Functions API server (through
 * @aws-sdk/client-sfn); the gate Lambda's notices are answered through the approvals API; the
 * harness Lambdas (lambdas/*) run against dynalite and the local bus with real SDK clients.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListStateMachinesCommand, SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as makeApprovalsApi } from '../../lambdas/approvals-api.ts';
import { makeHandler as makeClassifier } from '../../lambdas/classifier.ts';
import { makeHandler as makeChecker } from '../../lambdas/contract-checker.ts';
import { makeHandler as makeGate } from '../../lambdas/gate.ts';
import { makeHandler as makeJoin } from '../../lambdas/join.ts';
import { makeHandler as makePlansApi } from '../../lambdas/plans-api.ts';
import { makeHandler as makeRunner } from '../../lambdas/step-runner.ts';
import { LOCAL_CREDENTIALS } from '../../lib/aws-local/clients.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { PLACEHOLDERS } from '../../lib/compiler/placeholders.ts';
import { type EngineServer, startEngineServer } from '../../lib/engine/api/index.ts';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import { createResourceInvoker, LambdaHandlerRegistry } from '../../lib/engine/resources/index.ts';
import type { LambdaHandler } from '../../lib/engine/types.ts';
import { type HttpEvent, LOCAL_IDENTITY_HEADER } from '../../lib/runtime/api/http.ts';
import type { GateDeps } from '../../lib/runtime/gate/gate.ts';
import { verifyChain } from '../../lib/runtime/journal/chain.ts';
import type { ApprovalNotice, JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';
const fnArn = (name: string) => `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}`;

let dir: string;
let plane: LocalDataPlane;
let engine: Engine;
let server: EngineServer;
let sfn: SFNClient;
let plansApi: ReturnType<typeof makePlansApi>;
let approvalsApi: ReturnType<typeof makeApprovalsApi>;
const notices: ApprovalNotice[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-api-'));
  plane = await startLocalDataPlane({ dataDir: join(dir, 'data') });
  const registry = new LambdaHandlerRegistry({ region: REGION, accountId: ACCOUNT });
  engine = createEngine({
    storeDir: undefined,
    timeScale: 0,
    invokeResource: createResourceInvoker({
      lambdaHandlers: registry,
      dynamodb: plane.clients.dynamo,
      eventBridge: plane.clients.events,
      region: REGION,
      accountId: ACCOUNT,
    }),
  });
  server = await startEngineServer({ engine });
  sfn = new SFNClient({ region: REGION, endpoint: server.url, credentials: LOCAL_CREDENTIALS });
  const signingKey = 's'.repeat(32);
  const harness: GateDeps = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    sfn,
    tools: builtinRegistry(),
    cwd: dir,
    signingKey,
    notify: async (notice) => {
      notices.push(notice);
    },
  };
  const handlers: Record<string, LambdaHandler> = {
    'plangate-gate': makeGate(harness) as LambdaHandler,
    'plangate-step-runner': makeRunner(harness) as LambdaHandler,
    'plangate-contract-checker': makeChecker(harness) as LambdaHandler,
    'plangate-classifier': makeClassifier(harness) as LambdaHandler,
    'plangate-join': makeJoin({
      dynamo: plane.clients.doc,
      joinsTable: plane.tableNames.joins,
      sfn,
    }) as LambdaHandler,
  };
  for (const [name, handler] of Object.entries(handlers)) registry.register(name, handler);
  plansApi = makePlansApi({
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    sfn,
    roleArn: `arn:aws:iam::${ACCOUNT}:role/plangate-plans`,
    substitutions: {
      [PLACEHOLDERS.gate]: fnArn('plangate-gate'),
      [PLACEHOLDERS.stepRunner]: fnArn('plangate-step-runner'),
      [PLACEHOLDERS.contractChecker]: fnArn('plangate-contract-checker'),
      [PLACEHOLDERS.classifier]: fnArn('plangate-classifier'),
      [PLACEHOLDERS.join]: fnArn('plangate-join'),
    },
  });
  approvalsApi = makeApprovalsApi({
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    sfn,
    signingKey,
    identity: { mode: 'header', header: LOCAL_IDENTITY_HEADER },
  });
});
afterAll(async () => {
  await engine.close();
  sfn.destroy();
  await server.close();
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

function request(
  method: string,
  path: string,
  options: {
    body?: string;
    headers?: Record<string, string>;
    query?: Record<string, string>;
    /** The IAM caller API Gateway puts in the context of a SigV4-signed request. */
    iam?: string;
  } = {},
): HttpEvent {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: new URLSearchParams(options.query ?? {}).toString(),
    headers: options.headers ?? {},
    ...(options.query ? { queryStringParameters: options.query } : {}),
    requestContext: {
      accountId: ACCOUNT,
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: 'r',
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: 0,
      ...(options.iam ? { authorizer: { iam: { userArn: options.iam } } } : {}),
    },
    ...(options.body !== undefined ? { body: options.body } : {}),
    isBase64Encoded: false,
  };
}

const PLAN = `
id: api-demo
objective: "Write a <b>report</b> & check it"
approval:
  approvers: [ana]
  forbiddenApprovers: [author]
steps:
  - id: write
    description: Write the report file
    tool: shell
    args: { command: "echo done > report.txt" }
    contract: { kind: command, command: "test -s report.txt" }
  - id: sign
    description: Sign the report by hand
    requiresHuman: true
    outputs: [signer]
    dependsOn: [write]
    contract: { kind: assert, expression: "output.signer = 'ana'" }
  - id: publish
    description: Publish the signed report
    tool: shell
    dependsOn: [sign]
    args: { command: "echo \${steps.sign.signer} > published.txt" }
    contract: { kind: command, command: "grep -q ana published.txt" }
`;

async function nextNotice(kind: ApprovalNotice['kind'], after: number): Promise<ApprovalNotice> {
  for (let i = 0; i < 400; i++) {
    const found = notices.slice(after).find((n) => n.kind === kind);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no ${kind} notice arrived`);
}

const SUBMITTER = `arn:aws:iam::${ACCOUNT}:user/ana`;

const body = (result: { body?: string }) => JSON.parse(result.body ?? 'null');

describe('Plans API + approvals API', () => {
  it('rejects an invalid plan with located problems and deploys nothing', async () => {
    const result = await plansApi(
      request('POST', '/plans', {
        body: 'id: broken\nobjective: x\nsteps:\n  - id: a\n    description: Do a\n    tool: shell\n    dependsOn: [nope]\n',
        headers: { 'content-type': 'application/yaml' },
        iam: SUBMITTER,
      }),
    );
    expect(result.statusCode).toBe(400);
    const problems = body(result).problems as {
      code: string;
      location: { line?: number; pointer?: string };
    }[];
    expect(problems.find((p) => p.code === 'unknown-dependency')?.location).toMatchObject({ line: 7 });
    expect((await sfn.send(new ListStateMachinesCommand({}))).stateMachines).toEqual([]);
  });

  it('submits, gates, runs a human step and reports progress and events', async () => {
    const before = notices.length;
    // Nobody to record as the submitter: refused, nothing deployed.
    const anonymous = await plansApi(
      request('POST', '/plans', { body: PLAN, headers: { 'content-type': 'application/yaml' } }),
    );
    expect(anonymous.statusCode).toBe(401);
    expect((await sfn.send(new ListStateMachinesCommand({}))).stateMachines).toEqual([]);
    const submitted = await plansApi(
      request('POST', '/plans', {
        body: PLAN,
        headers: { 'content-type': 'application/yaml' },
        iam: SUBMITTER,
      }),
    );
    expect(submitted.statusCode).toBe(201);
    const { executionArn, plan } = body(submitted) as { executionArn: string; plan: { digest: string } };

    const gate = await nextNotice('plan', before);
    // Opening the link redeems it into a page session: a clean URL, the session in a cookie.
    const opened = await approvalsApi(request('GET', `/approvals/${encodeURIComponent(gate.approvalId)}`));
    expect(opened.statusCode).toBe(303);
    const location = opened.headers?.location as string;
    expect(location).toMatch(/^\/approvals\/[A-Za-z0-9_-]{22}$/);
    const cookie = opened.cookies?.[0] as string;
    expect(cookie).toMatch(
      /^plangate_page=[A-Za-z0-9_-]+; Path=\/approvals\/[A-Za-z0-9_-]{22}; Max-Age=\d+; HttpOnly; SameSite=Strict$/,
    );
    const page = await approvalsApi(
      request('GET', location, { headers: { cookie: cookie.split(';')[0] as string } }),
    );
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(gate.approvalId.split('.')[2]);
    expect(page.body).toContain(plan.digest);
    expect(page.body).toContain('Write a &lt;b&gt;report&lt;/b&gt; &amp; check it');
    expect(page.body).not.toContain('<b>report');

    const answer = (approvalId: string, by: string | undefined, form: Record<string, string>) =>
      approvalsApi(
        request('POST', `/approvals/${encodeURIComponent(approvalId)}`, {
          body: new URLSearchParams(form).toString(),
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            ...(by ? { [LOCAL_IDENTITY_HEADER]: by } : {}),
          },
        }),
      );
    expect(
      (await answer(gate.approvalId, undefined, { decision: 'APPROVE', digest: plan.digest })).statusCode,
    ).toBe(401);
    expect(
      (await answer(gate.approvalId, 'author', { decision: 'APPROVE', digest: plan.digest })).statusCode,
    ).toBe(403);
    expect(
      (await answer(gate.approvalId, 'ana', { decision: 'APPROVE', digest: 'sha256:old' })).statusCode,
    ).toBe(409);
    expect(
      (await answer(gate.approvalId, 'ana', { decision: 'APPROVE', digest: plan.digest })).statusCode,
    ).toBe(200);
    expect(
      (await answer(gate.approvalId, 'ana', { decision: 'APPROVE', digest: plan.digest })).statusCode,
    ).toBe(409);

    const human = await nextNotice('human', before);
    expect(human.human).toEqual({ instructions: 'Sign the report by hand', outputs: ['signer'] });
    const running = body(await plansApi(request('GET', `/plans/${encodeURIComponent(executionArn)}`)));
    expect(running.status).toBe('RUNNING');
    expect(running.steps.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      ['write', 'completed'],
      ['sign', 'running'],
      ['publish', 'pending'],
    ]);
    const done = await approvalsApi(
      request('POST', `/approvals/${encodeURIComponent(human.approvalId)}`, {
        body: JSON.stringify({ digest: plan.digest, decision: 'DONE', outputs: { signer: 'ana' } }),
        headers: { 'content-type': 'application/json', [LOCAL_IDENTITY_HEADER]: 'ana' },
      }),
    );
    expect(done.statusCode).toBe(200);
    expect(body(done)).toMatchObject({ status: 'decided', decision: { decision: 'DONE' } });

    let status:
      | { status: string; summary?: unknown; steps: { status: string }[]; progress: string[] }
      | undefined;
    for (let i = 0; i < 400 && status?.status !== 'SUCCEEDED'; i++) {
      status = body(await plansApi(request('GET', `/plans/${encodeURIComponent(executionArn)}`)));
      if (status?.status === 'FAILED') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(status?.status).toBe('SUCCEEDED');
    expect(status?.steps.every((s) => s.status === 'completed')).toBe(true);
    expect(status?.summary).toEqual({ completed: 3, failed: 0, skipped: 0 });
    expect(status?.progress).toContain('[Task 3/3] ✓ Publish the signed report (exit 0 (passed))');

    const listed = await plansApi(request('GET', `/executions/${encodeURIComponent(executionArn)}/events`));
    const events = body(listed).events as JournalRecord[];
    expect(events[0]?.event).toBe('PLAN_CREATED');
    expect(events[0]?.details.submitted_by).toBe(SUBMITTER);
    expect(events.map((e) => e.event)).toContain('HUMAN_TASK_ANSWERED');
    expect(events.at(-1)?.event).toBe('EXECUTION_COMPLETE');
    expect(verifyChain(events)).toEqual({ ok: true, count: events.length });
    expect(JSON.stringify(events)).not.toMatch(/AQ[A-Za-z0-9+/=_-]{40}/);
  });

  it('answers 404 for unknown routes, executions and approval links', async () => {
    expect((await plansApi(request('GET', '/nothing'))).statusCode).toBe(404);
    const missing = `arn:aws:states:${REGION}:${ACCOUNT}:execution:plangate-none:x`;
    expect((await plansApi(request('GET', `/plans/${encodeURIComponent(missing)}`))).statusCode).toBe(404);
    expect((await approvalsApi(request('GET', '/approvals/abc.1.def'))).statusCode).toBe(404);
    expect((await approvalsApi(request('GET', '/approvals/not-a-link'))).statusCode).toBe(400);
  });
});

/**
 * The synthesized Lambda bundles, each loaded from its cdk.out asset directory alone and run as
 * Lambda runs it (lambda-process.ts), against a simulated account that enforces the template's
 * IAM as written (deny by default, explicit Deny first): the harness can do its work; plan code
 * (a shell step, a command contract), with whatever credentials it can find, cannot rewrite the
 * journal, read a platform secret or publish to the bus, and the run still records the step.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusEvent } from '../../lib/aws-local/eventbus.ts';
import { isImplementedOperator } from '../../lib/aws-local/iam/conditions.ts';
import { HARNESS_HANDLERS, type HarnessHandlerName } from '../../lib/runtime/catalog.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { RunnerRequest } from '../../lib/runtime/payloads/index.ts';
import { type LambdaProcess, startLambdaProcess } from './lambda-process.ts';
import { type SimulatedAws, SLACK_SECRETS, startSimulatedAws } from './simulated-aws.ts';
import { synthesizeCdkOut } from './synth.ts';
import { readSimulatedTemplate, type SimulatedFunction } from './template.ts';

const REACH = join(import.meta.dirname, 'fixtures', 'reach-for-harness.mjs');

let cdkOut: string;
let work: string;
let aws: SimulatedAws;
const processes: LambdaProcess[] = [];
const published: BusEvent[] = [];

function functionOf(handler: HarnessHandlerName): SimulatedFunction {
  const fn = aws.template.functions.find((f) => f.description === HARNESS_HANDLERS[handler].description);
  if (!fn) throw new Error(`no ${handler} function in the template`);
  return fn;
}

async function start(handler: HarnessHandlerName): Promise<LambdaProcess> {
  const fn = functionOf(handler);
  const lambda = await startLambdaProcess({
    fn,
    credentials: aws.credentialsOf(fn),
    endpoint: aws.front.endpoint,
    root: mkdtempSync(join(work, `${handler}-`)),
  });
  processes.push(lambda);
  return lambda;
}

const plan = { id: 'iam-sim', version: 1, digest: 'sha256:feed' };

function shellStep(executionId: string, command: string): RunnerRequest {
  return {
    plan,
    executionId,
    stepId: 'build',
    index: 1,
    total: 1,
    description: 'Build the report',
    tool: 'shell',
    subscriptions: [],
    args: { command },
    argOverrides: {},
    secrets: [],
    inputs: {},
    dependsOn: [],
    skip: false,
    attempt: 1,
    outputs: [],
    timeoutSeconds: 60,
    inlineOutputLimitBytes: 8192,
    dispatch: false,
  };
}

const eventsOf = (executionId: string) => readEvents(aws.admin.doc, aws.tables.events, executionId);

beforeAll(async () => {
  cdkOut = await synthesizeCdkOut();
  work = mkdtempSync(join(tmpdir(), 'plangate-iam-sim-run-'));
  aws = await startSimulatedAws(readSimulatedTemplate(cdkOut));
  aws.bus.subscribe({ source: ['plangate'] }, (event) => {
    published.push(event);
  });
}, 150_000);

afterAll(async () => {
  for (const p of processes) await p.close();
  await aws?.close();
  for (const dir of [work, cdkOut]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the template's policies, as the simulator reads them", () => {
  it('use only condition operators it evaluates (any other would deny, loudly)', () => {
    const policies = [
      ...[...aws.template.rolePolicies.values()].flat(),
      ...aws.template.resourcePolicies.values(),
    ];
    const operators = policies.flatMap((p) =>
      p.document.Statement.flatMap((st) => Object.keys(st.Condition ?? {})),
    );
    expect(operators).toContain('ArnNotEquals');
    expect(operators.filter((op) => !isImplementedOperator(op))).toEqual([]);
  });
});

describe('the harness, with its own role', () => {
  it("the step runner's bundle journals its step (PutItem on the events table) and publishes it to the bus", async () => {
    const runner = await start('stepRunner');
    const executionId = 'arn:aws:states:us-east-1:123456789012:execution:plangate-iam-sim:harness';
    const answer = await runner.invoke(shellStep(executionId, 'echo built'));
    expect(answer, runner.output()).toMatchObject({ result: { status: 'succeeded' } });
    expect((await eventsOf(executionId)).map((e) => e.event)).toContain('TASK_STARTED');
    expect(published.some((e) => JSON.stringify(e.detail).includes(executionId))).toBe(true);
    const role = functionOf('stepRunner').roleArn;
    const allowed = aws.front.decisions.filter((d) => d.roleArn === role && d.allowed).map((d) => d.action);
    expect(allowed).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'events:PutEvents']));
  });

  it("the gate's bundle reads the approval signing key it needs at cold start", async () => {
    const gate = await start('gate');
    const answer = await gate.invoke({});
    // The start succeeded (the key was read); the empty event itself is refused.
    expect(answer, gate.output()).toMatchObject({ error: { name: 'Plangate.InvalidInput' } });
    const key = aws.template.arnOf(aws.template.idsOf('AWS::SecretsManager::Secret')[0] as string);
    expect(aws.front.decisions).toContainEqual(
      expect.objectContaining({
        roleArn: functionOf('gate').roleArn,
        action: 'secretsmanager:GetSecretValue',
        resource: key,
        allowed: true,
      }),
    );
  });
});

/** The plan code's command: what it finds and tries goes to `report`; the target is `planted`. */
function reachCommand(executionId: string, sk: string, report: string): string {
  const vars = {
    REACH_ENDPOINT: aws.front.endpoint,
    REACH_EVENTS_TABLE: aws.tables.events,
    REACH_BUS: aws.busName,
    REACH_SECRET_ID: SLACK_SECRETS.signingSecret.name,
    REACH_EXECUTION: executionId,
    REACH_SK: sk,
    REACH_REPORT: report,
  };
  return `${Object.entries(vars)
    .map(([k, v]) => `${k}='${v}'`)
    .join(' ')} node '${REACH}'`;
}

/** Plan code in each harness Lambda that runs it: a shell step (step runner), a command contract (contract checker). */
const PLAN_CODE = [
  {
    what: 'a shell step',
    handler: 'stepRunner' as const,
    request: (executionId: string, command: string): unknown => shellStep(executionId, command),
    recorded: 'TASK_STARTED',
  },
  {
    what: 'a command contract',
    handler: 'contractChecker' as const,
    request: (executionId: string, command: string): unknown => ({
      plan,
      executionId,
      stepId: 'build',
      index: 1,
      total: 1,
      description: 'Build the report',
      attempt: 1,
      run: { stepId: 'build', attempt: 1, status: 'succeeded', output: {}, durationMs: 1 },
      contract: { kind: 'command', command, expectExitCode: 0, timeoutSeconds: 60 },
    }),
    recorded: 'TASK_COMPLETED',
  },
];

describe.each(PLAN_CODE)(
  '$what, with whatever credentials it can find',
  ({ what, handler, request, recorded }) => {
    const executionId = `arn:aws:states:us-east-1:123456789012:execution:plangate-iam-sim:reach-${handler}`;
    const planted = { executionId, sk: 'planted', event: 'GATE_APPROVED', details: '{"approver":"alice"}' };
    let report: {
      found: string[];
      results: { attempt: string; credentials: string; status: number; type?: string; body: string }[];
    };

    beforeAll(async () => {
      await aws.admin.doc.send(new PutCommand({ TableName: aws.tables.events, Item: planted }));
      const lambda = await start(handler);
      const reportFile = join(work, `reach-${handler}.json`);
      const answer = await lambda.invoke(
        request(executionId, reachCommand(executionId, planted.sk, reportFile)),
      );
      expect(answer, lambda.output()).not.toHaveProperty('error');
      report = JSON.parse(readFileSync(reportFile, 'utf8'));
    }, 60_000);

    it(`the run still records ${what} (${recorded})`, async () => {
      expect((await eventsOf(executionId)).map((e) => e.event)).toContain(recorded);
    });

    const refused = [
      'AccessDeniedException',
      'MissingAuthenticationTokenException',
      'UnrecognizedClientException',
    ];
    it.each([
      'put an event',
      'update an event',
      'delete an event',
      'read the Slack signing secret',
      'publish to the bus',
    ])('cannot %s: every attempt is refused (no credentials, or AccessDenied)', (attempt) => {
      const tries = report.results.filter((r) => r.attempt === attempt);
      expect(tries.length).toBeGreaterThan(0);
      expect(tries.filter((t) => !refused.includes(t.type ?? ''))).toEqual([]);
    });

    it('leaves the journal, the secret and the bus as they were', async () => {
      const item = await aws.admin.doc.send(
        new GetCommand({ TableName: aws.tables.events, Key: { executionId, sk: planted.sk } }),
      );
      expect(item.Item).toEqual(planted);
      expect(JSON.stringify(report)).not.toContain(SLACK_SECRETS.signingSecret.value);
      expect(published.some((e) => JSON.stringify(e.detail).includes('mallory'))).toBe(false);
    });
  },
);

/**
 * The synthesized Lambda bundles, each loaded from its cdk.out asset directory alone and run as
 * Lambda runs it (lambda-process.ts), against a simulated account that enforces the template's
 * IAM as written (deny by default, explicit Deny first): the harness can do its work; plan code
 * (a shell step, a command contract), which the step runner and the contract checker hand the
 * plan-process function (Lambda Invoke through the front, the function in its own process with
 * its own role), with every credential it can find in the function's execution environment,
 * cannot assume the plan AWS role, rewrite the journal, read a platform secret or publish to the
 * bus, and the run still records the step. A step that declares `aws` gets a session of the plan
 * AWS role that the step runner assumed for it (STS AssumeRole with its grants as the session
 * policy): it can do what it declared and still none of that, nor assume the role afresh.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusEvent } from '../../lib/aws-local/eventbus.ts';
import { isImplementedOperator } from '../../lib/aws-local/iam/conditions.ts';
import { type NamedPolicy, PolicyDocumentSchema } from '../../lib/aws-local/iam/policy-document.ts';
import { HARNESS_HANDLERS, type HarnessHandlerName } from '../../lib/runtime/catalog.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { RunnerRequest } from '../../lib/runtime/payloads/index.ts';
import { sharedCdkOut } from '../support/cdk-synth.ts';
import { LAMBDA_NODE, type LambdaProcess, startLambdaProcess } from './lambda-process.ts';
import { PLAN_SECRETS, type SimulatedAws, SLACK_SECRETS, startSimulatedAws } from './simulated-aws.ts';
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

function shellStep(executionId: string, command: string, aws?: RunnerRequest['aws']): RunnerRequest {
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
    ...(aws ? { aws } : {}),
  };
}

/** How the front refuses a request with no credentials, unknown ones, or too few permissions. */
const refused = [
  'AccessDeniedException',
  'MissingAuthenticationTokenException',
  'UnrecognizedClientException',
];
/** The same, as STS says it. */
const STS_REFUSED = ['AccessDenied', 'MissingAuthenticationToken', 'InvalidClientTokenId'];

const eventsOf = (executionId: string) => readEvents(aws.admin.doc, aws.tables.events, executionId);

/** What a platform might allow plans on AWS (`planAwsStatements`): much, to show the template's Deny holds anyway. */
const PLATFORM_PLAN_AWS: NamedPolicy = {
  name: "planAwsStatements (the platform's, added for this test)",
  document: PolicyDocumentSchema.parse({
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: ['dynamodb:*', 'events:PutEvents', 'secretsmanager:GetSecretValue'],
        Resource: '*',
      },
    ],
  }),
};

beforeAll(async () => {
  cdkOut = (await sharedCdkOut()).dir;
  work = mkdtempSync(join(tmpdir(), 'plangate-iam-sim-run-'));
  const template = readSimulatedTemplate(cdkOut);
  const planAwsRole = template.functions.find((f) => f.environment.PLANGATE_PLAN_AWS_ROLE_ARN)?.environment
    .PLANGATE_PLAN_AWS_ROLE_ARN;
  if (!planAwsRole) throw new Error('no function names the plan AWS role');
  aws = await startSimulatedAws(template, { addedPolicies: new Map([[planAwsRole, [PLATFORM_PLAN_AWS]]]) });
  aws.bus.subscribe({ source: ['plangate'] }, (event) => {
    published.push(event);
  });
}, 250_000);

afterAll(async () => {
  for (const p of processes) await p.close();
  await aws?.close();
  // cdk.out is the run's shared one (tests/support/cdk-synth.ts): only this file's work goes
  if (work) rmSync(work, { recursive: true, force: true });
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
    // On the Lambda runtime's Node where .ci/run installed it (functions run on nodejs24.x).
    if (LAMBDA_NODE !== process.execPath) expect(runner.nodeVersion).toMatch(/^v24\./);
    expect((await eventsOf(executionId)).map((e) => e.event)).toContain('TASK_STARTED');
    expect(published.some((e) => JSON.stringify(e.detail).includes(executionId))).toBe(true);
    const role = functionOf('stepRunner').roleArn;
    const allowed = aws.front.decisions.filter((d) => d.roleArn === role && d.allowed).map((d) => d.action);
    expect(allowed).toEqual(
      expect.arrayContaining(['dynamodb:PutItem', 'events:PutEvents', 'lambda:InvokeFunction']),
    );
    // Its shell step ran in the plan-process function, invoked through Lambda's Invoke.
    expect(aws.front.decisions).toContainEqual(
      expect.objectContaining({
        roleArn: role,
        action: 'lambda:InvokeFunction',
        resource: functionOf('planProcess').arn,
        allowed: true,
      }),
    );
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

/** What the plan code's command found and tried (fixtures/reach-for-harness.mjs). */
interface ReachReport {
  /** Where each credential set it found came from. */
  readonly found: string[];
  /** The pids of the execution environment it read. */
  readonly processes: number[];
  /** Values of AWS_LAMBDA_RUNTIME_API in those processes' environments. */
  readonly runtimeApis: string[];
  /** The names in its own environment. */
  readonly ownEnvironment: string[];
  readonly results: { attempt: string; credentials: string; status: number; type?: string; body: string }[];
}

const planAwsRoleArn = () =>
  aws.template.functions.find((f) => f.environment.PLANGATE_PLAN_AWS_ROLE_ARN)?.environment
    .PLANGATE_PLAN_AWS_ROLE_ARN as string;

/** The plan code's command: what it finds and tries goes to `report`; the target is `planted`. */
function reachCommand(executionId: string, sk: string, report: string, planSecrets: string[] = []): string {
  const vars = {
    REACH_PLAN_ROLE: planAwsRoleArn(),
    REACH_PLAN_SECRETS: planSecrets.join(','),
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
    let report: ReachReport;

    beforeAll(async () => {
      await aws.admin.doc.send(new PutCommand({ TableName: aws.tables.events, Item: planted }));
      const lambda = await start(handler);
      const reportFile = join(work, `reach-${handler}.json`);
      const answer = await lambda.invoke(
        request(
          executionId,
          reachCommand(executionId, planted.sk, reportFile, [
            PLAN_SECRETS.reportToken.name,
            PLAN_SECRETS.deployKey.name,
          ]),
        ),
      );
      expect(answer, lambda.output()).not.toHaveProperty('error');
      report = JSON.parse(readFileSync(reportFile, 'utf8'));
    }, 60_000);

    it(`the run still records ${what} (${recorded})`, async () => {
      expect((await eventsOf(executionId)).map((e) => e.event)).toContain(recorded);
    });

    it.each([
      'put an event',
      'update an event',
      'delete an event',
      'read the Slack signing secret',
      'publish to the bus',
      // It declared no aws: not even the plan secrets the plan AWS role could read.
      `read the plan secret ${PLAN_SECRETS.reportToken.name}`,
      `read the plan secret ${PLAN_SECRETS.deployKey.name}`,
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
      for (const secret of [SLACK_SECRETS.signingSecret, PLAN_SECRETS.reportToken, PLAN_SECRETS.deployKey])
        expect(JSON.stringify(report)).not.toContain(secret.value);
      expect(published.some((e) => JSON.stringify(e.detail).includes('mallory'))).toBe(false);
    });

    it('holds no credentials and no Lambda runtime API in its own environment', () => {
      expect(report.found).not.toContain('own environment');
      expect(report.ownEnvironment.filter((name) => /^AWS_|^_X_AMZN/.test(name))).toEqual([]);
      // Not vacuous: the function's own processes carry the runtime API's address.
      expect(report.runtimeApis.length).toBeGreaterThan(0);
    });

    it("cannot assume the plan AWS role with anything it finds (the plan-process function's credentials included)", () => {
      const tries = report.results.filter((r) => r.attempt === 'assume the plan AWS role');
      expect(tries.map((t) => t.credentials)).toEqual(['none (unsigned)', ...report.found]);
      expect(tries.filter((t) => t.status === 200 || !STS_REFUSED.includes(t.type ?? ''))).toEqual([]);
      expect(report.results.filter((r) => r.credentials.startsWith('the plan AWS role'))).toEqual([]);
      expect(aws.front.decisions).toContainEqual(
        expect.objectContaining({
          roleArn: functionOf('planProcess').roleArn,
          action: 'sts:AssumeRole',
          resource: planAwsRoleArn(),
          allowed: false,
        }),
      );
    });

    it("finds the plan-process function's credentials (never the harness's), and IAM refuses them", () => {
      expect(report.found.length).toBeGreaterThan(0);
      const slack = aws.secrets.arnOf(SLACK_SECRETS.signingSecret.name);
      const signers = aws.front.decisions
        .filter((d) => d.action === 'secretsmanager:GetSecretValue' && d.resource === slack)
        .map((d) => ({ roleArn: d.roleArn, allowed: d.allowed }));
      expect(signers).toContainEqual({ roleArn: functionOf('planProcess').roleArn, allowed: false });
      expect(signers.filter((d) => d.allowed || d.roleArn === functionOf(handler).roleArn)).toEqual([]);
    });
  },
);

describe('a shell step that declares aws', () => {
  const executionId = 'arn:aws:states:us-east-1:123456789012:execution:plangate-iam-sim:declares-aws';
  const planted = { executionId, sk: 'planted', event: 'GATE_APPROVED', details: '{"approver":"alice"}' };
  const secretArn = (name: string) => `arn:aws:secretsmanager:us-east-1:123456789012:secret:${name}-*`;
  const events = () => `arn:aws:dynamodb:us-east-1:123456789012:table/${aws.tables.events}`;
  let report: ReachReport;
  const own = (attempt: string) =>
    report.results.filter((r) => r.attempt === attempt && r.credentials === 'own environment');

  beforeAll(async () => {
    await aws.admin.doc.send(new PutCommand({ TableName: aws.tables.events, Item: planted }));
    const runner = await start('stepRunner');
    const reportFile = join(work, 'reach-declares-aws.json');
    const command = reachCommand(executionId, planted.sk, reportFile, [
      PLAN_SECRETS.reportToken.name,
      PLAN_SECRETS.deployKey.name,
    ]);
    // Its grants: the plan secret it needs, and (as a hostile plan would ask) the journal, the bus
    // and the platform's secrets, which the plan AWS role's own Deny keeps from every session.
    const access = {
      allow: [
        { actions: ['secretsmanager:GetSecretValue'], resources: [secretArn(PLAN_SECRETS.reportToken.name)] },
        {
          actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'events:PutEvents'],
          resources: [events(), `arn:aws:events:us-east-1:123456789012:event-bus/${aws.busName}`],
        },
        { actions: ['secretsmanager:GetSecretValue'], resources: [secretArn('plangate-platform/*')] },
      ],
    };
    const answer = await runner.invoke(shellStep(executionId, command, access));
    expect(answer, runner.output()).toMatchObject({ result: { status: 'succeeded' } });
    report = JSON.parse(readFileSync(reportFile, 'utf8'));
  }, 60_000);

  it('its processes hold a session of the plan AWS role, assumed by the step runner with its grants as the session policy', () => {
    expect(report.found).toContain('own environment');
    // The only role ever let assume it (identity policy and trust policy both) is the step runner's.
    const assumers = aws.front.decisions
      .filter((d) => d.action === 'sts:AssumeRole' && d.allowed)
      .map((d) => ({ roleArn: d.roleArn, resource: d.resource }));
    expect(assumers.length).toBeGreaterThan(0);
    expect(new Set(assumers.map((d) => JSON.stringify(d)))).toEqual(
      new Set([JSON.stringify({ roleArn: functionOf('stepRunner').roleArn, resource: planAwsRoleArn() })]),
    );
    expect(aws.front.decisions).toContainEqual(
      expect.objectContaining({ session: 'plangate-declares-aws', allowed: true }),
    );
  });

  it('cannot assume the plan AWS role afresh (without its session policy), with its own session or anything else it finds', () => {
    const tries = report.results.filter((r) => r.attempt === 'assume the plan AWS role');
    expect(tries.map((t) => t.credentials)).toContain('own environment');
    expect(tries.filter((t) => t.status === 200 || !STS_REFUSED.includes(t.type ?? ''))).toEqual([]);
    expect(aws.front.decisions).toContainEqual(
      expect.objectContaining({
        session: 'plangate-declares-aws',
        action: 'sts:AssumeRole',
        allowed: false,
      }),
    );
  });

  it('can do what it declared: read its plan secret', () => {
    const [read] = own(`read the plan secret ${PLAN_SECRETS.reportToken.name}`);
    expect(read?.body).toContain(PLAN_SECRETS.reportToken.value);
  });

  it('cannot do what it did not declare, though the role allows it (the session policy holds)', () => {
    const [read] = own(`read the plan secret ${PLAN_SECRETS.deployKey.name}`);
    expect(read).toMatchObject({ type: 'AccessDeniedException' });
    const denied = aws.front.decisions.filter(
      (d) =>
        d.session === 'plangate-declares-aws' &&
        d.resource === aws.secrets.arnOf(PLAN_SECRETS.deployKey.name),
    );
    expect(denied).toEqual([expect.objectContaining({ allowed: false })]);
    expect(denied[0]?.why).toContain('no session policy allows');
  });

  it.each([
    ['put an event', 'dynamodb:PutItem'],
    ['update an event', 'dynamodb:UpdateItem'],
    ['delete an event', 'dynamodb:DeleteItem'],
    ['read the Slack signing secret', 'secretsmanager:GetSecretValue'],
    ['publish to the bus', 'events:PutEvents'],
  ])("cannot %s, though it declared it and the role allows it (the role's Deny holds)", (attempt, action) => {
    expect(own(attempt)).toEqual([expect.objectContaining({ type: 'AccessDeniedException' })]);
    const denied = aws.front.decisions.filter(
      (d) => d.session === 'plangate-declares-aws' && d.action === action && !d.allowed,
    );
    expect(denied.length).toBeGreaterThan(0);
    expect(
      denied.filter((d) => !d.why.includes('explicit deny') || !d.why.includes('NeverTheHarness')),
    ).toEqual(
      action === 'secretsmanager:GetSecretValue'
        ? [expect.objectContaining({ resource: aws.secrets.arnOf(PLAN_SECRETS.deployKey.name) })]
        : [],
    );
  });

  it('leaves the journal, the secret and the bus as they were', async () => {
    const item = await aws.admin.doc.send(
      new GetCommand({ TableName: aws.tables.events, Key: { executionId, sk: planted.sk } }),
    );
    expect(item.Item).toEqual(planted);
    expect(JSON.stringify(report)).not.toContain(SLACK_SECRETS.signingSecret.value);
    expect(JSON.stringify(report)).not.toContain(PLAN_SECRETS.deployKey.value);
    expect(published.some((e) => JSON.stringify(e.detail).includes('mallory'))).toBe(false);
  });
});

/**
 * The platform as an operator runs it (issue 32, "Operable"), on the app's synthesized template:
 * every role a service assumes is held to this account (and to the platform's own resources where
 * they are named); every function invoked asynchronously has somewhere its failures go; what an
 * operator must know is an alarm; the Plans API can change only the machines it creates; the
 * stack's outputs name what a user needs next, as docs/deploy.md lists them; a platform that can
 * tell no approver of a gate does not synthesize unless it says why.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { matchesWildcard } from '../../lib/aws-local/iam/wildcard.ts';
import { APP_CONTEXT, APP_UNNOTIFIED_REASON, buildPlangateApp } from '../../lib/cdk/app.ts';
import { LAMBDAS_DIR, PROJECT_ROOT } from '../../lib/cdk/paths.ts';
import { PlanPlatform } from '../../lib/cdk/plan-platform.ts';
import { PlanPlatformStack, planOutputName } from '../../lib/cdk/plan-platform-stack.ts';
import { PlanStateMachine } from '../../lib/cdk/plan-state-machine.ts';
import { STATE_MACHINE_HANDLERS } from '../../lib/runtime/catalog.ts';
import { testApp } from './support.ts';

interface Resource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
}
interface TrustStatement {
  readonly Effect: string;
  readonly Principal?: { readonly Service?: string | string[]; readonly AWS?: unknown };
  readonly Condition?: Record<string, Record<string, unknown>>;
}

const ACCOUNT = '111111111111';
const REGION = 'eu-west-1';

let stack: PlanPlatformStack;
let resources: Record<string, Resource>;
let outputs: Record<string, { Value: unknown; Description?: string }>;

beforeAll(async () => {
  // With a planner, so that every asynchronously invoked function is there.
  const app = new App({
    context: { 'aws:cdk:bundling-stacks': [], [APP_CONTEXT.plannerModel]: 'anthropic.claude-test' },
  });
  stack = await buildPlangateApp(app);
  ({ Resources: resources, Outputs: outputs } = app.synth().getStackByName(stack.stackName).template);
}, 120_000);

/** A template value as text: pseudo parameters resolved to this test's account and region, other references named. */
function text(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, unknown>;
  if ('Ref' in v) {
    const pseudo: Record<string, string> = {
      'AWS::Partition': 'aws',
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::URLSuffix': 'amazonaws.com',
    };
    return pseudo[String(v.Ref)] ?? `<${String(v.Ref)}>`;
  }
  if ('Fn::GetAtt' in v) return `<${(v['Fn::GetAtt'] as string[]).join('.')}>`;
  if ('Fn::Join' in v) {
    const [sep, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map(text).join(sep);
  }
  throw new Error(`not a value this test reads: ${JSON.stringify(value)}`);
}

const ofType = (type: string): [string, Resource][] =>
  Object.entries(resources).filter(([, r]) => r.Type === type);

describe('trust', () => {
  /** Every statement of every role's trust policy that names a service principal. */
  const serviceTrusts = (): { role: string; services: string[]; statement: TrustStatement }[] =>
    ofType('AWS::IAM::Role').flatMap(([role, r]) =>
      (r.Properties.AssumeRolePolicyDocument as { Statement: TrustStatement[] }).Statement.filter(
        (st) => st.Principal?.Service !== undefined,
      ).map((statement) => ({ role, services: [statement.Principal?.Service ?? []].flat(), statement })),
    );

  it("holds every role a service assumes to this stack's account (aws:SourceAccount)", () => {
    const trusts = serviceTrusts();
    // Every harness function, the run-time plan role and every plan machine's role.
    expect(trusts.length).toBeGreaterThanOrEqual(12);
    const missing = trusts
      .filter(
        ({ statement }) =>
          statement.Effect === 'Allow' &&
          text(statement.Condition?.StringEquals?.['aws:SourceAccount'] ?? '') !== ACCOUNT,
      )
      .map(({ role, services }) => `${role} (${services.join(', ')})`);
    expect(missing, 'service trusts without aws:SourceAccount').toEqual([]);
  });

  it("holds Step Functions to the platform's own machines (aws:SourceArn), the run-time plan role to the run-time ones", () => {
    const states = serviceTrusts().filter(({ services }) => services.includes('states.amazonaws.com'));
    expect(states.length).toBeGreaterThanOrEqual(2);
    const prefix = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${stack.platform.namePrefix}-`;
    for (const { role, statement } of states) {
      const arns = [statement.Condition?.ArnLike?.['aws:SourceArn'] ?? []].flat().map(text);
      expect(arns.length, role).toBeGreaterThan(0);
      for (const arn of arns) expect(arn.startsWith(prefix), `${role}: ${arn}`).toBe(true);
    }
    const runtimeRole = stack.getLogicalId(stack.platform.runtimePlanRole.node.defaultChild as never);
    const runtime = states.find(({ role }) => role === runtimeRole);
    expect(runtime?.statement.Condition?.StringEquals?.['aws:SourceAccount']).toEqual({
      Ref: 'AWS::AccountId',
    });
    expect([runtime?.statement.Condition?.ArnLike?.['aws:SourceArn']].flat().map(text)).toEqual([
      `${prefix}run-*`,
    ]);
  });
});

/**
 * The harness variables naming a function its reader invokes with InvocationType Event
 * (`invokeAsync`, lambdas/default-deps.ts); the last test below keeps this list whole.
 */
const ASYNC_INVOKED_BY_VARIABLE = ['PLANGATE_NOTIFIER_FUNCTION', 'PLANGATE_PLANNER_FUNCTION'];

describe('asynchronous invocations', () => {
  const refId = (value: unknown): string => {
    const v = value as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
    const id = v.Ref ?? v['Fn::GetAtt']?.[0];
    if (!id) throw new Error(`not a reference to a resource: ${JSON.stringify(value)}`);
    return id;
  };

  /** A queue that is encrypted and refuses requests without TLS. */
  const expectSafeQueue = (queueId: string, what: string) => {
    const queue = resources[queueId];
    expect(queue?.Type, what).toBe('AWS::SQS::Queue');
    expect(
      queue?.Properties.SqsManagedSseEnabled === true || queue?.Properties.KmsMasterKeyId !== undefined,
      `${what}: encrypted`,
    ).toBe(true);
    const tlsOnly = ofType('AWS::SQS::QueuePolicy').some(
      ([, p]) =>
        (p.Properties.Queues as unknown[]).some((q) => refId(q) === queueId) &&
        (p.Properties.PolicyDocument as { Statement: TrustStatement[] }).Statement.some(
          (st) => st.Effect === 'Deny' && st.Condition?.Bool?.['aws:SecureTransport'] === 'false',
        ),
    );
    expect(tlsOnly, `${what}: TLS only`).toBe(true);
  };

  /** The functions invoked asynchronously, by logical id, with who invokes them. */
  const asyncInvoked = (): Map<string, string> => {
    const invoked = new Map<string, string>();
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const variables =
        (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
      for (const name of ASYNC_INVOKED_BY_VARIABLE)
        if (variables[name] !== undefined) invoked.set(refId(variables[name]), `${id} (${name})`);
    }
    for (const [id, rule] of ofType('AWS::Events::Rule'))
      for (const target of (rule.Properties.Targets ?? []) as { Arn: unknown }[]) {
        const arn = target.Arn as { 'Fn::GetAtt'?: [string, string] };
        const targetId = arn['Fn::GetAtt']?.[0];
        if (targetId && resources[targetId]?.Type === 'AWS::Lambda::Function')
          invoked.set(targetId, `rule ${id}`);
      }
    for (const [id, permission] of ofType('AWS::Lambda::Permission'))
      if (/^(s3|sns|events)\./.test(String(permission.Properties.Principal)))
        invoked.set(refId(permission.Properties.FunctionName), `${id} (${permission.Properties.Principal})`);
    return invoked;
  };

  it('sends what every asynchronously invoked function fails on to an encrypted, TLS-only dead-letter queue', () => {
    const invoked = asyncInvoked();
    // The notifier (by the gate and the approvals API) and the planner (by the Plans API).
    const notifierId = stack.getLogicalId(stack.platform.notifier.function.node.defaultChild as never);
    expect(invoked.has(notifierId)).toBe(true);
    expect(invoked.size).toBe(2);
    for (const [id, by] of invoked) {
      const target = (resources[id]?.Properties.DeadLetterConfig as { TargetArn?: unknown } | undefined)
        ?.TargetArn;
      expect(target, `${id}, invoked by ${by}: a dead-letter queue`).toBeDefined();
      expectSafeQueue(refId(target), `${id}'s dead-letter queue`);
    }
  });

  it('records every stream batch the anchor could not process in an encrypted, TLS-only on-failure queue', () => {
    const mappings = ofType('AWS::Lambda::EventSourceMapping');
    expect(mappings.length).toBeGreaterThan(0);
    for (const [id, mapping] of mappings) {
      const destination = (
        mapping.Properties.DestinationConfig as { OnFailure?: { Destination?: unknown } } | undefined
      )?.OnFailure?.Destination;
      expect(destination, `${id}: an on-failure destination`).toBeDefined();
      expectSafeQueue(refId(destination), `${id}'s on-failure destination`);
    }
    expect(stack.platform.failureQueues).toHaveLength(3);
  });

  it('lists every variable a handler invokes asynchronously by (a new invokeAsync call fails here until it is listed)', () => {
    const sources = readdirSync(LAMBDAS_DIR)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => [f, readFileSync(join(LAMBDAS_DIR, f), 'utf8')] as const);
    const callers = sources.filter(([, code]) => /\binvokeAsync\(/.test(code));
    expect(callers.length).toBeGreaterThan(0);
    for (const [file, code] of callers)
      expect(
        ASYNC_INVOKED_BY_VARIABLE.some((name) => code.includes(name)),
        `${file} invokes asynchronously a function none of ${ASYNC_INVOKED_BY_VARIABLE.join(', ')} names`,
      ).toBe(true);
    const eventInvocations = sources.filter(([, code]) =>
      /InvocationType\.Event|InvocationType: 'Event'/.test(code),
    );
    expect(eventInvocations.map(([file]) => file)).toEqual(['default-deps.ts']);
  });
});

describe('alarms', () => {
  const alarms = () =>
    ofType('AWS::CloudWatch::Alarm').map(
      ([id, r]) => ({ id, ...r.Properties }) as Record<string, unknown> & { id: string },
    );
  const alarmOn = (namespace: string, metricName: string, dimensions: unknown) =>
    alarms().filter(
      (a) =>
        a.Namespace === namespace &&
        a.MetricName === metricName &&
        JSON.stringify(a.Dimensions) === JSON.stringify(dimensions),
    );
  const idOf = (construct: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(construct.node.defaultChild as never);

  it('go off on the first occurrence in five minutes, none on missing data', () => {
    const all = alarms();
    expect(all.length).toBe(stack.platform.alarms.all.length);
    for (const a of all)
      expect(a, a.id).toMatchObject({
        Threshold: 1,
        EvaluationPeriods: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        Period: 300,
      });
  });

  it("alarm on every error of each function that is no state machine's task, and on any state machine handler Lambda stopped", () => {
    const tasks = new Set<string>(STATE_MACHINE_HANDLERS);
    const functions = [...stack.platform.harnessFunctions, stack.platform.planCode.function];
    for (const fn of functions) {
      if (tasks.has(fn.handler)) continue;
      const found = alarmOn('AWS/Lambda', 'Errors', [
        { Name: 'FunctionName', Value: { Ref: idOf(fn.function) } },
      ]);
      expect(found, `${fn.handler}: an Errors alarm`).toHaveLength(1);
    }
    // The state machines' handlers throw step failures on purpose: their Errors would cry wolf.
    for (const fn of functions.filter((f) => tasks.has(f.handler)))
      expect(
        alarmOn('AWS/Lambda', 'Errors', [{ Name: 'FunctionName', Value: { Ref: idOf(fn.function) } }]),
      ).toEqual([]);
    const filters = ofType('AWS::Logs::MetricFilter').map(([, r]) => r.Properties);
    for (const fn of functions.filter((f) => tasks.has(f.handler))) {
      const filter = filters.find(
        (f) => JSON.stringify(f.LogGroupName) === JSON.stringify({ Ref: idOf(fn.logGroup) }),
      );
      expect(filter?.FilterPattern, fn.handler).toContain('"Task timed out after"');
      expect(filter?.FilterPattern, fn.handler).toContain('"Runtime.OutOfMemory"');
      const [transformation] = (filter?.MetricTransformations ?? []) as {
        MetricNamespace: string;
        MetricName: string;
      }[];
      expect(
        alarmOn(transformation?.MetricNamespace ?? '', transformation?.MetricName ?? '', undefined),
      ).toHaveLength(1);
    }
    // HarnessErrors, as before: what the handlers' own code counts.
    expect(alarmOn('plangate', 'HarnessErrors', [{ Name: 'service', Value: 'plangate' }])).toHaveLength(1);
  });

  it("alarm when an execution of any of the platform's machines, CDK-deployed or created at run time, fails, times out or is aborted", () => {
    const [[, rule]] = ofType('AWS::Events::Rule') as [[string, Resource]];
    const pattern = rule.Properties.EventPattern as {
      source: string[];
      'detail-type': string[];
      detail: { status: string[]; stateMachineArn: { prefix: unknown }[] };
    };
    expect(rule.Properties.EventBusName).toBeUndefined(); // the default bus, where Step Functions puts them
    expect(pattern.source).toEqual(['aws.states']);
    expect(pattern['detail-type']).toEqual(['Step Functions Execution Status Change']);
    expect(pattern.detail.status.sort()).toEqual(['ABORTED', 'FAILED', 'TIMED_OUT']);
    const prefix = text(pattern.detail.stateMachineArn[0]?.prefix);
    const names = [
      ...ofType('AWS::StepFunctions::StateMachine').map(([, m]) => String(m.Properties.StateMachineName)),
      `${stack.platform.runtimeNamePrefix}-some-plan`,
    ];
    for (const name of names)
      expect(`arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}`.startsWith(prefix), name).toBe(true);
    const [target] = rule.Properties.Targets as { Arn: unknown }[];
    const queue = idOf(stack.platform.alarms.failedExecutionsQueue);
    expect(target?.Arn).toEqual({ 'Fn::GetAtt': [queue, 'Arn'] });
    expect(
      alarmOn('AWS/SQS', 'ApproximateNumberOfMessagesVisible', [
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [queue, 'QueueName'] } },
      ]),
    ).toHaveLength(1);
  });

  it('alarm on API 5xx, on anything in a failure queue, and on a notice that reached nobody', () => {
    expect(
      alarmOn('AWS/ApiGateway', '5xx', [{ Name: 'ApiId', Value: { Ref: idOf(stack.platform.httpApi.api) } }]),
    ).toHaveLength(1);
    for (const queue of stack.platform.failureQueues)
      expect(
        alarmOn('AWS/SQS', 'ApproximateNumberOfMessagesVisible', [
          { Name: 'QueueName', Value: { 'Fn::GetAtt': [idOf(queue), 'QueueName'] } },
        ]),
        queue.node.path,
      ).toHaveLength(1);
    // What the notifier emits (Powertools Metrics, serviceName plangate-notifier).
    expect(
      alarmOn('plangate', 'GateNoticeUndelivered', [{ Name: 'service', Value: 'plangate-notifier' }]),
    ).toHaveLength(1);
  });

  it('notify the alarm topic, every one of them, when one is given, and nobody otherwise', () => {
    const app = testApp();
    const s = new Stack(app, 'Told');
    const topic = new Topic(s, 'Operators');
    const platform = new PlanPlatform(s, 'Platform', {
      alarmTopic: topic,
      sesSender: 'approvals@example.com',
    });
    const told = Object.values(Template.fromStack(s).findResources('AWS::CloudWatch::Alarm')) as Resource[];
    expect(told.length).toBe(platform.alarms.all.length);
    for (const a of told)
      expect(a.Properties.AlarmActions).toEqual([{ Ref: s.getLogicalId(topic.node.defaultChild as never) }]);
    for (const a of alarms()) expect(a.AlarmActions).toBeUndefined();
  });
});

describe('least privilege of the Plans API', () => {
  interface Statement {
    readonly Effect: string;
    readonly Action: string | string[];
    readonly Resource: unknown;
  }
  /** The Allow statements of a role's policies, their resources as text. */
  const allowsOf = (role: { node: { defaultChild?: unknown } }) => {
    const ref = JSON.stringify([{ Ref: stack.getLogicalId(role.node.defaultChild as never) }]);
    return ofType('AWS::IAM::Policy')
      .filter(([, p]) => JSON.stringify(p.Properties.Roles) === ref)
      .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
      .filter((st) => st.Effect === 'Allow')
      .map((st) => ({ actions: [st.Action].flat(), resources: [st.Resource].flat().map(text) }));
  };
  /** Every ARN of the machines deployed with CDK: each machine and a version of it. */
  const cdkMachineArns = () =>
    ofType('AWS::StepFunctions::StateMachine').flatMap(([, m]) => {
      const arn = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${String(m.Properties.StateMachineName)}`;
      return [arn, `${arn}:1`];
    });
  const CHANGES = [
    'states:CreateStateMachine',
    'states:UpdateStateMachine',
    'states:PublishStateMachineVersion',
    'states:StartExecution',
    'states:DeleteStateMachine',
  ];

  it('may create, update, publish and start only the machines of run-time plans, never one deployed with CDK', () => {
    const cdkArns = cdkMachineArns();
    expect(cdkArns.length).toBeGreaterThan(4);
    for (const [who, role] of [
      ['the Plans API', stack.platform.plansApi.role],
      ['the planner', stack.platform.planner?.role],
      ['the runtime plan role', stack.platform.runtimePlanRole],
    ] as const) {
      if (!role) throw new Error(`${who} is deployed in this test`);
      const changing = allowsOf(role).filter((st) => st.actions.some((a) => CHANGES.includes(a)));
      expect(changing.length, who).toBeGreaterThan(0);
      for (const st of changing)
        for (const pattern of st.resources) {
          expect(pattern, who).toContain(`:stateMachine:${stack.platform.runtimeNamePrefix}-`);
          for (const arn of cdkArns)
            expect(matchesWildcard(pattern, arn), `${who}: ${pattern} matches ${arn}`).toBe(false);
        }
    }
    // What it does create matches: a run-time plan's machine and its version.
    const runtimeArn = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${stack.platform.runtimeNamePrefix}-release-api`;
    const create = allowsOf(stack.platform.plansApi.role).find((st) =>
      st.actions.includes('states:UpdateStateMachine'),
    );
    expect(create?.resources.some((p) => matchesWildcard(p, runtimeArn))).toBe(true);
    expect(create?.resources.some((p) => matchesWildcard(p, `${runtimeArn}:3`))).toBe(true);
  });

  it('stops no execution', () => {
    for (const st of allowsOf(stack.platform.plansApi.role))
      expect(st.actions).not.toContain('states:StopExecution');
  });

  it('refuses a plan deployed with CDK a name under the run-time prefix, naming the way out', () => {
    const s = new PlanPlatformStack(testApp(), 'Apart', { platform: { sesSender: 'approvals@example.com' } });
    expect(
      () =>
        new PlanStateMachine(s, 'RunLike', {
          planFile: join(PROJECT_ROOT, 'examples/release-api.json'),
          platform: s.platform,
          stateMachineName: 'plangate-run-release-api',
        }),
    ).toThrow(
      /"plangate-run-release-api" is under "plangate-run-".*give this plan a stateMachineName outside it/,
    );
  });
});

describe('stack outputs', () => {
  const ref = (construct: { node: { defaultChild?: unknown } }) => ({
    Ref: stack.getLogicalId(construct.node.defaultChild as never),
  });

  it('name the API and the approval page, the approvers, every table, the bus, the run-time role and every plan machine', () => {
    const platform = stack.platform;
    const value = (name: string) => outputs[name]?.Value;
    expect(value('HttpApiUrl')).toEqual({
      'Fn::GetAtt': [stack.getLogicalId(platform.httpApi.api.node.defaultChild as never), 'ApiEndpoint'],
    });
    expect(text(value('ApprovalPageUrl'))).toBe(`${text(value('HttpApiUrl'))}/approvals/{approvalId}`);
    expect(value('ApproverUserPoolId')).toEqual(ref(platform.approverPool as never));
    expect(value('ApproverScriptClientId')).toEqual(ref(platform.approverPoolClient as never));
    expect(value('ApprovalPageClientId')).toEqual(ref(platform.approverSignIn?.pageClient as never));
    expect(text(value('ApproverSignInUrl'))).toContain('amazoncognito.com');
    for (const [name, table] of [
      ['EventsTable', platform.eventsTable],
      ['GatesTable', platform.gatesTable],
      ['JoinsTable', platform.joinsTable],
      ['OutputsTable', platform.outputsTable],
      ['DraftsTable', platform.draftsTable],
      ['VersionsTable', platform.versionsTable],
      ['PlansTable', platform.plansTable],
    ] as const)
      expect(value(name), name).toEqual(ref(table.table));
    expect(value('AnchorBucket')).toEqual(ref(platform.anchors.bucket));
    expect(value('EventBusName')).toEqual(ref(platform.eventBus.bus));
    expect(value('RuntimePlanRoleArn')).toEqual({
      'Fn::GetAtt': [stack.getLogicalId(platform.runtimePlanRole.node.defaultChild as never), 'Arn'],
    });
    expect(value('FailedExecutionsQueueUrl')).toEqual(ref(platform.alarms.failedExecutionsQueue));
    expect(stack.plans.size).toBeGreaterThan(4);
    for (const [id, machine] of stack.plans) {
      expect(value(`${planOutputName(id)}StateMachineArn`), id).toEqual(ref(machine.stateMachine));
      expect(value(`${planOutputName(id)}VersionArn`), id).toEqual({
        'Fn::GetAtt': [stack.getLogicalId(machine.version), 'Arn'],
      });
    }
    for (const [name, output] of Object.entries(outputs)) expect(output.Description, name).toBeTruthy();
  });

  it('are the ones docs/deploy.md lists, and no other (with Slack, its request URL; with an outside issuer, no user pool)', () => {
    const section =
      readFileSync(join(PROJECT_ROOT, 'docs/deploy.md'), 'utf8').split('### Stack outputs')[1] ?? '';
    const documented = [...section.split('\n### ')[0]!.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
    const slackStack = new PlanPlatformStack(testApp(), 'WithSlack', {
      platform: {
        slack: {
          botToken: Secret.fromSecretNameV2(new Stack(), 'Bot', 'plangate-platform/bot'),
          signingSecret: Secret.fromSecretNameV2(new Stack(), 'Signing', 'plangate-platform/signing'),
          channel: 'C0123456789',
          approvers: { U0ALICE: 'alice@example.com' },
        },
        approverJwt: { issuer: 'https://login.example.com/', audience: ['plangate'] },
      },
    });
    const slackOutputs = Object.keys(Template.fromStack(slackStack).toJSON().Outputs ?? {});
    expect(slackOutputs).toContain('SlackInteractionsUrl');
    expect(slackOutputs).not.toContain('ApproverUserPoolId');
    const plans = [...stack.plans.keys()].map(planOutputName);
    const general = (name: string) => {
      const plan = plans.find((p) => name === `${p}StateMachineArn` || name === `${p}VersionArn`);
      return plan ? name.replace(plan, '<PlanId>') : name;
    };
    const synthesized = new Set([...Object.keys(outputs), ...slackOutputs].map(general));
    expect([...synthesized].sort()).toEqual([...documented].sort());
  });
});

describe('someone is always told', () => {
  const platformIn = (props: ConstructorParameters<typeof PlanPlatform>[2]) => {
    const s = new Stack(testApp(), 'Told');
    return { stack: s, platform: new PlanPlatform(s, 'Platform', props) };
  };

  it('refuses a platform that can tell no approver (no sesSender, no slack), naming the props that fix it', () => {
    expect(() => platformIn({})).toThrow(
      /no approver would ever be told that a gate waits: neither sesSender .* nor slack .* or set unnotifiedGatesAcknowledged to the reason/,
    );
    expect(() =>
      platformIn({ approverJwt: { issuer: 'https://login.example.com/', audience: ['x'] } }),
    ).toThrow(/unnotifiedGatesAcknowledged/);
    // Addresses to copy are no channel: without a sender nothing is emailed.
    expect(() =>
      platformIn({ approvalEmails: ['ops@example.com'], unnotifiedGatesAcknowledged: 'x' }),
    ).toThrow(/approvalEmails \(ops@example\.com\) are never emailed without sesSender/);
  });

  it('takes the acknowledgement only with a reason, and only when it is true', () => {
    expect(() => platformIn({ unnotifiedGatesAcknowledged: '  ' })).toThrow(
      /must say, in words known at synth, why/,
    );
    expect(() =>
      platformIn({ sesSender: 'approvals@example.com', unnotifiedGatesAcknowledged: 'nobody reads email' }),
    ).toThrow(/unnotifiedGatesAcknowledged is set, but approvers are notified \(sesSender\): remove it/);
    expect(() => platformIn({ sesSender: ' ' })).toThrow(/sesSender is empty/);
  });

  it('synthesizes with the reason, and warns while nobody is told', () => {
    const { stack: s, platform } = platformIn({
      unnotifiedGatesAcknowledged: ' approvers watch GET /plans/{id} ',
    });
    expect(platform.unnotifiedGatesAcknowledged).toBe('approvers watch GET /plans/{id}');
    Annotations.fromStack(s).hasWarning(
      '/Told/Platform',
      Match.stringLikeRegexp('no approver is told of a gate .*: approvers watch GET /plans/\\{id\\}'),
    );
    const notifying = platformIn({ sesSender: 'approvals@example.com' });
    expect(notifying.platform.unnotifiedGatesAcknowledged).toBeUndefined();
    Annotations.fromStack(notifying.stack).hasNoWarning('*', Match.stringLikeRegexp('no approver is told'));
  });

  it('is said in the app: without a sender its platform acknowledges, visibly, that nobody is told; with one it emails', async () => {
    expect(stack.platform.unnotifiedGatesAcknowledged).toBe(APP_UNNOTIFIED_REASON);
    const app = new App({
      context: { 'aws:cdk:bundling-stacks': [], [APP_CONTEXT.sesSender]: 'approvals@example.com' },
    });
    const emailing = await buildPlangateApp(app);
    expect(emailing.platform.unnotifiedGatesAcknowledged).toBeUndefined();
    expect(emailing.platform.sesSender).toBe('approvals@example.com');
  }, 60_000);
});

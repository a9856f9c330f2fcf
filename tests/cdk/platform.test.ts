/** The platform's resources, as CloudFormation will see them. */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { LAMBDAS_DIR } from '../../lib/cdk/paths.ts';
import { PlanPlatform } from '../../lib/cdk/plan-platform.ts';
import { PlanPlatformStack } from '../../lib/cdk/plan-platform-stack.ts';
import { PLACEHOLDERS } from '../../lib/compiler/index.ts';
import { HARNESS_HANDLERS, type HarnessHandlerName, TABLE_NAME_ENV } from '../../lib/runtime/catalog.ts';
import {
  DRAFTS_TABLE,
  EVENTS_TABLE,
  GATES_TABLE,
  JOINS_TABLE,
  OUTPUTS_TABLE,
} from '../../lib/runtime/journal/tables.ts';
import { HARNESS_ERRORS_METRIC } from '../../lib/runtime/telemetry/telemetry.ts';
import { testApp, UNNOTIFIED } from './support.ts';

const PLANNER_MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
let stack: PlanPlatformStack;
let template: Template;

beforeAll(() => {
  const app = testApp();
  stack = new PlanPlatformStack(app, 'Platform', {
    platform: { sesSender: 'approvals@example.com', planner: { model: PLANNER_MODEL } },
  });
  template = Template.fromStack(stack);
});

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };

describe('events table', () => {
  it('is on-demand, point-in-time recoverable, deletion-protected and retained', () => {
    const id = stack.getLogicalId(stack.platform.eventsTable.table.node.defaultChild as never);
    const table = template.toJSON().Resources[id] as Resource;
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      DeletionProtectionEnabled: true,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
  });

  it('has the keys and auditor indexes of lib/runtime/journal/tables.ts', () => {
    const id = stack.getLogicalId(stack.platform.eventsTable.table.node.defaultChild as never);
    const table = template.toJSON().Resources[id] as Resource;
    expect(table.Properties.KeySchema).toEqual([
      { AttributeName: EVENTS_TABLE.partitionKey.name, KeyType: 'HASH' },
      { AttributeName: EVENTS_TABLE.sortKey?.name, KeyType: 'RANGE' },
    ]);
    const indexes = table.Properties.GlobalSecondaryIndexes as { IndexName: string; KeySchema: unknown }[];
    expect(indexes.map((i) => i.IndexName)).toEqual(
      EVENTS_TABLE.globalSecondaryIndexes.map((i) => i.indexName),
    );
    for (const def of EVENTS_TABLE.globalSecondaryIndexes) {
      expect(indexes.find((i) => i.IndexName === def.indexName)?.KeySchema).toEqual([
        { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
        ...(def.sortKey ? [{ AttributeName: def.sortKey.name, KeyType: 'RANGE' }] : []),
      ]);
    }
  });

  it('denies every principal updating or deleting events, in its resource policy', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      ResourcePolicy: {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Action: Match.arrayWith([
                'dynamodb:UpdateItem',
                'dynamodb:DeleteItem',
                'dynamodb:BatchWriteItem',
              ]),
            }),
          ]),
        },
      },
    });
  });

  it('gives every journal writer an explicit Deny of UpdateItem/DeleteItem/BatchWriteItem and no such Allow', () => {
    const tableArn = {
      'Fn::GetAtt': [stack.getLogicalId(stack.platform.eventsTable.table.node.defaultChild as never), 'Arn'],
    };
    const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Resource[];
    const harnessRoles = stack.platform.journalWriters.map((fn) => ({
      Ref: stack.getLogicalId(fn.role.node.defaultChild as never),
    }));
    for (const role of harnessRoles) {
      const statements = policies
        .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([role]))
        .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
      const deny = statements.find((s) => s.Effect === 'Deny');
      expect(deny, `a Deny for ${role.Ref}`).toBeDefined();
      expect(deny?.Action).toEqual(
        expect.arrayContaining(['dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem']),
      );
      expect(deny?.Resource).toEqual(tableArn);
      const allowsMutation = statements.some(
        (s) =>
          s.Effect === 'Allow' &&
          JSON.stringify(s.Resource).includes(JSON.stringify(tableArn)) &&
          [s.Action].flat().some((a) => /UpdateItem|DeleteItem|BatchWriteItem|PartiQL/.test(String(a))),
      );
      expect(allowsMutation, `${role.Ref} may mutate events`).toBe(false);
    }
  });
});

describe('working tables', () => {
  it('drafts: keys from tables.ts, kept (no TTL), on-demand, PITR', () => {
    const table = stack.platform.draftsTable.table;
    const resource = template.toJSON().Resources[
      stack.getLogicalId(table.node.defaultChild as never)
    ] as Resource;
    expect(resource.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      KeySchema: [{ AttributeName: DRAFTS_TABLE.partitionKey.name, KeyType: 'HASH' }],
    });
    expect(resource.Properties.TimeToLiveSpecification).toBeUndefined();
  });

  it.each([
    ['gates', GATES_TABLE],
    ['joins', JOINS_TABLE],
    ['outputs', OUTPUTS_TABLE],
  ] as const)('%s: keys from tables.ts, TTL, on-demand, PITR', (name, def) => {
    const table = stack.platform[`${name}Table`].table;
    const resource = template.toJSON().Resources[
      stack.getLogicalId(table.node.defaultChild as never)
    ] as Resource;
    expect(resource.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: def.timeToLiveAttribute, Enabled: true },
      KeySchema: [{ AttributeName: def.partitionKey.name, KeyType: 'HASH' }],
    });
  });
});

describe('event bus', () => {
  it('has an archive of every plangate event', () => {
    template.resourceCountIs('AWS::Events::EventBus', 1);
    template.hasResourceProperties('AWS::Events::Archive', {
      SourceArn: {
        'Fn::GetAtt': [stack.getLogicalId(stack.platform.eventBus.bus.node.defaultChild as never), 'Arn'],
      },
      EventPattern: { source: ['plangate'] },
      RetentionDays: 365,
    });
  });
});

describe('harness functions', () => {
  it('exist for every handler module in lambdas/ (none skipped silently)', () => {
    const handlerModules = readdirSync(LAMBDAS_DIR).filter(
      (file) =>
        file.endsWith('.ts') &&
        /export\s+(const|async\s+function|function)\s+handler\b/.test(
          readFileSync(join(LAMBDAS_DIR, file), 'utf8'),
        ),
    );
    const listed = Object.values(HARNESS_HANDLERS).map((spec) => basename(spec.entry));
    expect(listed.sort()).toEqual(handlerModules.sort());
    template.resourceCountIs('AWS::Lambda::Function', listed.length);
  });

  it('run Node 20 on arm64 with X-Ray active tracing (all but the plan-process function) and their own log group', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Resource[];
    expect(functions.length).toBeGreaterThanOrEqual(5);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
      });
      // Plan code's function holds no X-Ray writes (docs/deploy.md, "What plan code runs as").
      const planCode = fn.Properties.Description === HARNESS_HANDLERS.planProcess.description;
      expect(fn.Properties.TracingConfig).toEqual(planCode ? undefined : { Mode: 'Active' });
    }
    const logGroups = Object.values(template.findResources('AWS::Logs::LogGroup')) as Resource[];
    expect(logGroups.every((g) => g.Properties.RetentionInDays === 90)).toBe(true);
  });

  it('use no AWS managed policy', () => {
    for (const role of Object.values(template.findResources('AWS::IAM::Role')) as Resource[]) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('get every table name and the bus through the environment names lib/runtime reads', () => {
    const gate = stack.platform.functions.gate.function;
    const resource = template.toJSON().Resources[
      stack.getLogicalId(gate.node.defaultChild as never)
    ] as Resource;
    const variables = (resource.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    for (const env of Object.values(TABLE_NAME_ENV)) expect(variables).toHaveProperty(env);
    expect(variables).toHaveProperty('PLANGATE_EVENT_BUS');
    expect(variables).toHaveProperty('PLANGATE_APPROVAL_SIGNING_KEY_SECRET');
  });
});

describe('HTTP API', () => {
  it('signs plan routes with IAM, answers with a JWT, and leaves only the approval page open', () => {
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')) as Resource[];
    const auth = Object.fromEntries(
      routes.map((r) => [r.Properties.RouteKey, r.Properties.AuthorizationType]),
    );
    expect(auth).toEqual({
      'POST /plans': 'AWS_IAM',
      'GET /drafts/{draftId}': 'AWS_IAM',
      'GET /plans/{executionId}': 'AWS_IAM',
      'GET /executions/{executionId}/events': 'AWS_IAM',
      'GET /executions/{executionId}/progress': 'AWS_IAM',
      'GET /openapi.json': 'NONE',
      'GET /approvals/{approvalId}': 'NONE',
      'GET /approvals/{approvalId}/progress': 'NONE',
      'POST /approvals/{approvalId}': 'JWT',
      'POST /approvals/{approvalId}/as-recipient': 'NONE',
      'POST /slack/interactions': 'NONE',
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: { Issuer: Match.anyValue(), Audience: Match.anyValue() },
    });
    template.hasResourceProperties('AWS::Cognito::UserPool', {
      MfaConfiguration: 'ON',
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      // An email changes only once the new one is verified; the old one stays until then.
      AutoVerifiedAttributes: ['email'],
      UserAttributeUpdateSettings: { AttributesRequireVerificationBeforeUpdate: ['email'] },
    });
    // No app client lets an approver write their own email.
    const written = Object.values(template.findResources('AWS::Cognito::UserPoolClient')).map(
      (c) => (c as Resource).Properties.WriteAttributes,
    );
    expect(written).toEqual([['name'], ['name']]);
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
    });
  });

  it('signs approvers in on the page: hosted UI domain, a public code+PKCE client returning to the API, its id in the page env', () => {
    template.resourceCountIs('AWS::Cognito::UserPoolDomain', 1);
    template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      GenerateSecret: false,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthScopes: ['openid', 'email'],
      SupportedIdentityProviders: ['COGNITO'],
      CallbackURLs: [
        { 'Fn::Join': ['', [Match.anyValue(), Match.stringLikeRegexp('/approvals/signed-in$')]] },
      ],
    });
    const clients = template.findResources('AWS::Cognito::UserPoolClient') as Record<string, Resource>;
    const page = Object.keys(clients).find((id) => clients[id]?.Properties.AllowedOAuthFlows !== undefined);
    // The answer route's authorizer accepts the page client's ID tokens (and the scripts' client).
    const authorizer = Object.values(template.findResources('AWS::ApiGatewayV2::Authorizer'))[0] as Resource;
    expect(JSON.stringify(authorizer.Properties.JwtConfiguration)).toContain(`"Ref":"${page}"`);
    const resources = template.toJSON().Resources as Record<string, Resource>;
    const env = (
      resources[stack.getLogicalId(stack.platform.approvalsApi.function.node.defaultChild as never)]!
        .Properties.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    expect(env.PLANGATE_COGNITO_CLIENT_ID).toEqual({ Ref: page });
    expect(JSON.stringify(env.PLANGATE_COGNITO_DOMAIN)).toContain('amazoncognito.com');
    expect(env).toHaveProperty('PLANGATE_API_URL');
    expect(JSON.stringify(env)).not.toMatch(/ClientSecret/);
  });

  it('uses the given OpenID Connect issuer instead of a user pool', () => {
    const s = new Stack(testApp(), 'Oidc');
    new PlanPlatform(s, 'Platform', {
      approverJwt: { issuer: 'https://login.example.com/', audience: ['plangate'] },
      ...UNNOTIFIED,
    });
    const t = Template.fromStack(s);
    t.resourceCountIs('AWS::Cognito::UserPool', 0);
    t.resourceCountIs('AWS::Cognito::UserPoolDomain', 0);
    t.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: { Issuer: 'https://login.example.com/', Audience: ['plangate'] },
    });
  });

  it('gives the Plans API what run-time deployment needs, and the approvals API the signing key', () => {
    const resources = template.toJSON().Resources as Record<string, Resource>;
    const variables = (fn: { node: { defaultChild?: unknown } }) =>
      (
        resources[stack.getLogicalId(fn.node.defaultChild as never)]!.Properties.Environment as {
          Variables: Record<string, unknown>;
        }
      ).Variables;
    const plans = variables(stack.platform.plansApi.function);
    for (const name of [
      'PLANGATE_RUNTIME_PLAN_ROLE_ARN',
      'PLANGATE_SUBSTITUTIONS',
      'PLANGATE_NAME_PREFIX',
      'PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN',
    ]) {
      expect(plans).toHaveProperty(name);
    }
    expect(variables(stack.platform.approvalsApi.function)).toHaveProperty(
      'PLANGATE_APPROVAL_SIGNING_KEY_SECRET',
    );
    // Run-time plans are named apart from plans deployed as code (plangate-<planId>).
    expect(plans.PLANGATE_NAME_PREFIX).toBe('plangate-run');
    // Every placeholder the compiler uses is substituted at run time too.
    const substitutions = JSON.stringify(plans.PLANGATE_SUBSTITUTIONS);
    for (const placeholder of Object.values(PLACEHOLDERS)) expect(substitutions).toContain(placeholder);
  });
});

describe('grant helpers', () => {
  it('grantReadEvents: Scan on the events table, which `plangate audit verify --all` walks', () => {
    const s = new PlanPlatformStack(testApp(), 'Auditor', { platform: UNNOTIFIED });
    const auditor = new Role(s, 'Auditor', { assumedBy: new AccountRootPrincipal() });
    s.platform.grantReadEvents(auditor);
    const role = { Ref: s.getLogicalId(auditor.node.defaultChild as never) };
    const eventsArn = JSON.stringify({
      'Fn::GetAtt': [s.getLogicalId(s.platform.eventsTable.table.node.defaultChild as never), 'Arn'],
    });
    const scans = (Object.values(Template.fromStack(s).findResources('AWS::IAM::Policy')) as Resource[])
      .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([role]))
      .flatMap(
        (p) =>
          (p.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement,
      )
      .filter((st) => [st.Action].flat().includes('dynamodb:Scan'));
    expect(scans.some((st) => JSON.stringify(st.Resource).includes(eventsArn))).toBe(true);
  });

  it('grantAnswerGates: gates read/write, task responses on plangate-* machines, append-only events', () => {
    const app = testApp();
    const s = new PlanPlatformStack(app, 'Grants', { platform: UNNOTIFIED });
    const approver = new Role(s, 'Approver', { assumedBy: new AccountRootPrincipal() });
    s.platform.grantAnswerGates(approver);
    const t = Template.fromStack(s);
    const role = { Ref: s.getLogicalId(approver.node.defaultChild as never) };
    const statements = (Object.values(t.findResources('AWS::IAM::Policy')) as Resource[])
      .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([role]))
      .flatMap(
        (p) =>
          (
            p.Properties.PolicyDocument as {
              Statement: { Effect: string; Action: unknown; Resource: unknown }[];
            }
          ).Statement,
      );
    const actions = (effect: string) =>
      statements.filter((st) => st.Effect === effect).flatMap((st) => [st.Action].flat() as string[]);
    expect(actions('Allow')).toEqual(
      expect.arrayContaining([
        'dynamodb:UpdateItem',
        'states:SendTaskSuccess',
        'states:SendTaskFailure',
        'dynamodb:PutItem',
        'events:PutEvents',
      ]),
    );
    expect(actions('Deny')).toEqual(
      expect.arrayContaining(['dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem']),
    );
    const taskResponse = statements.find((st) => [st.Action].flat().includes('states:SendTaskSuccess'));
    expect(JSON.stringify(taskResponse?.Resource)).toContain(':stateMachine:plangate-*');
    // UpdateItem is allowed on the gates table only, never on the events table.
    const eventsArn = JSON.stringify({
      'Fn::GetAtt': [s.getLogicalId(s.platform.eventsTable.table.node.defaultChild as never), 'Arn'],
    });
    for (const st of statements.filter(
      (x) => x.Effect === 'Allow' && [x.Action].flat().includes('dynamodb:UpdateItem'),
    )) {
      expect(JSON.stringify(st.Resource)).not.toContain(eventsArn);
    }
    expect(new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName)).toEqual([]);
  });

  it("grantWorker: exactly the activity worker actions (and ListActivities to find the activity by name), on every plangate-* activity or on one target's, nag-clean", () => {
    const app = testApp();
    const s = new PlanPlatformStack(app, 'Workers', { platform: UNNOTIFIED });
    const every = new Role(s, 'EveryWorker', { assumedBy: new AccountRootPrincipal() });
    const coder = new Role(s, 'CoderWorker', { assumedBy: new AccountRootPrincipal() });
    s.platform.grantWorker(every);
    s.platform.grantWorker(coder, 'coder');
    const t = Template.fromStack(s);
    const statementsOf = (grantee: Role) => {
      const role = { Ref: s.getLogicalId(grantee.node.defaultChild as never) };
      return (Object.values(t.findResources('AWS::IAM::Policy')) as Resource[])
        .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([role]))
        .flatMap(
          (p) =>
            (p.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] })
              .Statement,
        );
    };
    const worker = [
      'states:GetActivityTask',
      'states:SendTaskSuccess',
      'states:SendTaskFailure',
      'states:SendTaskHeartbeat',
    ];
    for (const [grantee, resource] of [
      [every, ':activity:plangate-*'],
      [coder, ':activity:plangate-coder"'],
    ] as const) {
      const statements = statementsOf(grantee);
      expect(statements.flatMap((st) => [st.Action].flat())).toEqual(['states:ListActivities', ...worker]);
      expect(statements[0]?.Resource).toBe('*');
      expect(JSON.stringify(statements[1]?.Resource)).toContain(resource);
    }
    expect(new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('notifier', () => {
  it('sends as the SES sender only, posts to Slack with the bot token from its secret, and is what the gate invokes; the approvals API verifies Slack clicks', () => {
    const app = testApp();
    const s = new Stack(app, 'Notify');
    const botToken = new Secret(s, 'SlackBotToken');
    const signingSecret = new Secret(s, 'SlackSigningSecret');
    const platform = new PlanPlatform(s, 'Platform', {
      sesSender: 'approvals@example.com',
      approvalEmails: ['ops@example.com', 'audit@example.com'],
      slack: {
        botToken,
        signingSecret,
        channel: 'C0APPROVALS',
        approvers: { U0ALICE: 'alice@example.com' },
      },
    });
    const t = Template.fromStack(s);
    const resources = t.toJSON().Resources as Record<string, Resource>;
    const notifier = platform.notifier;
    const fn = resources[s.getLogicalId(notifier.function.node.defaultChild as never)]!;
    expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toMatchObject({
      PLANGATE_SES_SENDER: 'approvals@example.com',
      PLANGATE_NOTIFY_EMAILS: 'ops@example.com,audit@example.com',
      PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN: { Ref: s.getLogicalId(botToken.node.defaultChild as never) },
      PLANGATE_SLACK_CHANNEL: 'C0APPROVALS',
    });
    // Only the approvals API verifies clicks: the notifier never sees the signing secret.
    expect(JSON.stringify(fn.Properties)).not.toContain(
      s.getLogicalId(signingSecret.node.defaultChild as never),
    );
    const approvals = resources[s.getLogicalId(platform.approvalsApi.function.node.defaultChild as never)]!;
    expect(
      (approvals.Properties.Environment as { Variables: Record<string, unknown> }).Variables,
    ).toMatchObject({
      PLANGATE_SLACK_SIGNING_SECRET_SECRET_ARN: {
        Ref: s.getLogicalId(signingSecret.node.defaultChild as never),
      },
      PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN: { Ref: s.getLogicalId(botToken.node.defaultChild as never) },
      PLANGATE_SLACK_APPROVERS: 'U0ALICE=alice@example.com',
    });
    const slackRoute = (Object.values(t.findResources('AWS::ApiGatewayV2::Route')) as Resource[]).find(
      (r) => r.Properties.RouteKey === 'POST /slack/interactions',
    );
    expect(slackRoute?.Properties.AuthorizationType ?? 'NONE').toBe('NONE');
    const statementsOf = (role: { node: { defaultChild?: unknown } }) =>
      (Object.values(t.findResources('AWS::IAM::Policy')) as Resource[])
        .filter(
          (p) =>
            JSON.stringify(p.Properties.Roles) ===
            JSON.stringify([{ Ref: s.getLogicalId(role.node.defaultChild as never) }]),
        )
        .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
    const ses = statementsOf(notifier.role).find((st) => st.Action === 'ses:SendEmail');
    expect(JSON.stringify(ses?.Resource)).toContain(':identity/approvals@example.com');
    expect(JSON.stringify(ses?.Resource)).toContain(':identity/example.com');
    expect(JSON.stringify(ses?.Resource)).not.toContain('identity/*');
    const gate = platform.functions.gate;
    const gateFn = resources[s.getLogicalId(gate.function.node.defaultChild as never)]!;
    expect(
      (gateFn.Properties.Environment as { Variables: Record<string, unknown> }).Variables,
    ).toHaveProperty('PLANGATE_NOTIFIER_FUNCTION');
    const invoke = statementsOf(gate.role).find((st) => st.Action === 'lambda:InvokeFunction');
    expect(invoke?.Resource).toEqual({
      'Fn::GetAtt': [s.getLogicalId(notifier.function.node.defaultChild as never), 'Arn'],
    });
    // A new revision (an approval with modifications) is sent to the approvers by the approvals API.
    expect(
      (approvals.Properties.Environment as { Variables: Record<string, unknown> }).Variables,
    ).toHaveProperty('PLANGATE_NOTIFIER_FUNCTION');
    expect(
      statementsOf(platform.approvalsApi.role).find((st) => st.Action === 'lambda:InvokeFunction')?.Resource,
    ).toEqual({ 'Fn::GetAtt': [s.getLogicalId(notifier.function.node.defaultChild as never), 'Arn'] });
    const platformFindings = new AwsSolutionsChecks()
      .validateScope(app)
      .violations.filter((v) =>
        v.violatingResources.some((r) => r.constructPath?.startsWith('Notify/Platform')),
      );
    expect(platformFindings.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('planner', () => {
  const statementsOf = (fn: { role?: { node: { defaultChild?: unknown } } }) =>
    (Object.values(template.findResources('AWS::IAM::Policy')) as Resource[])
      .filter(
        (p) =>
          JSON.stringify(p.Properties.Roles) ===
          JSON.stringify([{ Ref: stack.getLogicalId(fn.role?.node.defaultChild as never) }]),
      )
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
  const variablesOf = (fn: { node: { defaultChild?: unknown } }) => {
    const resource = (template.toJSON().Resources as Record<string, Resource>)[
      stack.getLogicalId(fn.node.defaultChild as never)
    ];
    if (!resource) throw new Error('no such function in the template');
    return (resource.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
  };

  it('is what the Plans API invokes for a goal, and may invoke only its one model', () => {
    const planner = stack.platform.planner?.function;
    const plans = stack.platform.plansApi?.function;
    if (!planner || !plans) throw new Error('the planner and the Plans API are deployed');
    expect(variablesOf(plans)).toHaveProperty('PLANGATE_PLANNER_FUNCTION');
    const invoke = statementsOf(plans).find((st) => st.Action === 'lambda:InvokeFunction');
    expect(invoke?.Resource).toEqual({
      'Fn::GetAtt': [stack.getLogicalId(planner.node.defaultChild as never), 'Arn'],
    });
    expect(variablesOf(planner)).toMatchObject({
      PLANGATE_PLANNER_PROVIDER: 'bedrock',
      PLANGATE_PLANNER_MODEL: PLANNER_MODEL,
      PLANGATE_RUNTIME_PLAN_ROLE_ARN: expect.anything(),
      PLANGATE_DRAFTS_TABLE: expect.anything(),
    });
    const bedrock = statementsOf(planner).find((st) => st.Action === 'bedrock:InvokeModel');
    const resources = JSON.stringify(bedrock?.Resource);
    expect(resources).toContain('foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0');
    expect(resources).toContain(`inference-profile/${PLANNER_MODEL}`);
    expect(resources).not.toMatch(/foundation-model\/\*/);
    const findings = new AwsSolutionsChecks()
      .validateScope(stack.node.root)
      .violations.filter((v) => v.violatingResources.some((r) => r.constructPath?.includes('Planner')));
    expect(findings.map((v) => v.ruleName)).toEqual([]);
  });

  it('is absent without a planner configured: goals are refused', () => {
    const app = testApp();
    const s = new Stack(app, 'NoPlanner');
    const platform = new PlanPlatform(s, 'Platform', UNNOTIFIED);
    expect(platform.planner).toBeUndefined();
    expect(JSON.stringify(Template.fromStack(s).toJSON())).not.toContain('PLANGATE_PLANNER_FUNCTION');
  });
});

describe('policy', () => {
  it('ships the policy directory with every harness Lambda and names it in the environment', () => {
    const app = testApp();
    const own = new PlanPlatformStack(app, 'PolicyPlatform', {
      platform: { policyDir: join(import.meta.dirname, '../../policies/default'), ...UNNOTIFIED },
    });
    const functions = Object.values(
      Template.fromStack(own).findResources('AWS::Lambda::Function'),
    ) as Resource[];
    expect(functions.length).toBeGreaterThan(5);
    for (const fn of functions) {
      const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> } | undefined)
        ?.Variables;
      // Only the harness Lambdas (CDK's own custom-resource functions carry no plangate settings).
      if (variables?.PLANGATE_EVENT_BUS === undefined) continue;
      expect(variables.PLANGATE_POLICY_DIR).toBe('policies');
    }
  });
});

describe('harness environment', () => {
  /** Every harness function of a template, by its catalog entry (found by its description). */
  const functionsOf = (t: Template): [HarnessHandlerName, Record<string, unknown>][] =>
    (Object.values(t.findResources('AWS::Lambda::Function')) as Resource[]).map((fn) => {
      const entry = Object.entries(HARNESS_HANDLERS).find(
        ([, spec]) => spec.description === fn.Properties.Description,
      );
      if (!entry)
        throw new Error(`a function the catalog does not list: ${String(fn.Properties.Description)}`);
      const variables = (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)
        ?.Variables;
      return [entry[0] as HarnessHandlerName, variables ?? {}];
    });

  const configurations = (): [string, Template][] => {
    const app = testApp();
    const full = new Stack(app, 'Everything');
    new PlanPlatform(full, 'Platform', {
      sesSender: 'approvals@example.com',
      approvalEmails: ['ops@example.com'],
      slack: {
        botToken: new Secret(full, 'Bot'),
        signingSecret: new Secret(full, 'Signing'),
        channel: 'C0APPROVALS',
        approvers: { U0ALICE: 'alice@example.com' },
      },
      planner: {
        provider: 'openai',
        model: 'gpt-test',
        baseUrl: 'https://models.example.com/v1',
        apiKey: new Secret(full, 'ApiKey'),
        maxRounds: 3,
      },
      logLevel: 'DEBUG',
    });
    const bare = new Stack(app, 'Bare');
    new PlanPlatform(bare, 'Platform', {
      approverJwt: { issuer: 'https://issuer.example.com', audience: ['plangate'] },
      ...UNNOTIFIED,
    });
    return [
      ['SES and a Bedrock planner', template],
      ['SES, Slack and an OpenAI-compatible planner', Template.fromStack(full)],
      ['nothing optional, an outside JWT issuer', Template.fromStack(bare)],
    ];
  };

  it('sets on every function exactly the variables its catalog schema lists, and they parse as the Lambda parses them at cold start', () => {
    for (const [configuration, t] of configurations()) {
      const seen = new Set<HarnessHandlerName>();
      for (const [handler, variables] of functionsOf(t)) {
        seen.add(handler);
        const schema = HARNESS_HANDLERS[handler].env;
        const listed = Object.keys(schema.shape);
        for (const name of Object.keys(variables))
          expect(
            listed,
            `${configuration}: ${handler} gets ${name}, which its schema does not list`,
          ).toContain(name);
        // Deploy-time values (ARNs, names, URLs) are tokens in the template: any URL stands in for them.
        const resolved = Object.fromEntries(
          Object.entries(variables).map(([name, value]) => [
            name,
            typeof value === 'string' ? value : 'https://resolved.at.deploy.example',
          ]),
        );
        const parsed = schema.safeParse(resolved);
        expect(
          parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`),
          `${configuration}: ${handler}`,
        ).toEqual([]);
      }
      const expected = Object.keys(HARNESS_HANDLERS).filter(
        (handler) => handler !== 'planner' || !configuration.startsWith('nothing'),
      );
      expect([...seen].sort(), configuration).toEqual(expected.sort());
    }
  });

  it('names tables, bus, service, metrics namespace and log level the same on every harness function, and none of the harness to the plan-process function', () => {
    for (const [handler, variables] of functionsOf(template)) {
      expect(variables).toMatchObject({
        POWERTOOLS_SERVICE_NAME: 'plangate',
        POWERTOOLS_METRICS_NAMESPACE: 'plangate',
        POWERTOOLS_LOG_LEVEL: 'INFO',
      });
      if (handler === 'planProcess') {
        for (const name of [...Object.values(TABLE_NAME_ENV), 'PLANGATE_EVENT_BUS'])
          expect(variables).not.toHaveProperty(name);
        continue;
      }
      for (const name of Object.values(TABLE_NAME_ENV)) expect(variables).toHaveProperty(name);
      expect(variables).toHaveProperty('PLANGATE_EVENT_BUS');
    }
  });

  it('keeps the log groups 90 days by default and alarms on the HarnessErrors metric of this platform', () => {
    for (const group of Object.values(template.findResources('AWS::Logs::LogGroup')) as Resource[])
      expect(group.Properties.RetentionInDays).toBe(90);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'plangate',
      MetricName: HARNESS_ERRORS_METRIC,
      Dimensions: [{ Name: 'service', Value: 'plangate' }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });
});

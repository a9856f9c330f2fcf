/**
 * Plan code's principals on AWS, in the synthesized template: the plan-process function's role
 * may write its logs, nothing else (no X-Ray, no sts:AssumeRole above all); the plan AWS
 * role is assumed by the step runner and the contract checker only, and denied every resource of
 * the harness (tables, bus, functions, keys, the anchor bucket, the platform's secrets) whatever
 * the platform's statements allow; no plan-facing policy allows a platform secret; only the step
 * runner and the contract checker may invoke the plan-process function; it alone mounts the runs'
 * workspaces (EFS, in its private subnets); cdk-nag stays clean.
 */
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Vpc } from 'aws-cdk-lib/aws-ec2';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/cdk/paths.ts';
import { WORKSPACE_MOUNT_PATH } from '../../lib/cdk/plan-code.ts';
import { PlanPlatform } from '../../lib/cdk/plan-platform.ts';
import { PlanStateMachine } from '../../lib/cdk/plan-state-machine.ts';
import { PLATFORM_SECRETS_PREFIX } from '../../lib/plan/aws-access.ts';
import { testApp, UNNOTIFIED } from './support.ts';

interface Resource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
}
interface Statement {
  readonly Effect: 'Allow' | 'Deny';
  readonly Action: string | string[];
  readonly Resource: unknown;
}

function synth(platformProps: Partial<ConstructorParameters<typeof PlanPlatform>[2]> = {}) {
  const app = testApp();
  const stack = new Stack(app, 'Plans', { env: { account: '123456789012', region: 'us-east-1' } });
  const botToken = Secret.fromSecretNameV2(stack, 'Bot', `${PLATFORM_SECRETS_PREFIX}slack-bot-token`);
  const signingSecret = Secret.fromSecretNameV2(
    stack,
    'Signing',
    `${PLATFORM_SECRETS_PREFIX}slack-signing-secret`,
  );
  const platform = new PlanPlatform(stack, 'Platform', {
    slack: { botToken, signingSecret, channel: 'C0123456789', approvers: { U0ALICE: 'alice' } },
    planner: { model: 'anthropic.claude-x' },
    // A platform that lets plans do much: the harness stays out of reach all the same.
    planAwsStatements: [
      new PolicyStatement({
        actions: ['s3:GetObject', 'secretsmanager:GetSecretValue', 'dynamodb:*', 'lambda:InvokeFunction'],
        resources: ['*'],
      }),
    ],
    ...platformProps,
  });
  new PlanStateMachine(stack, 'Release', {
    planFile: join(PROJECT_ROOT, 'examples/release-api.json'),
    platform,
  });
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const idOf = (construct: { node: { defaultChild?: unknown } }) =>
    stack.getLogicalId(construct.node.defaultChild as never);
  const statementsOf = (role: { node: { defaultChild?: unknown } }): Statement[] =>
    Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .filter((p) => JSON.stringify(p.Properties.Roles).includes(`"${idOf(role)}"`))
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
  return { app, stack, platform, template, resources, idOf, statementsOf };
}

const actionsOf = (st: Statement): string[] => [st.Action].flat();
const HARNESS_SERVICES = /^(dynamodb|events|lambda|kms|secretsmanager|states|s3):/;

describe('plan code on AWS (PlanCode)', () => {
  const { platform, resources, idOf, statementsOf } = synth();
  const harnessFunctions = Object.entries(resources).filter(
    ([id, r]) => r.Type === 'AWS::Lambda::Function' && id !== idOf(platform.planCode.function.function),
  );
  /** Logical ids of every harness resource plan code must not reach. */
  const harnessIds = Object.entries(resources)
    .filter(([, r]) =>
      [
        'AWS::DynamoDB::Table',
        'AWS::Events::EventBus',
        'AWS::KMS::Key',
        'AWS::S3::Bucket',
        'AWS::SecretsManager::Secret',
      ].includes(r.Type),
    )
    .map(([id]) => id)
    .concat(harnessFunctions.map(([id]) => id));
  const platformSecretNames = [
    PLATFORM_SECRETS_PREFIX,
    'slack-bot-token',
    'slack-signing-secret',
    idOf(platform.approvalSigningKey),
  ];

  it('gives the plan-process role writes to its own log group, its mount of the workspaces and its network interfaces, nothing else: no sts:AssumeRole, no X-Ray', () => {
    const statements = statementsOf(platform.planCode.function.role);
    const actions = statements.flatMap(actionsOf);
    expect(actions.filter((a) => a.startsWith('sts:'))).toEqual([]);
    expect([...new Set(actions)].sort()).toEqual([
      'ec2:AssignPrivateIpAddresses',
      'ec2:CreateNetworkInterface',
      'ec2:DeleteNetworkInterface',
      'ec2:DescribeNetworkInterfaces',
      'ec2:DescribeSecurityGroups',
      'ec2:DescribeSubnets',
      'ec2:UnassignPrivateIpAddresses',
      'elasticfilesystem:ClientMount',
      'elasticfilesystem:ClientWrite',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
    ]);
    // Interfaces in its own subnets only; the file system through its access point only.
    const ec2 = statements.filter((st) => actionsOf(st).some((a) => /^ec2:(?!Describe)/.test(a)));
    for (const st of ec2) expect(JSON.stringify(st)).toMatch(/subnet\//);
    const efs = statements.filter((st) => actionsOf(st).some((a) => a.startsWith('elasticfilesystem:')));
    expect(JSON.stringify(efs)).toContain(idOf(platform.planCode.workspaceAccessPoint));
    // Not traced (its role has no X-Ray writes); the harness's functions are.
    const tracingOf = (fn: { node: { defaultChild?: unknown } }) =>
      resources[idOf(fn)]?.Properties.TracingConfig;
    expect(tracingOf(platform.planCode.function.function)).toBeUndefined();
    expect(tracingOf(platform.functions.stepRunner.function)).toEqual({ Mode: 'Active' });
    const logs = statements.filter((st) => actionsOf(st).some((a) => a.startsWith('logs:')));
    expect(JSON.stringify(logs.map((st) => st.Resource))).toContain(
      idOf(platform.planCode.function.logGroup),
    );
    expect(JSON.stringify(logs.map((st) => st.Resource))).not.toContain('*"');
    for (const st of statements)
      for (const id of harnessIds) expect(JSON.stringify(st.Resource)).not.toContain(`"${id}"`);
    // Its environment names nothing of the harness: no table, bus or function.
    const fn = resources[idOf(platform.planCode.function.function)];
    const variables = (fn?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)
      ?.Variables;
    if (!variables) throw new Error('the plan-process function has no environment');
    expect(Object.keys(variables).sort()).toEqual([
      'NODE_OPTIONS',
      'PLANGATE_WORKDIR',
      'PLANGATE_WORKSPACE_ROOT',
      'POWERTOOLS_LOG_LEVEL',
      'POWERTOOLS_METRICS_NAMESPACE',
      'POWERTOOLS_SERVICE_NAME',
    ]);
  });

  it("mounts the runs' workspaces, alone, from its private subnets; the runners keep no working directory of their own", () => {
    const fn = resources[idOf(platform.planCode.function.function)]?.Properties ?? {};
    expect(fn.FileSystemConfigs).toEqual([
      {
        Arn: expect.anything(),
        LocalMountPath: WORKSPACE_MOUNT_PATH,
      },
    ]);
    expect(JSON.stringify(fn.FileSystemConfigs)).toContain(idOf(platform.planCode.workspaceAccessPoint));
    expect(JSON.stringify(fn.VpcConfig)).toMatch(/plan-processes|PlanprocessesSubnet/i);
    const mounting = Object.entries(resources).filter(
      ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.FileSystemConfigs,
    );
    expect(mounting.map(([id]) => id)).toEqual([idOf(platform.planCode.function.function)]);
    const variables = (fn.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(variables.PLANGATE_WORKSPACE_ROOT).toBe(WORKSPACE_MOUNT_PATH);
    for (const runner of [platform.functions.stepRunner, platform.functions.contractChecker]) {
      const env =
        (resources[idOf(runner.function)]?.Properties.Environment as { Variables: object } | undefined)
          ?.Variables ?? {};
      expect(Object.keys(env)).not.toContain('PLANGATE_WORKDIR');
    }
    const fileSystem = resources[idOf(platform.planCode.workspaces)]?.Properties;
    expect(fileSystem?.Encrypted).toBe(true);
  });

  it("is placed in the platform's VPC when given one (planProcessVpc), making none of its own", () => {
    const stack = new Stack(testApp(), 'Own', { env: { account: '123456789012', region: 'us-east-1' } });
    const vpc = new Vpc(stack, 'TeamVpc', { maxAzs: 2 });
    const own = new PlanPlatform(stack, 'Platform', { ...UNNOTIFIED, planProcessVpc: vpc });
    expect(own.planCode.vpc).toBe(vpc);
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::EC2::VPC', 1);
    const fn =
      template.toJSON().Resources[
        stack.getLogicalId(own.planCode.function.function.node.defaultChild as never)
      ];
    const privateSubnets = vpc.privateSubnets.map((s) => stack.getLogicalId(s.node.defaultChild as never));
    expect(fn.Properties.VpcConfig.SubnetIds).toEqual(privateSubnets.map((id) => ({ Ref: id })));
  });

  it('lets the step runner and the contract checker assume the plan AWS role, and no other principal', () => {
    const runners = [platform.functions.stepRunner.role, platform.functions.contractChecker.role].map((r) =>
      idOf(r),
    );
    const trust = resources[idOf(platform.planCode.awsRole)]?.Properties.AssumeRolePolicyDocument as {
      Statement: { Effect: string; Action: string; Principal: { AWS?: unknown } }[];
    };
    expect(trust.Statement).toEqual(
      runners.map((id) => ({
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Principal: { AWS: { 'Fn::GetAtt': [id, 'Arn'] } },
      })),
    );
    // Which roles' own policies allow sts:AssumeRole on it: the runners', nobody else's.
    const assumers = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .filter((p) =>
        (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement.some(
          (st) =>
            st.Effect === 'Allow' &&
            actionsOf(st).some((a) => a === 'sts:AssumeRole' || a === 'sts:*' || a === '*') &&
            JSON.stringify(st.Resource).includes(idOf(platform.planCode.awsRole)),
        ),
      )
      .flatMap((p) => (p.Properties.Roles as { Ref: string }[]).map((ref) => ref.Ref))
      .sort();
    expect(assumers).toEqual([...runners].sort());
    // They hand its session to the plan-process function; that function is not told the role.
    for (const fn of [platform.functions.stepRunner, platform.functions.contractChecker]) {
      const variables = (
        resources[idOf(fn.function)]?.Properties.Environment as
          | { Variables: Record<string, unknown> }
          | undefined
      )?.Variables;
      expect(variables?.PLANGATE_PLAN_AWS_ROLE_ARN).toEqual({
        'Fn::GetAtt': [idOf(platform.planCode.awsRole), 'Arn'],
      });
    }
  });

  it('denies the plan AWS role every harness resource, whatever the platform allows', () => {
    const statements = statementsOf(platform.planCode.awsRole);
    const deny = statements.filter((st) => st.Effect === 'Deny');
    const denied = JSON.stringify(deny.map((st) => st.Resource));
    expect(deny.some((st) => actionsOf(st).includes('*'))).toBe(true);
    for (const id of harnessIds) expect(denied).toContain(`"${id}"`);
    expect(denied).toContain(`secret:${PLATFORM_SECRETS_PREFIX}*`);
    for (const name of ['slack-bot-token', 'slack-signing-secret']) expect(denied).toContain(name);
    expect(deny.some((st) => actionsOf(st).includes('states:SendTaskSuccess'))).toBe(true);
    // Its Allow statements are the platform's, word for word; none names a harness resource.
    for (const st of statements.filter((s) => s.Effect === 'Allow'))
      for (const id of harnessIds) expect(JSON.stringify(st.Resource)).not.toContain(`"${id}"`);
  });

  it('allows a platform secret in no plan-facing policy (plan-process role, plan AWS role, state machine roles)', () => {
    const machineRoles = Object.entries(resources)
      .filter(
        ([, r]) =>
          r.Type === 'AWS::IAM::Role' &&
          JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('states.amazonaws.com'),
      )
      .map(([id]) => id);
    expect(machineRoles.length).toBeGreaterThanOrEqual(2);
    const planFacing = [
      idOf(platform.planCode.function.role),
      idOf(platform.planCode.awsRole),
      ...machineRoles,
    ];
    const allowsOf = (roles: readonly string[]) =>
      Object.values(resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .filter((p) => roles.some((id) => JSON.stringify(p.Properties.Roles).includes(`"${id}"`)))
        .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
        .filter((st) => st.Effect === 'Allow');
    expect(allowsOf(planFacing).length).toBeGreaterThan(0);
    for (const st of allowsOf(planFacing))
      for (const name of platformSecretNames) expect(JSON.stringify(st.Resource)).not.toContain(name);
    // No state machine role may read a secret or touch a table or key.
    for (const st of allowsOf(machineRoles))
      expect(actionsOf(st).filter((a) => /^(dynamodb|kms|secretsmanager):/.test(a))).toEqual([]);
  });

  it('lets the step runner and the contract checker read plan secrets only (plangate/plans/*), never the platform’s', () => {
    for (const fn of [platform.functions.stepRunner, platform.functions.contractChecker]) {
      const reads = statementsOf(fn.role).filter((st) =>
        actionsOf(st).some((a) => a.startsWith('secretsmanager:')),
      );
      expect(JSON.stringify(reads.map((st) => st.Resource))).toContain('secret:plangate/plans/*');
      for (const name of platformSecretNames)
        expect(JSON.stringify(reads.map((st) => st.Resource))).not.toContain(name);
    }
  });

  it('is invoked by the step runner and the contract checker, and by nothing else', () => {
    const planProcessId = idOf(platform.planCode.function.function);
    const invokers = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .filter((p) =>
        (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement.some(
          (st) =>
            actionsOf(st).includes('lambda:InvokeFunction') &&
            JSON.stringify(st.Resource).includes(planProcessId),
        ),
      )
      .flatMap((p) => p.Properties.Roles as { Ref: string }[])
      .map((ref) => ref.Ref)
      .sort();
    expect(invokers).toEqual(
      [idOf(platform.functions.stepRunner.role), idOf(platform.functions.contractChecker.role)].sort(),
    );
    for (const fn of [platform.functions.stepRunner, platform.functions.contractChecker]) {
      const variables = (
        resources[idOf(fn.function)]?.Properties.Environment as
          | { Variables: Record<string, unknown> }
          | undefined
      )?.Variables;
      expect(variables?.PLANGATE_PLAN_PROCESS_FUNCTION).toEqual({ Ref: planProcessId });
    }
    // The gate names it on every gate ("Runs as") and may not invoke it (above).
    const gateVariables = (
      resources[idOf(platform.functions.gate.function)]?.Properties.Environment as
        | { Variables: Record<string, unknown> }
        | undefined
    )?.Variables;
    expect(gateVariables?.PLANGATE_PLAN_PROCESS_FUNCTION).toEqual({ Ref: planProcessId });
    // Plan code's roles reach no harness service at all (the plan AWS role's allows are the platform's own).
    const planProcessActions = statementsOf(platform.planCode.function.role).flatMap(actionsOf);
    expect(planProcessActions.filter((a) => HARNESS_SERVICES.test(a))).toEqual([]);
  });

  it('keeps the platform’s own secrets apart: the approval signing key under plangate-platform/, the plans’ prefix refused when it overlaps', () => {
    const key = resources[idOf(platform.approvalSigningKey)];
    expect(JSON.stringify(key?.Properties.Name)).toContain(`${PLATFORM_SECRETS_PREFIX}`);
    expect(() => synth({ planSecretsPrefix: 'plangate' })).toThrow(
      /planSecretsPrefix "plangate" overlaps the platform's own secrets \(plangate-platform\/…\)/,
    );
    const app2 = testApp();
    const stack2 = new Stack(app2, 'Misnamed');
    expect(
      () =>
        new PlanPlatform(stack2, 'Platform', {
          slack: {
            botToken: Secret.fromSecretNameV2(stack2, 'Bot', 'plangate/plans/slack-bot-token'),
            signingSecret: Secret.fromSecretNameV2(stack2, 'Sign', 'plangate-platform/slack-signing-secret'),
            channel: 'C1',
            approvers: {},
          },
        }),
    ).toThrow(/the Slack bot token secret \(plangate\/plans\/slack-bot-token\) is under planSecretsPrefix/);
  });

  it('has no unacknowledged cdk-nag finding on plan code as shipped (no platform statements)', () => {
    const shipped = synth({ planAwsStatements: [] });
    const findings = new AwsSolutionsChecks()
      .validateScope(shipped.app)
      .violations.filter((v) => v.violatingResources.some((r) => r.constructPath?.includes('PlanCode')));
    expect(findings.map((v) => v.ruleName)).toEqual([]);
  });
});

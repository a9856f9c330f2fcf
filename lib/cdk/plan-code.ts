/**
 * `PlanCode`: where a plan's own code runs on AWS, apart from the harness. The plan-process
 * function (lambdas/plan-process.ts) runs every shell step, command contract, postcondition and
 * rollback the step runner and the contract checker (its runners) hand it; its role may write its
 * log group, nothing else (it is not traced): whatever a plan process reads of it (its
 * credentials in /proc/<pid>/environ of the runtime) can assume no role and reach nothing. The
 * plan AWS role is what a step that declares `aws` gets: the runners alone may assume it, per run,
 * with the step's grants as the session policy, and hand the session's credentials to the
 * function in the call. Its own policy is the most any plan may do (the platform's
 * `planAwsStatements`, none by default), and it is denied outright every resource of the harness
 * (tables, bus, functions, keys, the anchor bucket, the platform's secrets) and answering any task.
 *
 * The workspace (docs/deploy.md, "Where steps run on AWS"): an EFS file system mounted by the
 * plan-process function alone, each run's commands in that run's directory there, so a step, its
 * contracts, its rollback and the postconditions see the same files whichever container runs
 * them. EFS needs the function in a VPC: its private subnets' egress (a NAT gateway) carries what
 * plan code reaches (declared hosts, the AWS APIs a step's session calls).
 */
import { RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { FlowLogDestination, type IVpc, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { type AccessPoint, FileSystem, LifecyclePolicy } from 'aws-cdk-lib/aws-efs';
import { CompositePrincipal, Effect, Grant, type IRole, PolicyStatement, Role } from 'aws-cdk-lib/aws-iam';
import { FileSystem as LambdaFileSystem } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { CommonEnvInput } from './harness-function.ts';
import { HarnessFunction } from './harness-function.ts';
import { acknowledgeWildcardResource } from './nag.ts';
import { trustedService } from './service-trust.ts';

export interface PlanCodeProps {
  /** @default RetentionDays.THREE_MONTHS */
  readonly logRetention?: RetentionDays;
  /** Powertools' service name, namespace and level (nothing of the harness's tables or bus). */
  readonly telemetryEnvironment: Pick<
    CommonEnvInput,
    'POWERTOOLS_SERVICE_NAME' | 'POWERTOOLS_METRICS_NAMESPACE' | 'POWERTOOLS_LOG_LEVEL'
  >;
  /**
   * The most plan code may ever do on AWS: the plan AWS role's own policy. Each step's session
   * policy (its `aws` grants) narrows it for the step's run; what is not here no plan gets.
   * @default - none: steps that declare `aws` get credentials that can do nothing
   */
  readonly planAwsStatements?: readonly PolicyStatement[];
  /** ARNs of every resource of the harness (and patterns under them), denied to the plan AWS role. */
  readonly harnessResourceArns: readonly string[];
  /**
   * The harness roles that run plan code (the step runner's and the contract checker's): they
   * alone may invoke the plan-process function and assume the plan AWS role.
   */
  readonly runners: readonly IRole[];
  /**
   * Where the plan-process function and the workspace file system are placed: the function in
   * its private subnets with egress (what plan code reaches goes out through them).
   * @default - a VPC of its own: two AZs, one NAT gateway, flow logs to CloudWatch
   */
  readonly vpc?: IVpc;
  /**
   * What happens to the runs' workspaces when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly workspaceRemovalPolicy?: RemovalPolicy;
}

/** Where the plan-process function mounts the workspace file system (Lambda wants /mnt/…). */
export const WORKSPACE_MOUNT_PATH = '/mnt/workspaces';
/** The POSIX identity plan processes have on the workspace file system (the access point's). */
const WORKSPACE_OWNER = '1001';

export class PlanCode extends Construct {
  /** Runs plan processes; invoked by the runners only. */
  public readonly function: HarnessFunction<'planProcess'>;
  /** Assumed by the runners per run for steps that declare `aws`; never the harness's authority. */
  public readonly awsRole: Role;
  /** The network of the plan-process function and the workspace file system. */
  public readonly vpc: IVpc;
  /** The runs' workspaces: one directory per execution, mounted by the plan-process function alone. */
  public readonly workspaces: FileSystem;
  /** How the plan-process function mounts it (its root directory and POSIX identity). */
  public readonly workspaceAccessPoint: AccessPoint;
  private readonly neverTheHarness: PolicyStatement;

  constructor(scope: Construct, id: string, props: PlanCodeProps) {
    super(scope, id);
    this.vpc = props.vpc ?? this.ownVpc(props.logRetention);
    const subnets = { subnetType: SubnetType.PRIVATE_WITH_EGRESS };
    this.workspaces = new FileSystem(this, 'Workspaces', {
      vpc: this.vpc,
      vpcSubnets: subnets,
      encrypted: true,
      // A run's files are read within the run; older ones move to the cheaper class.
      lifecyclePolicy: LifecyclePolicy.AFTER_7_DAYS,
      removalPolicy: props.workspaceRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    this.workspaceAccessPoint = this.workspaces.addAccessPoint('PlanProcesses', {
      path: '/runs',
      createAcl: { ownerUid: WORKSPACE_OWNER, ownerGid: WORKSPACE_OWNER, permissions: '750' },
      posixUser: { uid: WORKSPACE_OWNER, gid: WORKSPACE_OWNER },
    });
    this.function = new HarnessFunction(this, 'PlanProcessHandler', {
      handler: 'planProcess',
      ...(props.logRetention ? { logRetention: props.logRetention } : {}),
      environment: props.telemetryEnvironment,
      vpc: { vpc: this.vpc, subnets },
      filesystem: LambdaFileSystem.fromEfsAccessPoint(this.workspaceAccessPoint, WORKSPACE_MOUNT_PATH),
    });
    this.grantNetworkInterfaces();
    this.awsRole = new Role(this, 'PlanAwsRole', {
      assumedBy: new CompositePrincipal(...props.runners),
      description:
        "plangate: the role a plan's steps that declare aws get, assumed per run with the step's grants as session policy",
    });
    for (const statement of props.planAwsStatements ?? []) this.awsRole.addToPolicy(statement);
    // Defence in depth: whatever the platform's statements allow, never the harness's state.
    this.neverTheHarness = new PolicyStatement({
      sid: 'NeverTheHarness',
      effect: Effect.DENY,
      actions: ['*'],
      resources: [...props.harnessResourceArns],
    });
    this.awsRole.addToPolicy(this.neverTheHarness);
    this.awsRole.addToPolicy(
      new PolicyStatement({
        sid: 'NeverAnswerATask',
        effect: Effect.DENY,
        actions: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'],
        resources: ['*'],
      }),
    );
    // Lambda's filesystem is read-only except /tmp (a call's returned files) and the workspaces.
    this.function.setEnvironment({ PLANGATE_WORKDIR: '/tmp', PLANGATE_WORKSPACE_ROOT: WORKSPACE_MOUNT_PATH });
    for (const runner of props.runners) {
      this.awsRole.grantAssumeRole(runner);
      // The unqualified ARN only: runners invoke it by name, never a version.
      Grant.addToPrincipal({
        grantee: runner,
        actions: ['lambda:InvokeFunction'],
        resourceArns: [this.function.function.functionArn],
      });
    }
  }

  /** Two AZs, a NAT gateway for the private subnets' egress, flow logs kept as long as the functions' logs. */
  private ownVpc(retention: RetentionDays | undefined): IVpc {
    const vpc = new Vpc(this, 'Network', {
      maxAzs: 2,
      natGateways: 1,
      subnetConfiguration: [
        { name: 'egress', subnetType: SubnetType.PUBLIC },
        { name: 'plan-processes', subnetType: SubnetType.PRIVATE_WITH_EGRESS },
      ],
    });
    // The flow log's role is ours, so its trust carries the confused-deputy condition.
    const flowLogRole = new Role(this, 'FlowLogRole', {
      assumedBy: trustedService(this, 'vpc-flow-logs.amazonaws.com'),
      description: "plangate: delivers the plan-process network's flow logs to their log group",
    });
    vpc.addFlowLog('FlowLogs', {
      destination: FlowLogDestination.toCloudWatchLogs(
        new LogGroup(this, 'FlowLogGroup', { retention: retention ?? RetentionDays.THREE_MONTHS }),
        flowLogRole,
      ),
    });
    return vpc;
  }

  /**
   * What Lambda needs of the function's role to attach it to its subnets (the role is the
   * function's own, not AWSLambdaVPCAccessExecutionRole): network interfaces in these subnets
   * only. Plan code that reads these credentials can at most add or remove interfaces there.
   */
  private grantNetworkInterfaces(): void {
    const stack = Stack.of(this);
    const subnetArns = this.vpc
      .selectSubnets({ subnetType: SubnetType.PRIVATE_WITH_EGRESS })
      .subnetIds.map((id) => stack.formatArn({ service: 'ec2', resource: 'subnet', resourceName: id }));
    const interfaces = stack.formatArn({ service: 'ec2', resource: 'network-interface', resourceName: '*' });
    const groups = this.function.function.connections.securityGroups.map((g) =>
      stack.formatArn({ service: 'ec2', resource: 'security-group', resourceName: g.securityGroupId }),
    );
    const role = this.function.role;
    role.addToPolicy(
      new PolicyStatement({
        sid: 'AttachToItsSubnets',
        actions: ['ec2:CreateNetworkInterface'],
        resources: [interfaces, ...subnetArns, ...groups],
      }),
    );
    role.addToPolicy(
      new PolicyStatement({
        sid: 'ManageItsInterfaces',
        actions: [
          'ec2:DeleteNetworkInterface',
          'ec2:AssignPrivateIpAddresses',
          'ec2:UnassignPrivateIpAddresses',
        ],
        resources: [interfaces],
        conditions: { ArnEquals: { 'ec2:Subnet': subnetArns } },
      }),
    );
    // ec2:Describe* has no resource-level permissions.
    role.addToPolicy(
      new PolicyStatement({
        sid: 'SeeInterfaces',
        actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets', 'ec2:DescribeSecurityGroups'],
        resources: ['*'],
      }),
    );
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Lambda attaches the plan-process function to its VPC with the function\'s own role: ec2:DescribeNetworkInterfaces/DescribeSubnets/DescribeSecurityGroups support only Resource "*".',
    });
    acknowledgeWildcardResource(
      role,
      interfaces,
      'Network interfaces Lambda creates for the function have no name in advance; creation is limited to its subnets and security group, deletion to interfaces in its subnets.',
    );
  }

  /** Denies the plan AWS role harness resources made after it (as `harnessResourceArns` are). */
  denyHarnessResources(arns: readonly string[]): void {
    this.neverTheHarness.addResources(...arns);
  }

  /** The roles plan code holds: the plan-process function's and the plan AWS role. */
  get roles(): readonly IRole[] {
    return [this.function.role, this.awsRole];
  }
}

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
 */
import { CompositePrincipal, Effect, Grant, type IRole, PolicyStatement, Role } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { CommonEnvInput } from './harness-function.ts';
import { HarnessFunction } from './harness-function.ts';

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
}

export class PlanCode extends Construct {
  /** Runs plan processes; invoked by the runners only. */
  public readonly function: HarnessFunction<'planProcess'>;
  /** Assumed by the runners per run for steps that declare `aws`; never the harness's authority. */
  public readonly awsRole: Role;
  private readonly neverTheHarness: PolicyStatement;

  constructor(scope: Construct, id: string, props: PlanCodeProps) {
    super(scope, id);
    this.function = new HarnessFunction(this, 'PlanProcessHandler', {
      handler: 'planProcess',
      ...(props.logRetention ? { logRetention: props.logRetention } : {}),
      environment: props.telemetryEnvironment,
    });
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
    // Lambda's filesystem is read-only except /tmp.
    this.function.setEnvironment({ PLANGATE_WORKDIR: '/tmp' });
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

  /** Denies the plan AWS role harness resources made after it (as `harnessResourceArns` are). */
  denyHarnessResources(arns: readonly string[]): void {
    this.neverTheHarness.addResources(...arns);
  }

  /** The roles plan code holds: the plan-process function's and the plan AWS role. */
  get roles(): readonly IRole[] {
    return [this.function.role, this.awsRole];
  }
}

/** A stack holding one `PlanPlatform`; plans deployed as code are added to it with `addPlan`. */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { Plan } from '../plan/schema.ts';
import { PlanPlatform, type PlanPlatformProps } from './plan-platform.ts';
import { PlanStateMachine, type PlanStateMachineProps } from './plan-state-machine.ts';

export interface PlanPlatformStackProps extends StackProps {
  /** @default {} */
  readonly platform?: PlanPlatformProps;
}

/**
 * The stack's outputs (docs/deploy.md, "Stack outputs"): what a user needs next, from signing a
 * `POST /plans` to auditing the journal. Each plan added with `addPlan` adds its machine's.
 */
export class PlanPlatformStack extends Stack {
  public readonly platform: PlanPlatform;
  /** The plans deployed as code, by plan id. */
  public readonly plans = new Map<string, PlanStateMachine>();

  constructor(scope: Construct, id: string, props: PlanPlatformStackProps = {}) {
    super(scope, id, props);
    const platform = new PlanPlatform(this, 'Platform', props.platform);
    this.platform = platform;
    const output = (name: string, value: string, description: string) =>
      new CfnOutput(this, name, { value, description });
    const api = platform.httpApi.url;
    output('HttpApiUrl', api, 'The Plans/approvals API: POST /plans (SigV4), GET /plans/{executionId}');
    output(
      'ApprovalPageUrl',
      `${api}/approvals/{approvalId}`,
      "A gate's approval page, the gate's approval id in place of {approvalId} (the links sent and GET /plans/{executionId} give it)",
    );
    if (platform.slack)
      output(
        'SlackInteractionsUrl',
        `${api}/slack/interactions`,
        "The Slack app's Interactivity request URL",
      );
    if (platform.approverPool && platform.approverPoolClient && platform.approverSignIn) {
      output(
        'ApproverUserPoolId',
        platform.approverPool.userPoolId,
        'The approvers: add them here (admin-created, MFA)',
      );
      output(
        'ApproverScriptClientId',
        platform.approverPoolClient.userPoolClientId,
        'The app client scripts and the CLI sign approvers in with (SRP)',
      );
      output(
        'ApprovalPageClientId',
        platform.approverSignIn.pageClient.userPoolClientId,
        "The approval page's public app client (hosted UI, code + PKCE)",
      );
      output('ApproverSignInUrl', platform.approverSignIn.domain.baseUrl(), "The approvers' hosted sign-in");
    }
    // What `plangate audit verify --aws --table T --anchor-bucket B` is given.
    output(
      'EventsTable',
      platform.eventsTable.table.tableName,
      'The append-only journal (plangate audit --table)',
    );
    output(
      'AnchorBucket',
      platform.anchors.bucket.bucketName,
      "The journal's anchors (plangate audit --anchor-bucket)",
    );
    output('GatesTable', platform.gatesTable.table.tableName, 'Pending approvals');
    output('JoinsTable', platform.joinsTable.table.tableName, 'Exact joins across Parallel branches');
    output('OutputsTable', platform.outputsTable.table.tableName, 'Step outputs too large for the state');
    output('DraftsTable', platform.draftsTable.table.tableName, 'Plans drafted from goals');
    output(
      'VersionsTable',
      platform.versionsTable.table.tableName,
      'The content claimed by each plan version',
    );
    output('PlansTable', platform.plansTable.table.tableName, 'The plans submitted, by digest');
    output(
      'EventBusName',
      platform.eventBus.bus.eventBusName,
      'Every journal event, for consumers (source plangate)',
    );
    output(
      'RuntimePlanRoleArn',
      platform.runtimePlanRole.roleArn,
      'The role the machines of plans submitted at run time execute with',
    );
    output(
      'FailedExecutionsQueueUrl',
      platform.alarms.failedExecutionsQueue.queueUrl,
      'Status changes of executions that failed, timed out or were aborted (the FailedExecutions alarm)',
    );
  }

  /**
   * Deploys `plan` on this stack's platform as a `PlanStateMachine` (construct id: `Plan-<planId>`),
   * with outputs `<PlanId>StateMachineArn` and `<PlanId>VersionArn` (e.g. `ReleaseApiStateMachineArn`).
   */
  addPlan(
    plan: Plan,
    options: Omit<PlanStateMachineProps, 'plan' | 'planFile' | 'platform'> = {},
  ): PlanStateMachine {
    if (this.plans.has(plan.id)) throw new Error(`plan ${plan.id} is already deployed in ${this.stackName}`);
    const machine = new PlanStateMachine(this, `Plan-${plan.id}`, {
      ...options,
      plan,
      platform: this.platform,
    });
    this.plans.set(plan.id, machine);
    const name = planOutputName(plan.id);
    new CfnOutput(this, `${name}StateMachineArn`, {
      value: machine.stateMachine.stateMachineArn,
      description: `Plan ${plan.id}: its state machine`,
    });
    new CfnOutput(this, `${name}VersionArn`, {
      value: machine.version.attrArn,
      description: `Plan ${plan.id} v${plan.version}: the published version, to start exactly this plan`,
    });
    return machine;
  }
}

/** A plan id as the start of an output name: `release-api` → `ReleaseApi`. */
export function planOutputName(planId: string): string {
  return planId
    .split(/[-_]/)
    .filter(Boolean)
    .map((part) => `${part.charAt(0).toUpperCase()}${part.slice(1)}`)
    .join('');
}

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

export class PlanPlatformStack extends Stack {
  public readonly platform: PlanPlatform;
  /** The plans deployed as code, by plan id. */
  public readonly plans = new Map<string, PlanStateMachine>();

  constructor(scope: Construct, id: string, props: PlanPlatformStackProps = {}) {
    super(scope, id, props);
    this.platform = new PlanPlatform(this, 'Platform', props.platform);
    // What `plangate audit verify --aws --table T --anchor-bucket B` is given.
    new CfnOutput(this, 'EventsTable', { value: this.platform.eventsTable.table.tableName });
    new CfnOutput(this, 'AnchorBucket', { value: this.platform.anchors.bucket.bucketName });
  }

  /** Deploys `plan` on this stack's platform as a `PlanStateMachine` (construct id: `Plan-<planId>`). */
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
    return machine;
  }
}

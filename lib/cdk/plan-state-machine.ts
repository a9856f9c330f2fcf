/**
 * `PlanStateMachine`: one plan, compiled at synth time by lib/compiler and kept in the template
 * as the compiler wrote it (`DefinitionBody.fromString` + `definitionSubstitutions`), so the ASL
 * deployed is byte-for-byte the ASL that runs locally. Its role may invoke exactly the harness
 * functions the definition names; a split plan's parts are child state machines the root starts
 * with `startExecution.sync:2`.
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Grant, type IGrantable, Role } from 'aws-cdk-lib/aws-iam';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import {
  CfnStateMachineVersion,
  DefinitionBody,
  LogLevel,
  StateMachine,
  StateMachineType,
} from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import {
  type CompiledDefinition,
  type CompileOptions,
  type CompileResult,
  compilePlan,
} from '../compiler/index.ts';
import {
  partOrder,
  partPlaceholder,
  planStateMachineName,
  stateMachineNames,
  versionDescription,
} from '../launch/deploy-plan.ts';
import { planDigest } from '../plan/digest.ts';
import type { Plan } from '../plan/schema.ts';
import type { StateMachineHandlerName } from '../runtime/catalog.ts';
import { acknowledgeWildcardResource } from './nag.ts';
import { checkedPlan, checkedPlanFile } from './plan-check.ts';
import type { PlanPlatform } from './plan-platform.ts';
import { trustedService } from './service-trust.ts';

export interface PlanStateMachineProps {
  /**
   * The plan to deploy (parsed, e.g. with lib/plan's `loadPlan`). Give this or `planFile`. Checked
   * as `plangate validate` checks it: a plan it rejects fails synth with its problems.
   */
  readonly plan?: Plan;
  /**
   * A plan file (Markdown, YAML or JSON) read at synth time and checked as `plangate validate`
   * checks it: a plan it rejects fails synth with every problem located (file:line:column).
   */
  readonly planFile?: string;
  /** The platform whose harness functions the plan runs on. */
  readonly platform: PlanPlatform;
  /**
   * Name of the (root) state machine; parts are `<name>-part<n>`. Must start with the platform's
   * `namePrefix` followed by `-`, since the platform's grants are scoped to that prefix.
   * @default `<namePrefix>-<planId>`
   */
  readonly stateMachineName?: string;
  /**
   * What the machines log to CloudWatch Logs (execution data is never logged).
   * @default LogLevel.ALL
   */
  readonly logLevel?: LogLevel.ALL | LogLevel.ERROR;
  /** Passed to the compiler. */
  readonly compileOptions?: CompileOptions;
}

export class PlanStateMachine extends Construct {
  public readonly plan: Plan;
  /** The plan digest (hex); the published version's description carries it. */
  public readonly digest: string;
  /** What the compiler produced (definitions with placeholders, and the compile report). */
  public readonly compiled: CompileResult;
  /** The machine executions start: the plan gate is its first state. */
  public readonly stateMachine: StateMachine;
  /** Child machines of a split plan, in the compiler's order (its definitions after the first); empty when the plan fits one machine. */
  public readonly parts: readonly StateMachine[];
  public readonly logGroup: LogGroup;
  /**
   * The version of the main machine published for this plan version; its description carries the
   * plan digest (as run-time deployments' versions do). Start executions on it to run exactly this plan.
   */
  public readonly version: CfnStateMachineVersion;
  private readonly platform: PlanPlatform;

  constructor(scope: Construct, id: string, props: PlanStateMachineProps) {
    // Checked first: a plan that does not validate adds nothing to the tree.
    const plan = resolvePlan(props);
    super(scope, id);
    this.plan = plan;
    this.digest = planDigest(this.plan);
    this.compiled = compilePlan(this.plan, props.compileOptions);
    const platform = props.platform;
    this.platform = platform;
    const names = stateMachineNames(
      props.stateMachineName ?? planStateMachineName(platform.namePrefix, this.plan.id),
      this.compiled.definitions,
    );
    const rootName = names[0] as string;
    if (!rootName.startsWith(`${platform.namePrefix}-`)) {
      throw new Error(
        `stateMachineName "${rootName}" must start with "${platform.namePrefix}-": the platform's grants are scoped to that prefix`,
      );
    }
    if (rootName.startsWith(`${platform.runtimeNamePrefix}-`)) {
      throw new Error(
        `stateMachineName "${rootName}" is under "${platform.runtimeNamePrefix}-", where the Plans API creates and updates the plans submitted at run time: give this plan a stateMachineName outside it (a plan id starting "run-" needs one)`,
      );
    }
    const [root, ...children] = this.compiled.definitions;
    if (!root) throw new Error(`plan ${this.plan.id} compiled to no definition`);

    const logLevel = props.logLevel ?? LogLevel.ALL;
    this.logGroup = new LogGroup(this, 'Logs', {
      // The vended-logs prefix keeps CloudWatch Logs' resource policy small as plans multiply.
      logGroupName: `/aws/vendedlogs/states/${rootName}`,
      retention: platform.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const description = versionDescription(this.plan, this.digest);

    const parts: StateMachine[] = new Array(children.length);
    const childMachines: Record<string, { arn: string; name: string }> = {};
    for (const i of partOrder(children)) {
      const child = children[i] as (typeof children)[number];
      const name = names[i + 1] as string;
      const machine = this.machine(`Part-${child.name}`, name, child, childMachines, platform, logLevel);
      parts[i] = machine;
      childMachines[partPlaceholder(child, i)] = { arn: machine.stateMachineArn, name };
    }
    this.parts = parts;
    this.stateMachine = this.machine('StateMachine', rootName, root, childMachines, platform, logLevel);
    this.version = new CfnStateMachineVersion(this, 'Version', {
      stateMachineArn: this.stateMachine.stateMachineArn,
      stateMachineRevisionId: this.stateMachine.stateMachineRevisionId,
      description,
    });
  }

  /**
   * Lets `grantee` start executions of this plan (on the machine, or pinned to its published
   * version), follow them (describe, history) and stop them.
   */
  grantStartExecution(grantee: IGrantable): Grant {
    const executions = this.platform.statesArn('execution', `${this.stateMachine.stateMachineName}:*`);
    const principal = grantee.grantPrincipal;
    if (Construct.isConstruct(principal)) {
      acknowledgeWildcardResource(
        principal,
        executions,
        'Execution names are chosen when a run starts; describe, history and stop are scoped to executions of this one plan machine.',
      );
    }
    return Grant.addToPrincipal({
      grantee,
      actions: ['states:StartExecution', 'states:DescribeStateMachine', 'states:ListExecutions'],
      resourceArns: [this.stateMachine.stateMachineArn, this.version.attrArn],
    }).combine(
      Grant.addToPrincipal({
        grantee,
        actions: ['states:DescribeExecution', 'states:GetExecutionHistory', 'states:StopExecution'],
        resourceArns: [executions],
      }),
    );
  }

  private machine(
    id: string,
    name: string,
    definition: CompiledDefinition,
    childMachines: Readonly<Record<string, { arn: string; name: string }>>,
    platform: PlanPlatform,
    logLevel: LogLevel,
  ): StateMachine {
    const substitutions: Record<string, string> = {};
    const handlers: StateMachineHandlerName[] = [];
    const childArns: string[] = [];
    const childExecutions: string[] = [];
    // What the definition uses, as the compiler listed it.
    for (const resource of definition.resources) {
      if (resource.kind === 'activity') {
        substitutions[resource.placeholder] = platform.agentActivity(resource.target).activityArn;
      } else if (resource.kind === 'lambda') {
        substitutions[resource.placeholder] = platform.fn(resource.handler).functionArn;
        handlers.push(resource.handler);
      } else {
        const child = childMachines[resource.placeholder];
        if (!child)
          throw new Error(
            `plan ${this.plan.id}: definition ${name} starts \${${resource.placeholder}}, which is none of the plan's parts`,
          );
        substitutions[resource.placeholder] = child.arn;
        childArns.push(child.arn);
        childExecutions.push(platform.statesArn('execution', `${child.name}:*`));
      }
    }
    // The role only this machine (and its published versions) may assume, in this account.
    const role = new Role(this, `${id}Role`, {
      assumedBy: trustedService(this, 'states.amazonaws.com', [
        platform.statesArn('stateMachine', name),
        platform.statesArn('stateMachine', `${name}:*`),
      ]),
    });
    const machine = new StateMachine(this, id, {
      stateMachineName: name,
      role,
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: DefinitionBody.fromString(definition.json),
      definitionSubstitutions: substitutions,
      logs: { destination: this.logGroup, level: logLevel, includeExecutionData: false },
      tracingEnabled: true,
    });
    for (const handler of handlers) platform.grantInvokeHandler(machine, handler);
    if (childArns.length > 0) platform.grantRunChildren(machine, childArns, childExecutions);
    Validations.of(machine.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Step Functions log delivery (logs:*LogDelivery, PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups) and X-Ray (PutTraceSegments, PutTelemetryRecords, GetSampling*) support only Resource "*".',
    });
    if (logLevel !== LogLevel.ALL) {
      Validations.of(machine).acknowledge({
        id: 'AwsSolutions-SF1',
        reason:
          'Every state change is already an event in the append-only events table; this machine logs errors only to keep CloudWatch costs proportional to failures.',
      });
    }
    return machine;
  }
}

/** The plan of `props`, checked as `plangate validate` checks it (throws with its located problems). */
function resolvePlan(props: PlanStateMachineProps): Plan {
  if (props.plan && props.planFile)
    throw new Error('PlanStateMachine: give either plan or planFile, not both');
  if (props.plan) return checkedPlan(props.plan);
  if (!props.planFile) throw new Error('PlanStateMachine: give plan or planFile');
  return checkedPlanFile(props.planFile);
}

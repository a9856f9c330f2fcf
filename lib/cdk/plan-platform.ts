/**
 * `PlanPlatform`: everything compiled plans run on — the events and gates tables, the event bus
 * with its archive, one Lambda per harness handler, the Plans/approvals HTTP API, the notification
 * settings and the role that plans submitted at run time execute with. Plans themselves are
 * `PlanStateMachine`s (deployed with CDK) or created at run time through the API (lib/runtime/deploy-plan.ts).
 */
import { join } from 'node:path';
import { ArnFormat, type Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { Grant, type IGrantable, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { PlanEventBus } from './event-bus.ts';
import { EventsTable } from './events-table.ts';
import { GatesTable } from './gates-table.ts';
import { HarnessFunction } from './harness-function.ts';
import { HARNESS_HANDLERS, type HarnessHandlerName } from './harness-handlers.ts';
import { acknowledgeWildcardResource } from './nag.ts';
import { LAMBDAS_DIR } from './paths.ts';
import { PlanHttpApi } from './plan-http-api.ts';
import { PLATFORM_ENV } from './platform-env.ts';
import { grantStateMachineLogging, grantXRayTracing } from './service-grants.ts';

export interface PlanPlatformProps {
  /**
   * Prefix of every state machine this platform runs (CDK-deployed and submitted at run time);
   * IAM grants for executions and task responses are scoped to `stateMachine:<prefix>-*`.
   * Two platforms in one account and region need different prefixes.
   * @default 'plangate'
   */
  readonly namePrefix?: string;
  /**
   * The SES identity approval emails are sent from (an address or a domain verified in SES).
   * Stored as an SSM parameter the gate Lambda reads.
   * @default - no approval emails
   */
  readonly sesSender?: string;
  /**
   * The Secrets Manager secret holding the Slack incoming-webhook URL (never the URL itself).
   * @default - no Slack messages
   */
  readonly slackWebhookSecret?: ISecret;
  /**
   * Prefix of the Secrets Manager secret names plans may reference (`source: secretsmanager`);
   * the step runner and contract checker may read only those.
   * @default 'plangate/'
   */
  readonly planSecretsPrefix?: string;
  /**
   * How long the event bus archive keeps events.
   * @default Duration.days(365)
   */
  readonly eventArchiveRetention?: Duration;
  /**
   * Directory holding the handler modules (HARNESS_HANDLERS' files).
   * @default the project's lambdas/ directory
   */
  readonly handlersDir?: string;
  /**
   * Retention of the Lambda, API and state machine log groups.
   * @default RetentionDays.THREE_MONTHS
   */
  readonly logRetention?: RetentionDays;
}

/** Placeholder names for the platform's non-function resources (lib/runtime/payloads.ts, lib/compiler). */
export const RESOURCE_PLACEHOLDERS = {
  eventsTable: 'EventsTableName',
  gatesTable: 'GatesTableName',
  eventBus: 'EventBusName',
} as const;

export class PlanPlatform extends Construct {
  public readonly namePrefix: string;
  public readonly eventsTable: EventsTable;
  public readonly gatesTable: GatesTable;
  public readonly eventBus: PlanEventBus;
  /** The harness Lambdas, by handler name. */
  public readonly functions: Readonly<Record<HarnessHandlerName, HarnessFunction>>;
  public readonly httpApi: PlanHttpApi;
  /** The role state machines created at run time (through the Plans API) execute with. */
  public readonly runtimePlanRole: Role;
  /** Where state machines created at run time log. */
  public readonly runtimePlanLogGroup: LogGroup;
  public readonly logRetention: RetentionDays;
  /** SSM parameter holding the SES sender, when one was given. */
  public readonly sesSenderParameter?: StringParameter;
  public readonly slackWebhookSecret?: ISecret;
  /** The SES sender address or domain, when one was given. */
  public readonly sesSender?: string;

  constructor(scope: Construct, id: string, props: PlanPlatformProps = {}) {
    super(scope, id);
    this.namePrefix = props.namePrefix ?? 'plangate';
    this.logRetention = props.logRetention ?? RetentionDays.THREE_MONTHS;
    this.eventsTable = new EventsTable(this, 'Events');
    this.gatesTable = new GatesTable(this, 'Gates');
    this.eventBus = new PlanEventBus(this, 'EventBus', {
      ...(props.eventArchiveRetention ? { archiveRetention: props.eventArchiveRetention } : {}),
    });
    this.slackWebhookSecret = props.slackWebhookSecret;
    this.sesSender = props.sesSender;
    if (props.sesSender) {
      this.sesSenderParameter = new StringParameter(this, 'SesSender', {
        description: 'plangate: the SES identity approval emails are sent from',
        stringValue: props.sesSender,
      });
    }

    const functions = {} as Record<HarnessHandlerName, HarnessFunction>;
    for (const [name, spec] of Object.entries(HARNESS_HANDLERS) as [
      HarnessHandlerName,
      (typeof HARNESS_HANDLERS)[HarnessHandlerName],
    ][]) {
      functions[name] = new HarnessFunction(this, `${pascal(name)}Handler`, {
        entry: join(props.handlersDir ?? LAMBDAS_DIR, spec.file),
        description: spec.description,
        timeout: spec.timeout,
        memorySize: spec.memorySize,
        logRetention: this.logRetention,
        environment: this.baseEnvironment(),
      });
    }
    this.functions = functions;

    this.runtimePlanLogGroup = new LogGroup(this, 'RuntimePlanLogs', {
      logGroupName: `/aws/vendedlogs/states/${this.namePrefix}-runtime-plans-${Stack.of(this).stackName}`,
      retention: this.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.runtimePlanRole = new Role(this, 'RuntimePlanRole', {
      assumedBy: new ServicePrincipal('states.amazonaws.com'),
      description: 'plangate: role of the state machines the Plans API creates at run time',
    });
    this.grantPlanExecution(this.runtimePlanRole, this.placeholderNames());
    grantStateMachineLogging(this.runtimePlanRole);
    grantXRayTracing(this.runtimePlanRole);
    Validations.of(this.runtimePlanRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Step Functions logging (logs:*LogDelivery, PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups) and X-Ray (PutTraceSegments, PutTelemetryRecords, GetSampling*) support only Resource "*".',
    });

    this.httpApi = new PlanHttpApi(this, 'HttpApi', {
      handler: this.functions.api.function,
      logRetention: this.logRetention,
    });

    this.wireHandlers(props.planSecretsPrefix ?? 'plangate/');
  }

  /** The Lambda function behind a harness handler. */
  fn(name: HarnessHandlerName): IFunction {
    return this.functions[name].function;
  }

  /** Every placeholder this platform can substitute, with its value (a deploy-time token). */
  get substitutions(): Readonly<Record<string, string>> {
    const out: Record<string, string> = {
      [RESOURCE_PLACEHOLDERS.eventsTable]: this.eventsTable.table.tableName,
      [RESOURCE_PLACEHOLDERS.gatesTable]: this.gatesTable.table.tableName,
      [RESOURCE_PLACEHOLDERS.eventBus]: this.eventBus.bus.eventBusName,
    };
    for (const [name, spec] of Object.entries(HARNESS_HANDLERS)) {
      if ('placeholder' in spec) out[spec.placeholder] = this.fn(name as HarnessHandlerName).functionArn;
    }
    return out;
  }

  placeholderNames(): string[] {
    return Object.keys(this.substitutions);
  }

  /** ARN pattern of every state machine of this platform (`stateMachine:<prefix>-*`). */
  get stateMachineArnPattern(): string {
    return Stack.of(this).formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: `${this.namePrefix}-*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  /** ARN pattern of every execution of this platform's state machines. */
  get executionArnPattern(): string {
    return Stack.of(this).formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${this.namePrefix}-*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  /**
   * What a journal writer needs: put (never update or delete) and query the events table,
   * and put events on the bus.
   */
  grantAppendEvents(grantee: IGrantable): Grant {
    return this.eventsTable
      .grantAppend(grantee)
      .combine(this.eventsTable.grantRead(grantee))
      .combine(this.eventBus.bus.grantPutEventsTo(grantee));
  }

  /** What an auditor needs: read the events table and every index. */
  grantReadEvents(grantee: IGrantable): Grant {
    return this.eventsTable.grantRead(grantee);
  }

  /**
   * What answering a gate needs: read and record the decision in the gates table, complete the
   * waiting task (SendTaskSuccess/Failure on this platform's state machines), journal the decision.
   */
  grantAnswerGates(grantee: IGrantable): Grant {
    return this.gatesTable
      .grantAnswer(grantee)
      .combine(this.grantTaskResponse(grantee))
      .combine(this.grantAppendEvents(grantee));
  }

  /** SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat on this platform's state machines. */
  grantTaskResponse(grantee: IGrantable): Grant {
    acknowledgeOn(
      grantee,
      this.stateMachineArnPattern,
      `Task tokens belong to executions of any plan state machine of this platform, created at deploy time or at run time by the Plans API, so the grant is scoped by the "${this.namePrefix}-" name prefix rather than by ARN.`,
    );
    return Grant.addToPrincipal({
      grantee,
      actions: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'],
      resourceArns: [this.stateMachineArnPattern],
    });
  }

  /**
   * What a compiled state machine needs to run on this platform, given the placeholders its
   * definition uses: invoke exactly the functions it names, append events / publish when it
   * names the table / bus. Throws for a placeholder the platform cannot substitute.
   */
  grantPlanExecution(grantee: IGrantable, placeholders: Iterable<string>): void {
    for (const placeholder of placeholders) {
      const handler = this.handlerForPlaceholder(placeholder);
      if (handler) {
        this.grantInvokeHandler(grantee, handler);
      } else if (placeholder === RESOURCE_PLACEHOLDERS.eventsTable) {
        this.eventsTable.grantAppend(grantee);
      } else if (placeholder === RESOURCE_PLACEHOLDERS.gatesTable) {
        this.gatesTable.grantOpen(grantee);
      } else if (placeholder === RESOURCE_PLACEHOLDERS.eventBus) {
        this.eventBus.grantPublish(grantee);
      } else {
        throw new Error(`placeholder \${${placeholder}} is not provided by the platform`);
      }
    }
  }

  /**
   * lambda:InvokeFunction on exactly the function's unqualified ARN (compiled definitions call
   * the unqualified ARN, so no `:*` version wildcard is needed).
   */
  grantInvokeHandler(grantee: IGrantable, handler: HarnessHandlerName): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['lambda:InvokeFunction'],
      resourceArns: [this.fn(handler).functionArn],
    });
  }

  private handlerForPlaceholder(placeholder: string): HarnessHandlerName | undefined {
    for (const [name, spec] of Object.entries(HARNESS_HANDLERS)) {
      if ('placeholder' in spec && spec.placeholder === placeholder) return name as HarnessHandlerName;
    }
    return undefined;
  }

  private baseEnvironment(): Record<string, string> {
    return {
      [PLATFORM_ENV.eventsTable]: this.eventsTable.table.tableName,
      [PLATFORM_ENV.gatesTable]: this.gatesTable.table.tableName,
      [PLATFORM_ENV.eventBus]: this.eventBus.bus.eventBusName,
    };
  }

  /** Each handler's own permissions and settings, and nothing more. */
  private wireHandlers(planSecretsPrefix: string): void {
    const stack = Stack.of(this);
    const planSecretsArn = stack.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${planSecretsPrefix}*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    for (const name of Object.keys(HARNESS_HANDLERS) as HarnessHandlerName[]) {
      this.grantAppendEvents(this.fn(name));
    }

    const gate = this.functions.gate.function;
    this.gatesTable.grantOpen(gate);
    // A recipe whose escalation is skip/abort is answered by the gate itself.
    this.grantTaskResponse(gate);
    gate.addEnvironment(PLATFORM_ENV.apiUrl, this.httpApi.url);
    if (this.sesSenderParameter) {
      this.sesSenderParameter.grantRead(gate);
      gate.addEnvironment(PLATFORM_ENV.sesSenderParameter, this.sesSenderParameter.parameterName);
      gate.addToRolePolicy(
        new PolicyStatement({
          actions: ['ses:SendEmail'],
          resources: sesIdentityArns(stack, this.sesSender!),
        }),
      );
    }
    if (this.slackWebhookSecret) {
      this.slackWebhookSecret.grantRead(gate);
      gate.addEnvironment(PLATFORM_ENV.slackWebhookSecretArn, this.slackWebhookSecret.secretArn);
    }

    for (const name of ['stepRunner', 'contractChecker'] as const) {
      const fn = this.functions[name].function;
      fn.addToRolePolicy(
        new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [planSecretsArn] }),
      );
      fn.addEnvironment(PLATFORM_ENV.planSecretsPrefix, planSecretsPrefix);
      acknowledgeOn(
        fn,
        planSecretsArn,
        `Plans name their Secrets Manager secrets (source: secretsmanager) and are submitted at run time; reads are scoped to the "${planSecretsPrefix}" name prefix.`,
      );
    }

    const join = this.functions.join.function;
    this.gatesTable.grantOpen(join);
    this.grantTaskResponse(join);

    const api = this.functions.api.function;
    this.grantAnswerGates(api);
    this.grantPlanLaunch(api);
    api.addEnvironment(PLATFORM_ENV.namePrefix, this.namePrefix);
    api.addEnvironment(PLATFORM_ENV.runtimePlanRoleArn, this.runtimePlanRole.roleArn);
    api.addEnvironment(PLATFORM_ENV.runtimePlanLogGroupArn, this.runtimePlanLogGroup.logGroupArn);
    api.addEnvironment(PLATFORM_ENV.substitutions, stack.toJsonString(this.substitutions));
  }

  /**
   * What launching plans needs: create/update/publish state machines named `<prefix>-*` with the
   * runtime plan role, start and stop their executions, read their status and history.
   */
  grantPlanLaunch(grantee: IGrantable): Grant {
    const machines = this.stateMachineArnPattern;
    const versions = `${machines}:*`;
    acknowledgeOn(
      grantee,
      machines,
      `Plans submitted at run time become new state machines whose names are known only then; creation and launch are scoped to the "${this.namePrefix}-" name prefix.`,
    );
    acknowledgeOn(
      grantee,
      versions,
      'Each plan version is published as a state machine version (<machine>:<n>) and launched pinned to it; version numbers are assigned at run time.',
    );
    acknowledgeOn(
      grantee,
      this.executionArnPattern,
      `Execution ARNs exist only once a plan is launched; status, history and stop are scoped to executions of "${this.namePrefix}-" machines.`,
    );
    return Grant.addToPrincipal({
      grantee,
      actions: [
        'states:CreateStateMachine',
        'states:UpdateStateMachine',
        'states:DescribeStateMachine',
        'states:PublishStateMachineVersion',
        'states:ListStateMachineVersions',
        'states:StartExecution',
        'states:ListExecutions',
        'states:TagResource',
      ],
      resourceArns: [machines, versions],
    })
      .combine(
        Grant.addToPrincipal({
          grantee,
          actions: ['states:DescribeExecution', 'states:GetExecutionHistory', 'states:StopExecution'],
          resourceArns: [this.executionArnPattern],
        }),
      )
      .combine(this.runtimePlanRole.grantPassRole(grantee.grantPrincipal));
  }
}

/** SES authorizes SendEmail against the sender's identity: the address itself or its verified domain. */
function sesIdentityArns(stack: Stack, sender: string): string[] {
  const domain = sender.includes('@') ? sender.slice(sender.lastIndexOf('@') + 1) : sender;
  const identities = sender === domain ? [domain] : [sender, domain];
  return identities.map((identity) =>
    stack.formatArn({ service: 'ses', resource: 'identity', resourceName: identity }),
  );
}

/** Acknowledges a scoped wildcard on the grantee's own policy, when the grantee is part of this app. */
function acknowledgeOn(grantee: IGrantable, resourceArn: string, reason: string): void {
  const principal = grantee.grantPrincipal;
  if (Construct.isConstruct(principal)) acknowledgeWildcardResource(principal, resourceArn, reason);
}

function pascal(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

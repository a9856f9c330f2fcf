/**
 * `PlanPlatform`: everything compiled plans run on — the events journal and the working tables,
 * the event bus with its archive, one Lambda per harness handler, the Plans/approvals HTTP API,
 * the notification settings and the role that plans submitted at run time execute with. Plans
 * are `PlanStateMachine`s (deployed with CDK) or created at run time (lib/launch/deploy-plan.ts).
 */

import { basename, resolve } from 'node:path';
import { Annotations, ArnFormat, type Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type { IHttpRouteAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer, HttpUserPoolAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { UserPool, UserPoolClient, UserPoolDomain } from 'aws-cdk-lib/aws-cognito';
import type { IVpc } from 'aws-cdk-lib/aws-ec2';
import { Grant, type IGrantable, PolicyStatement, Role } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Activity } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { agentActivityName, agentActivityPlaceholder } from '../compiler/index.ts';
import { runtimeNamePrefix } from '../launch/deploy-plan.ts';
import { PLAN_SECRETS_PREFIX, PLATFORM_SECRETS_PREFIX } from '../plan/aws-access.ts';
import { defaultPolicyDir } from '../policy/policy-set.ts';
import {
  HARNESS_HANDLERS,
  type HarnessHandlerName,
  JOURNAL_WRITERS,
  STATE_MACHINE_HANDLERS,
  type StateMachineHandlerName,
  TABLE_NAME_ENV,
} from '../runtime/catalog.ts';
import { signInCallbackUrl } from '../runtime/gate/approval-page.ts';
import {
  DRAFTS_TABLE,
  GATES_TABLE,
  JOINS_TABLE,
  OUTPUTS_TABLE,
  PLANS_TABLE,
  VERSIONS_TABLE,
} from '../runtime/journal/tables.ts';
import { HARNESS_METRICS_NAMESPACE } from '../runtime/telemetry/telemetry.ts';
import { ApproverPool } from './approver-pool.ts';
import { PlanEventBus } from './event-bus.ts';
import { EventsTable } from './events-table.ts';
import { type CommonEnvInput, HarnessFunction } from './harness-function.ts';
import { HarnessTable } from './harness-table.ts';
import { JournalAnchors } from './journal-anchors.ts';
import { acknowledgeWildcardResource } from './nag.ts';
import { PlanCode } from './plan-code.ts';
import { PlanHttpApi } from './plan-http-api.ts';
import { PlatformAlarms } from './platform-alarms.ts';
import { grantStateMachineLogging, grantXRayTracing } from './service-grants.ts';
import { trustedService } from './service-trust.ts';

/** The Slack app plangate posts approval requests as, and whose buttons it answers. */
export interface SlackAppProps {
  /** The secret holding the app's bot token (`xoxb-…`; scope `chat:write`). */
  readonly botToken: ISecret;
  /** The secret holding the app's signing secret (verifies that a click came from Slack). */
  readonly signingSecret: ISecret;
  /** The channel id approval requests are posted to, e.g. `C0123456789`. */
  readonly channel: string;
  /** Slack user id → approver name as plans' approval policies name approvers; anyone else is refused. */
  readonly approvers: Readonly<Record<string, string>>;
}

/** The model that drafts plans from goals (`POST /plans {goal}`, lambdas/planner.ts). */
export interface PlannerProps {
  /** @default 'bedrock' */
  readonly provider?: 'bedrock' | 'openai';
  /** A Bedrock model or inference profile id (the planner may invoke only that), or the OpenAI-compatible server's model name. */
  readonly model: string;
  /** OpenAI-compatible servers only. @default - OpenAI's API */
  readonly baseUrl?: string;
  /** OpenAI-compatible servers only: the secret holding the API key. @default - no key */
  readonly apiKey?: ISecret;
  /** Validator rounds per draft. @default 4 */
  readonly maxRounds?: number;
}

export interface PlanPlatformProps {
  /**
   * Prefix of every state machine this platform runs (CDK-deployed and submitted at run time);
   * IAM grants for executions and task responses are scoped to `stateMachine:<prefix>-*`.
   * Two platforms in one account and region need different prefixes.
   * @default 'plangate'
   */
  readonly namePrefix?: string;
  /**
   * The address approval emails are sent from; it (or its domain) must be verified in SES.
   * The notifier may send as this identity only.
   * @default - no approval emails
   */
  readonly sesSender?: string;
  /**
   * Addresses every approval email also goes to, besides the plan's approvers (with `sesSender`
   * only: without it nothing is emailed, and the platform refuses them).
   * @default []
   */
  readonly approvalEmails?: string[];
  /**
   * Why a platform that tells no approver of a gate (neither `sesSender` nor `slack`) is what you
   * want, e.g. `'approvers follow GET /plans/{id} and open its approval link'`: without one of the
   * three the platform does not synthesize, since every gate would wait unseen until it times out.
   * Refused alongside `sesSender` or `slack` (the platform notifies; the reason would be untrue).
   * Synth warns while it is in effect.
   * @default - none: a platform that can reach no approver fails synth
   */
  readonly unnotifiedGatesAcknowledged?: string;
  /**
   * Approval requests in Slack, answered by its buttons (`POST /slack/interactions`).
   * @default - no Slack messages
   */
  readonly slack?: SlackAppProps;
  /**
   * The OpenID Connect issuer whose JWTs name approvers (their `email`, `cognito:username`,
   * `username` or `sub` claim) when they answer a gate through the API.
   * @default - a Cognito user pool for approvers (MFA required, no self sign-up)
   */
  readonly approverJwt?: { readonly issuer: string; readonly audience: string[] };
  /**
   * A planner for `POST /plans {goal}`: the Plans API records the draft and invokes the planner
   * Lambda asynchronously, which drafts, validates and launches the plan to its gate.
   * @default - no planner: goals are refused (501)
   */
  readonly planner?: PlannerProps;
  /**
   * The Cognito domain prefix of the approvers' hosted sign-in (with the user pool only); unique
   * per region, so two platforms in one account and region need different ones.
   * @default `<namePrefix>-approvers-<account id>`
   */
  readonly approverSignInDomainPrefix?: string;
  /**
   * Prefix of the Secrets Manager secret names plans may reference (`source: secretsmanager`);
   * the step runner and the contract checker may read only those. It may not overlap the
   * platform's own prefix (`plangate-platform/`, where the Slack secrets and the approval signing
   * key live), which no plan may reference.
   * @default 'plangate/plans/'
   */
  readonly planSecretsPrefix?: string;
  /**
   * The most a plan's steps may ever do on AWS: the policy of the plan AWS role, which a step that
   * declares `aws` gets for its run, narrowed to its declared grants (the session policy). The
   * role is denied every resource of the harness whatever these allow.
   * @default - none: a step that declares `aws` gets credentials that can do nothing
   */
  readonly planAwsStatements?: readonly PolicyStatement[];
  /**
   * The VPC the plan-process function and the runs' workspaces (EFS) are placed in; its
   * `PRIVATE_WITH_EGRESS` subnets carry what plan code reaches (docs/deploy.md, "Where steps run
   * on AWS").
   * @default - a VPC of its own: two AZs, one NAT gateway, flow logs
   */
  readonly planProcessVpc?: IVpc;
  /**
   * Prefix of the Lambda function names plans may call (the `lambda` tool and `lambda` contracts);
   * the step runner and the contract checker may invoke only those.
   * @default 'plangate-'
   */
  readonly planFunctionsPrefix?: string;
  /**
   * How long the event bus archive keeps events.
   * @default Duration.days(365)
   */
  readonly eventArchiveRetention?: Duration;
  /**
   * Retention of the Lambda, API and state machine log groups.
   * @default RetentionDays.THREE_MONTHS
   */
  readonly logRetention?: RetentionDays;
  /**
   * The platform's Cedar policies (docs/policy.md): a directory of .cedar files and optionally
   * groups.json, shipped with every harness Lambda, which decide who may submit, answer, complete
   * a gate, auto-approve, run a step and read. Check it with `plangate policy validate DIR` first
   * (and `plangate policy test`): a directory that does not load fails every decision.
   * @default the set plangate ships (policies/default)
   */
  readonly policyDir?: string;
  /**
   * The harness Lambdas' log level (POWERTOOLS_LOG_LEVEL): DEBUG, INFO, WARN, ERROR.
   * @default 'INFO'
   */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /**
   * The topic every alarm of the platform (`alarms`) notifies when it goes off.
   * @default - none: the alarms change state, nobody is told
   */
  readonly alarmTopic?: ITopic;
}

export class PlanPlatform extends Construct {
  public readonly namePrefix: string;
  private readonly activities = new Map<string, Activity>();
  public readonly logRetention: RetentionDays;
  /** The append-only event journal. */
  public readonly eventsTable: EventsTable;
  /** Pending approvals; task tokens stay here, server-side. */
  public readonly gatesTable: HarnessTable;
  /** Exact joins across Parallel branches: waiting tokens and predecessor signals. */
  public readonly joinsTable: HarnessTable;
  /** Step outputs too large for the state payload. */
  public readonly outputsTable: HarnessTable;
  /** Plans being drafted from goals, and how each draft ended. */
  public readonly draftsTable: HarnessTable;
  /** One content per plan version, claimed by whoever launches it first. */
  public readonly versionsTable: HarnessTable;
  /** The plans submitted, whole, by digest: what the approval page shows every command from. */
  public readonly plansTable: HarnessTable;
  public readonly eventBus: PlanEventBus;
  /** The harness Lambdas compiled state machines call, by handler name. */
  public readonly functions: { readonly [N in StateMachineHandlerName]: HarnessFunction<N> };
  /** Sends approval requests (email, Slack). */
  public readonly notifier: HarnessFunction<'notifier'>;
  /** Serves the Plans API. */
  public readonly plansApi: HarnessFunction<'plansApi'>;
  /** Drafts plans from goals; absent unless `planner` is configured. */
  public readonly planner?: HarnessFunction<'planner'>;
  /** Serves the approval page and answers. */
  public readonly approvalsApi: HarnessFunction<'approvalsApi'>;
  /** Signs the journal's heads from the events table's stream and writes them to the anchor bucket. */
  public readonly anchor: HarnessFunction<'anchor'>;
  /** The anchor signing key (KMS, only the anchor Lambda signs) and the Object Lock bucket of digests. */
  public readonly anchors: JournalAnchors;
  /** The Plans/approvals HTTP API. */
  public readonly httpApi: PlanHttpApi;
  /**
   * Goes off when a harness Lambda fails for a reason of its own (a throttled journal write, a
   * missing setting, a bug), not a plan's step failing: the HarnessErrors metric (`alarms.harnessErrors`).
   */
  public readonly harnessErrorsAlarm: Alarm;
  /** Everything an operator must be told (lib/cdk/platform-alarms.ts), notifying `alarmTopic` when given. */
  public readonly alarms: PlatformAlarms;
  /** The approvers' user pool, created when no `approverJwt` issuer is given. */
  public readonly approverPool?: UserPool;
  public readonly approverPoolClient?: UserPoolClient;
  /** The approvers' hosted sign-in (with the user pool) and the approval page's public client. */
  public readonly approverSignIn?: { readonly domain: UserPoolDomain; readonly pageClient: UserPoolClient };
  /** The role state machines created at run time (through the Plans API) execute with. */
  public readonly runtimePlanRole: Role;
  /** Where state machines created at run time log. */
  public readonly runtimePlanLogGroup: LogGroup;
  /** The address approval emails are sent from, when email is on. */
  public readonly sesSender?: string;
  /** Why no approver is notified, when neither email nor Slack is on (the prop, trimmed). */
  public readonly unnotifiedGatesAcknowledged?: string;
  public readonly slack?: SlackAppProps;
  public readonly planSecretsPrefix: string;
  public readonly planFunctionsPrefix: string;
  /** Where plan code runs: the plan-process function and the plan AWS role (lib/cdk/plan-code.ts). */
  public readonly planCode: PlanCode;
  /** The HMAC key that signs approval ids (generated; the gate signs, the API verifies). */
  public readonly approvalSigningKey: Secret;

  constructor(scope: Construct, id: string, props: PlanPlatformProps = {}) {
    super(scope, id);
    this.namePrefix = props.namePrefix ?? 'plangate';
    this.logRetention = props.logRetention ?? RetentionDays.THREE_MONTHS;
    this.planSecretsPrefix = props.planSecretsPrefix ?? PLAN_SECRETS_PREFIX;
    if (
      PLATFORM_SECRETS_PREFIX.startsWith(this.planSecretsPrefix) ||
      this.planSecretsPrefix.startsWith(PLATFORM_SECRETS_PREFIX)
    )
      throw new Error(
        `planSecretsPrefix "${this.planSecretsPrefix}" overlaps the platform's own secrets (${PLATFORM_SECRETS_PREFIX}…), which no plan may read: use a prefix of its own, e.g. "${PLAN_SECRETS_PREFIX}"`,
      );
    for (const [what, secret] of platformSecretsOf(props))
      if (!Token.isUnresolved(secret.secretName) && secret.secretName.startsWith(this.planSecretsPrefix))
        throw new Error(
          `${what} (${secret.secretName}) is under planSecretsPrefix "${this.planSecretsPrefix}", which plans may read: name it under ${PLATFORM_SECRETS_PREFIX}, e.g. ${PLATFORM_SECRETS_PREFIX}${basename(secret.secretName)}`,
        );
    this.planFunctionsPrefix = props.planFunctionsPrefix ?? 'plangate-';
    this.slack = props.slack;
    this.sesSender = props.sesSender;
    this.unnotifiedGatesAcknowledged = checkNotification(props);
    if (this.unnotifiedGatesAcknowledged !== undefined)
      Annotations.of(this).addWarningV2(
        'plangate:unnotifiedGates',
        `no approver is told of a gate (no sesSender, no slack): ${this.unnotifiedGatesAcknowledged}`,
      );

    this.eventsTable = new EventsTable(this, 'Events');
    this.gatesTable = new HarnessTable(this, 'Gates', { definition: GATES_TABLE });
    this.joinsTable = new HarnessTable(this, 'Joins', { definition: JOINS_TABLE });
    this.outputsTable = new HarnessTable(this, 'Outputs', { definition: OUTPUTS_TABLE });
    this.draftsTable = new HarnessTable(this, 'Drafts', { definition: DRAFTS_TABLE });
    this.versionsTable = new HarnessTable(this, 'Versions', { definition: VERSIONS_TABLE });
    this.plansTable = new HarnessTable(this, 'Plans', { definition: PLANS_TABLE });
    this.eventBus = new PlanEventBus(this, 'EventBus', { archiveRetention: props.eventArchiveRetention });

    const environment = this.commonEnvironment(props.logLevel ?? 'INFO');
    const policyDir = resolve(props.policyDir ?? defaultPolicyDir());
    const harnessFunction = <N extends HarnessHandlerName>(
      name: N,
      invokedAsynchronously = false,
    ): HarnessFunction<N> =>
      new HarnessFunction(this, `${name.charAt(0).toUpperCase()}${name.slice(1)}Handler`, {
        handler: name,
        logRetention: this.logRetention,
        environment,
        policyDir,
        invokedAsynchronously,
      });
    this.functions = {
      gate: harnessFunction('gate'),
      stepRunner: harnessFunction('stepRunner'),
      contractChecker: harnessFunction('contractChecker'),
      classifier: harnessFunction('classifier'),
      join: harnessFunction('join'),
    };
    // The gate and the approvals API invoke the notifier, the Plans API the planner, with
    // InvocationType Event (lambdas/default-deps.ts, invokeAsync): a notice or a draft Lambda gives
    // up on lands in the function's dead-letter queue.
    this.notifier = harnessFunction('notifier', true);
    this.plansApi = harnessFunction('plansApi');
    this.approvalsApi = harnessFunction('approvalsApi');
    if (props.planner) this.planner = harnessFunction('planner', true);
    this.anchor = harnessFunction('anchor');
    this.anchors = new JournalAnchors(this, 'JournalAnchors', {
      eventsTable: this.eventsTable,
      anchor: this.anchor,
    });
    const httpApi = new PlanHttpApi(this, 'HttpApi', {
      plansHandler: this.plansApi.function,
      logRetention: this.logRetention,
    });
    this.httpApi = httpApi;
    let approverAuthorizer: IHttpRouteAuthorizer;
    if (props.approverJwt) {
      approverAuthorizer = new HttpJwtAuthorizer('Approvers', props.approverJwt.issuer, {
        jwtAudience: props.approverJwt.audience,
      });
    } else {
      const approvers = new ApproverPool(this, 'Approvers', {
        domainPrefix:
          props.approverSignInDomainPrefix ?? `${this.namePrefix}-approvers-${Stack.of(this).account}`,
      });
      // The page client returns to the API's callback page, so it comes after the API.
      const pageClient = approvers.addPageClient(signInCallbackUrl(httpApi.url));
      this.approverPool = approvers.pool;
      this.approverPoolClient = approvers.client;
      this.approverSignIn = { domain: approvers.domain, pageClient };
      approverAuthorizer = new HttpUserPoolAuthorizer('Approvers', approvers.pool, {
        userPoolClients: [approvers.client, pageClient],
      });
    }
    httpApi.addApprovalRoutes(this.approvalsApi.function, approverAuthorizer);

    this.runtimePlanLogGroup = new LogGroup(this, 'RuntimePlanLogs', {
      logGroupName: `/aws/vendedlogs/states/${this.namePrefix}-runtime-plans-${Stack.of(this).stackName}`,
      retention: this.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.runtimePlanRole = new Role(this, 'RuntimePlanRole', {
      // Only the machines the Plans API creates (`<prefix>-run-*`, their versions too), in this account.
      assumedBy: trustedService(this, 'states.amazonaws.com', [this.runtimeStateMachineArnPattern]),
      description: 'plangate: role of the state machines the Plans API creates at run time',
    });
    for (const handler of STATE_MACHINE_HANDLERS) this.grantInvokeHandler(this.runtimePlanRole, handler);
    // A run-time plan's parts and step machines are run-time machines too; never a CDK-deployed one.
    this.grantRunChildren(
      this.runtimePlanRole,
      this.runtimeStateMachineArnPattern,
      this.statesArn('execution', `${this.runtimeNamePrefix}-*`),
    );
    grantStateMachineLogging(this.runtimePlanRole);
    grantXRayTracing(this.runtimePlanRole);
    Validations.of(this.runtimePlanRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Step Functions log delivery (logs:*LogDelivery, PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups) and X-Ray (PutTraceSegments, PutTelemetryRecords, GetSampling*) support only Resource "*".',
    });

    this.approvalSigningKey = new Secret(this, 'ApprovalSigningKey', {
      // The platform's own secrets live under a prefix no plan may reference.
      secretName: `${PLATFORM_SECRETS_PREFIX}${Stack.of(this).stackName}/approval-signing-key`,
      description: 'plangate: HMAC key signing approval ids (links carry the signed id, never a task token)',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    Validations.of(this.approvalSigningKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Rotating the approval signing key invalidates every outstanding approval link at once; it is rotated deliberately (update the secret when no gate is pending), not on a schedule.',
    });

    this.planCode = new PlanCode(this, 'PlanCode', {
      logRetention: this.logRetention,
      telemetryEnvironment: {
        POWERTOOLS_SERVICE_NAME: environment.POWERTOOLS_SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: environment.POWERTOOLS_METRICS_NAMESPACE,
        POWERTOOLS_LOG_LEVEL: environment.POWERTOOLS_LOG_LEVEL,
      },
      ...(props.planAwsStatements ? { planAwsStatements: props.planAwsStatements } : {}),
      ...(props.planProcessVpc ? { vpc: props.planProcessVpc } : {}),
      harnessResourceArns: this.harnessResourceArns(props),
      runners: [this.functions.stepRunner.role, this.functions.contractChecker.role],
    });

    this.wireHandlers(props.approvalEmails ?? []);
    if (this.planner && props.planner) this.wirePlanner(this.planner, this.plansApi, props.planner);

    this.alarms = new PlatformAlarms(this, 'Alarms', {
      namePrefix: this.namePrefix,
      functions: [...this.harnessFunctions, this.planCode.function],
      httpApi: this.httpApi,
      failureQueues: this.failureQueues,
      stateMachineArnPrefix: this.statesArn('stateMachine', `${this.namePrefix}-`),
      ...(props.alarmTopic ? { alarmTopic: props.alarmTopic } : {}),
    });
    this.harnessErrorsAlarm = this.alarms.harnessErrors;
    // Failed executions' status changes name executions and carry their causes.
    this.planCode.denyHarnessResources([this.alarms.failedExecutionsQueue.queueArn]);
  }

  /**
   * Every resource of the harness, as ARNs and the patterns under them (indexes and streams,
   * function versions, bucket objects): what plan code must never reach.
   */
  private harnessResourceArns(props: PlanPlatformProps): string[] {
    const tables = [
      this.eventsTable.table,
      this.gatesTable.table,
      this.joinsTable.table,
      this.outputsTable.table,
      this.draftsTable.table,
      this.versionsTable.table,
      this.plansTable.table,
    ];
    const functions = this.harnessFunctions.map((fn) => fn.function.functionArn);
    return [
      ...tables.flatMap((table) => [table.tableArn, `${table.tableArn}/*`]),
      // Undelivered notices carry the gate's shared link id; failed anchor batches name shards.
      ...this.failureQueues.map((queue) => queue.queueArn),
      this.eventBus.bus.eventBusArn,
      ...functions.flatMap((arn) => [arn, `${arn}:*`]),
      this.anchors.key.keyArn,
      this.anchors.bucket.bucketArn,
      `${this.anchors.bucket.bucketArn}/*`,
      this.platformSecretsArn,
      ...platformSecretsOf(props).map(([, secret]) => secret.secretArn),
      this.approvalSigningKey.secretArn,
    ];
  }

  /** The harness's own functions (not plan code's). */
  get harnessFunctions(): HarnessFunction[] {
    return [
      ...Object.values(this.functions),
      this.notifier,
      this.plansApi,
      this.approvalsApi,
      this.anchor,
      ...(this.planner ? [this.planner] : []),
    ];
  }

  /**
   * Every queue where an asynchronous invocation's failure lands: the notifier's and the planner's
   * dead-letter queues, the anchor stream's on-failure destination. Nothing should ever be in one.
   */
  get failureQueues(): Queue[] {
    return [
      ...[this.notifier, this.planner].flatMap((fn) => fn?.deadLetterQueue ?? []),
      this.anchors.failureQueue,
    ];
  }

  /** The ARN pattern of the platform's own secrets (`secret:plangate-platform/*`), which no plan may reference. */
  get platformSecretsArn(): string {
    return Stack.of(this).formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${PLATFORM_SECRETS_PREFIX}*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  /** The Lambda function behind a handler compiled state machines call. */
  fn(name: StateMachineHandlerName): IFunction {
    return this.functions[name].function;
  }

  /** Placeholder → value (a deploy-time token) for every harness function a compiled definition may call. */
  get substitutions(): Readonly<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const handler of STATE_MACHINE_HANDLERS)
      out[HARNESS_HANDLERS[handler].placeholder] = this.fn(handler).functionArn;
    return out;
  }

  /** Name prefix of state machines created at run time (inside `<prefix>-*`, apart from code plans). */
  get runtimeNamePrefix(): string {
    return runtimeNamePrefix(this.namePrefix);
  }

  /** ARN pattern of the state machines created at run time (`stateMachine:<prefix>-run-*`), their versions included. */
  get runtimeStateMachineArnPattern(): string {
    return this.statesArn('stateMachine', `${this.runtimeNamePrefix}-*`);
  }

  /** ARN pattern of every state machine of this platform (`stateMachine:<prefix>-*`). */
  get stateMachineArnPattern(): string {
    return this.statesArn('stateMachine', `${this.namePrefix}-*`);
  }

  /** ARN pattern of every execution of this platform's state machines. */
  get executionArnPattern(): string {
    return this.statesArn('execution', `${this.namePrefix}-*`);
  }

  /** A Step Functions ARN in this stack's account and region. */
  statesArn(resource: 'stateMachine' | 'execution' | 'activity', resourceName: string): string {
    return Stack.of(this).formatArn({
      service: 'states',
      resource,
      resourceName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  /** What a journal writer needs: put (never update or delete) and query events, put them on the bus. */
  grantAppendEvents(grantee: IGrantable): Grant {
    return this.eventsTable
      .grantAppend(grantee)
      .combine(this.eventsTable.grantRead(grantee))
      .combine(this.eventBus.bus.grantPutEventsTo(grantee));
  }

  /** What an auditor needs: read (and scan, for `verify --all`) the events table and every index, and check the chain's anchors. */
  grantReadEvents(grantee: IGrantable): Grant {
    return this.eventsTable
      .grantRead(grantee)
      .combine(this.eventsTable.grantScan(grantee))
      .combine(this.anchors.grantVerify(grantee));
  }

  /**
   * What answering a gate needs: read the pending approval and record the decision, complete the
   * waiting task (SendTaskSuccess/Failure on this platform's state machines), journal the decision.
   */
  grantAnswerGates(grantee: IGrantable): Grant {
    return this.gatesTable
      .grantItems(grantee, 'read', 'write')
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
   * What the integrity check (lib/runtime/steps/integrity.ts) reads: the definition an execution
   * runs and each part's version, to compare with the hash its PLAN_CREATED pinned.
   */
  grantReadDefinitions(grantee: IGrantable): Grant {
    for (const arn of [this.executionArnPattern, this.stateMachineArnPattern])
      acknowledgeOn(
        grantee,
        arn,
        `Executions and state machine versions of any plan of this platform (also those created at run time) are checked against their pinned definition, so the read is scoped by the "${this.namePrefix}-" name prefix.`,
      );
    return Grant.addToPrincipal({
      grantee,
      actions: ['states:DescribeStateMachineForExecution'],
      resourceArns: [this.executionArnPattern],
    }).combine(
      Grant.addToPrincipal({
        grantee,
        actions: ['states:DescribeStateMachine'],
        resourceArns: [this.stateMachineArnPattern],
      }),
    );
  }

  /**
   * lambda:InvokeFunction on exactly the function's unqualified ARN (compiled definitions call the
   * unqualified ARN, so no `:*` version wildcard is needed).
   */
  grantInvokeHandler(grantee: IGrantable, handler: StateMachineHandlerName): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ['lambda:InvokeFunction'],
      resourceArns: [this.fn(handler).functionArn],
    });
  }

  /**
   * What `states:startExecution.sync:2` needs: start the child machines, describe and stop their
   * executions, and manage the rule Step Functions uses to learn that a child finished.
   */
  grantRunChildren(
    grantee: IGrantable,
    childMachineArns: string | string[],
    childExecutionArns: string | string[],
  ): Grant {
    const machines = [childMachineArns].flat();
    const executions = [childExecutionArns].flat();
    const rule = Stack.of(this).formatArn({
      service: 'events',
      resource: 'rule',
      resourceName: 'StepFunctionsGetEventsForStepFunctionsExecutionRule',
    });
    for (const arn of [...machines, ...executions]) {
      acknowledgeOn(
        grantee,
        arn,
        'startExecution.sync:2 starts child executions whose names are generated at run time; DescribeExecution/StopExecution are scoped to the executions of the named child machines.',
      );
    }
    return Grant.addToPrincipal({ grantee, actions: ['states:StartExecution'], resourceArns: machines })
      .combine(
        Grant.addToPrincipal({
          grantee,
          actions: ['states:DescribeExecution', 'states:StopExecution'],
          resourceArns: executions,
        }),
      )
      .combine(
        Grant.addToPrincipal({
          grantee,
          actions: ['events:PutTargets', 'events:PutRule', 'events:DescribeRule'],
          resourceArns: [rule],
        }),
      );
  }

  /**
   * What launching plans needs: create, update and publish state machines named `<prefix>-run-*`
   * with the runtime plan role, start them (pinned versions too), and read executions of the
   * platform's machines. Never the machines deployed with CDK: those are not under `<prefix>-run-`
   * (`PlanStateMachine` refuses such a name).
   */
  grantPlanLaunch(grantee: IGrantable): Grant {
    const machines = this.runtimeStateMachineArnPattern;
    const versions = `${machines}:*`;
    acknowledgeOn(
      grantee,
      machines,
      `Plans submitted at run time become new state machines whose names are known only then; creation and launch are scoped to the "${this.runtimeNamePrefix}-" name prefix.`,
    );
    acknowledgeOn(
      grantee,
      versions,
      'Each plan version is published as a state machine version (<machine>:<n>) and launched pinned to it; version numbers are assigned at run time.',
    );
    acknowledgeOn(
      grantee,
      this.executionArnPattern,
      `Execution ARNs exist only once a plan is launched; status and history are scoped to executions of "${this.namePrefix}-" machines.`,
    );
    acknowledgeOn(
      grantee,
      this.activityArnPattern,
      `The activities of a run-time plan's agent targets are created when it is deployed; they are scoped to the "${this.namePrefix}-" name prefix.`,
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
      ],
      resourceArns: [machines, versions],
    })
      .combine(
        Grant.addToPrincipal({
          grantee,
          // GET /plans/{id} reads any execution of the platform's plans; nothing here stops one.
          actions: ['states:DescribeExecution', 'states:GetExecutionHistory'],
          resourceArns: [this.executionArnPattern],
        }),
      )
      .combine(
        Grant.addToPrincipal({
          grantee,
          // Deploying a plan with agent steps ensures its targets' activities exist.
          actions: ['states:CreateActivity', 'states:DescribeActivity'],
          resourceArns: [this.activityArnPattern],
        }),
      )
      .combine(this.runtimePlanRole.grantPassRole(grantee.grantPrincipal));
  }

  /** ARN pattern of every agent activity of this platform (`activity:<prefix>-*`). */
  get activityArnPattern(): string {
    return this.statesArn('activity', `${this.namePrefix}-*`);
  }

  /** The activity workers of agent `target` poll (`<prefix>-<target>`), created once per platform. */
  agentActivity(target: string): Activity {
    let activity = this.activities.get(target);
    if (!activity) {
      activity = new Activity(this, `AgentActivity-${agentActivityPlaceholder(target)}`, {
        activityName: agentActivityName(this.namePrefix, target),
      });
      this.activities.set(target, activity);
    }
    return activity;
  }

  /**
   * What a worker (`plangate worker`) needs, and nothing more: take tasks of the agent
   * activities — one target's, or every target's of this platform — and answer them.
   */
  grantWorker(grantee: IGrantable, target?: string): Grant {
    const arn =
      target === undefined
        ? this.activityArnPattern
        : this.statesArn('activity', agentActivityName(this.namePrefix, target));
    if (target === undefined)
      acknowledgeOn(
        grantee,
        arn,
        `Plans submitted at run time create the activities of their agent targets, whose names are known only then; a worker of every target is scoped to the "${this.namePrefix}-" name prefix.`,
      );
    // A worker finds its activity by name (`plangate worker --aws --target T`); ListActivities has
    // no resource-level permission, and it reveals only activity names and ARNs.
    acknowledgeOn(
      grantee,
      '*',
      'states:ListActivities has no resource-level permission; it lists activity names only.',
    );
    Grant.addToPrincipal({ grantee, actions: ['states:ListActivities'], resourceArns: ['*'] });
    return Grant.addToPrincipal({
      grantee,
      actions: [
        'states:GetActivityTask',
        'states:SendTaskSuccess',
        'states:SendTaskFailure',
        'states:SendTaskHeartbeat',
      ],
      resourceArns: [arn],
    });
  }

  /** What every harness Lambda reads: the tables, the bus, and Powertools' service, namespace and level. */
  private commonEnvironment(logLevel: string): CommonEnvInput {
    return {
      [TABLE_NAME_ENV.events]: this.eventsTable.table.tableName,
      [TABLE_NAME_ENV.gates]: this.gatesTable.table.tableName,
      [TABLE_NAME_ENV.joins]: this.joinsTable.table.tableName,
      [TABLE_NAME_ENV.outputs]: this.outputsTable.table.tableName,
      [TABLE_NAME_ENV.drafts]: this.draftsTable.table.tableName,
      [TABLE_NAME_ENV.versions]: this.versionsTable.table.tableName,
      [TABLE_NAME_ENV.plans]: this.plansTable.table.tableName,
      PLANGATE_EVENT_BUS: this.eventBus.bus.eventBusName,
      POWERTOOLS_SERVICE_NAME: this.namePrefix,
      POWERTOOLS_METRICS_NAMESPACE: HARNESS_METRICS_NAMESPACE,
      POWERTOOLS_LOG_LEVEL: logLevel,
    };
  }

  /** The functions of the journal's writers (JOURNAL_WRITERS of the catalog) this platform has. */
  get journalWriters(): HarnessFunction[] {
    const byName: Partial<Record<HarnessHandlerName, HarnessFunction>> = {
      ...this.functions,
      notifier: this.notifier,
      plansApi: this.plansApi,
      approvalsApi: this.approvalsApi,
      ...(this.planner ? { planner: this.planner } : {}),
    };
    return JOURNAL_WRITERS.flatMap((name) => byName[name] ?? []);
  }

  /** Each handler's own permissions and settings, and nothing more. */
  private wireHandlers(approvalEmails: readonly string[]): void {
    const stack = Stack.of(this);
    // Only the journal's writers may put events; the table's resource policy refuses everyone else.
    const writers = this.journalWriters;
    for (const fn of writers) this.grantAppendEvents(fn.function);
    this.eventsTable.restrictAppendTo(writers.map((fn) => fn.role));

    // The gate signs approval ids, the approvals API verifies them, the notifier derives each
    // emailed recipient's own id from the gate's (recipient-bound links).
    const signingKey = { PLANGATE_APPROVAL_SIGNING_KEY_SECRET: this.approvalSigningKey.secretArn };
    const signers = [this.functions.gate, this.approvalsApi, ...(this.sesSender ? [this.notifier] : [])];
    for (const fn of signers) {
      this.approvalSigningKey.grantRead(fn.function);
      fn.setEnvironment(signingKey);
    }

    const gate = this.functions.gate;
    this.gatesTable.grantItems(gate.function, 'read', 'write');
    // A recipe whose escalation is skip/abort is answered by the gate itself.
    this.grantTaskResponse(gate.function);
    const notifierFunction = { PLANGATE_NOTIFIER_FUNCTION: this.notifier.function.functionName };
    Grant.addToPrincipal({
      grantee: gate.function,
      actions: ['lambda:InvokeFunction'],
      resourceArns: [this.notifier.function.functionArn],
    });
    gate.setEnvironment(notifierFunction);
    // Each gate says where plan code runs; the gate may not invoke it.
    gate.setEnvironment({ PLANGATE_PLAN_PROCESS_FUNCTION: this.planCode.function.function.functionName });
    // An approval with modifications makes a new revision: the approvals API asks the approvers again.
    Grant.addToPrincipal({
      grantee: this.approvalsApi.function,
      actions: ['lambda:InvokeFunction'],
      resourceArns: [this.notifier.function.functionArn],
    });
    this.approvalsApi.setEnvironment(notifierFunction);
    this.wireNotifier(this.notifier, stack, approvalEmails);
    if (this.slack) {
      // The timeout ladder's escalations and `timed out` rejections show in the gate's Slack messages.
      this.slack.botToken.grantRead(gate.function);
      gate.setEnvironment({ PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN: this.slack.botToken.secretArn });
    }

    const planSecretsArn = stack.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${this.planSecretsPrefix}*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const planFunctionsArn = stack.formatArn({
      service: 'lambda',
      resource: 'function',
      resourceName: `${this.planFunctionsPrefix}*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    for (const step of [this.functions.stepRunner, this.functions.contractChecker]) {
      const fn = step.function;
      // Every plan process (shell steps, command contracts, postconditions, rollbacks) runs
      // there; a step that declares aws gets a session of the plan AWS role this one assumes.
      step.setEnvironment({
        PLANGATE_PLAN_PROCESS_FUNCTION: this.planCode.function.function.functionName,
        PLANGATE_PLAN_AWS_ROLE_ARN: this.planCode.awsRole.roleArn,
      });
      fn.addToRolePolicy(
        new PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [planSecretsArn] }),
      );
      fn.addToRolePolicy(
        new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [planFunctionsArn] }),
      );
      acknowledgeOn(
        fn,
        planSecretsArn,
        `Plans name their Secrets Manager secrets (source: secretsmanager) and may be submitted at run time; reads are scoped to the "${this.planSecretsPrefix}" name prefix.`,
      );
      acknowledgeOn(
        fn,
        planFunctionsArn,
        `Plans name the Lambda functions their steps and contracts call (lambda tool, lambda contracts), possibly at run time; invocation is scoped to the "${this.planFunctionsPrefix}" name prefix.`,
      );
    }
    // Before a step, contract or rollback runs, and when a plan gate's approval binds it.
    for (const fn of [this.fn('stepRunner'), this.fn('contractChecker'), this.approvalsApi.function])
      this.grantReadDefinitions(fn);
    this.outputsTable.grantItems(this.fn('stepRunner'), 'read', 'write');
    // The checker keeps a completed attempt's result (and forgets a refused one): steps/README.md.
    this.outputsTable.grantItems(this.fn('contractChecker'), 'read', 'write');

    this.joinsTable.grantItems(this.fn('join'), 'read', 'write');
    this.grantTaskResponse(this.fn('join'));

    this.grantAnswerGates(this.approvalsApi.function);
    // The page shows every command of a gate from the plan as submitted.
    this.plansTable.grantItems(this.approvalsApi.function, 'read');
    if (this.slack) this.wireSlackInteractions(this.approvalsApi, this.slack);
    if (this.approverSignIn)
      this.approvalsApi.setEnvironment({
        PLANGATE_COGNITO_DOMAIN: this.approverSignIn.domain.baseUrl(),
        PLANGATE_COGNITO_CLIENT_ID: this.approverSignIn.pageClient.userPoolClientId,
        PLANGATE_API_URL: this.httpApi.url,
      });
    this.wireRuntimeLaunch(this.plansApi, stack);
    this.draftsTable.grantItems(this.plansApi.function, 'read', 'write');
  }

  /** Plans launched at run time (the Plans API, the planner): their settings and permissions. */
  private wireRuntimeLaunch(
    launcher: HarnessFunction<'plansApi'> | HarnessFunction<'planner'>,
    stack: Stack,
  ): void {
    this.grantPlanLaunch(launcher.function);
    this.versionsTable.grantItems(launcher.function, 'read', 'write');
    this.plansTable.grantItems(launcher.function, 'read', 'write');
    launcher.setEnvironment({
      // Plans submitted at run time are `<prefix>-run-<planId>`, apart from plans deployed as code.
      PLANGATE_NAME_PREFIX: this.runtimeNamePrefix,
      PLANGATE_RUNTIME_PLAN_ROLE_ARN: this.runtimePlanRole.roleArn,
      PLANGATE_RUNTIME_PLAN_LOG_GROUP_ARN: this.runtimePlanLogGroup.logGroupArn,
      PLANGATE_SUBSTITUTIONS: stack.toJsonString(this.substitutions),
    });
  }

  /**
   * The planner drafts what the Plans API hands it and launches it as the Plans API would; it may
   * call its one model (Bedrock) or read its one API key (OpenAI-compatible), nothing else.
   */
  private wirePlanner(
    planner: HarnessFunction<'planner'>,
    plansApi: HarnessFunction<'plansApi'>,
    props: PlannerProps,
  ): void {
    const stack = Stack.of(this);
    this.wireRuntimeLaunch(planner, stack);
    this.draftsTable.grantItems(planner.function, 'read', 'write');
    Grant.addToPrincipal({
      grantee: plansApi.function,
      actions: ['lambda:InvokeFunction'],
      resourceArns: [planner.function.functionArn],
    });
    plansApi.setEnvironment({ PLANGATE_PLANNER_FUNCTION: planner.function.functionName });
    const provider = props.provider ?? 'bedrock';
    planner.setEnvironment({
      PLANGATE_PLANNER_PROVIDER: provider,
      PLANGATE_PLANNER_MODEL: props.model,
      ...(props.maxRounds !== undefined ? { PLANGATE_PLANNER_MAX_ROUNDS: String(props.maxRounds) } : {}),
    });
    if (provider === 'openai') {
      if (props.baseUrl) planner.setEnvironment({ OPENAI_BASE_URL: props.baseUrl });
      if (props.apiKey) {
        props.apiKey.grantRead(planner.function);
        planner.setEnvironment({ OPENAI_API_KEY_SECRET_ARN: props.apiKey.secretArn });
      }
      return;
    }
    // Cross-region inference profiles route a call to the model in any of their regions.
    const model = stack.formatArn({
      service: 'bedrock',
      region: '*',
      account: '',
      resource: 'foundation-model',
      resourceName: props.model.replace(/^[a-z]{2}\./, ''),
    });
    const profile = stack.formatArn({
      service: 'bedrock',
      resource: 'inference-profile',
      resourceName: props.model,
    });
    acknowledgeOn(
      planner.function,
      model,
      'A cross-region inference profile serves the one configured model from any of its regions; the model id is fixed, only the region is open.',
    );
    Grant.addToPrincipal({
      grantee: planner.function,
      actions: ['bedrock:InvokeModel'],
      resourceArns: [model, profile],
    });
  }

  /** The notifier sends the approval request: SES as the configured sender, Slack through the bot token secret. */
  private wireNotifier(
    notifier: HarnessFunction<'notifier'>,
    stack: Stack,
    approvalEmails: readonly string[],
  ): void {
    notifier.setEnvironment({ PLANGATE_API_URL: this.httpApi.url });
    if (this.sesSender) {
      notifier.setEnvironment({
        PLANGATE_SES_SENDER: this.sesSender,
        ...(approvalEmails.length > 0 ? { PLANGATE_NOTIFY_EMAILS: approvalEmails.join(',') } : {}),
      });
      notifier.function.addToRolePolicy(
        new PolicyStatement({
          actions: ['ses:SendEmail'],
          resources: sesIdentityArns(stack, this.sesSender),
        }),
      );
    }
    if (this.slack) {
      // Where each gate's message went is kept on the gate, so a decision made elsewhere shows in it.
      this.gatesTable.grantItems(notifier.function, 'write');
      this.slack.botToken.grantRead(notifier.function);
      notifier.setEnvironment({
        PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN: this.slack.botToken.secretArn,
        PLANGATE_SLACK_CHANNEL: this.slack.channel,
      });
    }
  }

  /** The approvals API answers Slack's buttons: it verifies clicks and updates the message. */
  private wireSlackInteractions(approvals: HarnessFunction<'approvalsApi'>, slack: SlackAppProps): void {
    slack.botToken.grantRead(approvals.function);
    slack.signingSecret.grantRead(approvals.function);
    approvals.setEnvironment({
      PLANGATE_SLACK_BOT_TOKEN_SECRET_ARN: slack.botToken.secretArn,
      PLANGATE_SLACK_SIGNING_SECRET_SECRET_ARN: slack.signingSecret.secretArn,
      PLANGATE_SLACK_APPROVERS: Object.entries(slack.approvers)
        .map(([user, approver]) => `${user}=${approver}`)
        .join(','),
    });
  }
}

/**
 * A platform must be able to tell an approver that a gate waits (email or Slack), or say why not:
 * returns the acknowledged reason, trimmed, when it cannot; throws naming the props that fix it.
 */
function checkNotification(props: PlanPlatformProps): string | undefined {
  const reason = props.unnotifiedGatesAcknowledged;
  const channels = [
    ...(props.sesSender !== undefined ? ['sesSender'] : []),
    ...(props.slack !== undefined ? ['slack'] : []),
  ];
  if (props.sesSender !== undefined && !Token.isUnresolved(props.sesSender) && props.sesSender.trim() === '')
    throw new Error('PlanPlatform: sesSender is empty: give the SES identity approval emails are sent from');
  if ((props.approvalEmails ?? []).length > 0 && props.sesSender === undefined)
    throw new Error(
      `PlanPlatform: approvalEmails (${(props.approvalEmails ?? []).join(', ')}) are never emailed without sesSender: set sesSender to the SES identity approval emails are sent from`,
    );
  if (channels.length > 0) {
    if (reason !== undefined)
      throw new Error(
        `PlanPlatform: unnotifiedGatesAcknowledged is set, but approvers are notified (${channels.join(', ')}): remove it`,
      );
    return undefined;
  }
  if (reason === undefined)
    throw new Error(
      'PlanPlatform: no approver would ever be told that a gate waits: neither sesSender (approval emails through SES) nor slack (approval requests in Slack) is set, so every gate would wait unseen until it times out. Set sesSender or slack, or set unnotifiedGatesAcknowledged to the reason nobody is notified (e.g. "approvers follow GET /plans/{id} and open its approval link").',
    );
  if (Token.isUnresolved(reason) || reason.trim() === '')
    throw new Error(
      'PlanPlatform: unnotifiedGatesAcknowledged must say, in words known at synth, why no approver is notified of a gate',
    );
  return reason.trim();
}

/** The secrets the platform is given to read (Slack's, the planner's API key), by what they are. */
function platformSecretsOf(props: PlanPlatformProps): [string, ISecret][] {
  return [
    ...(props.slack
      ? ([
          ['the Slack bot token secret', props.slack.botToken],
          ['the Slack signing secret', props.slack.signingSecret],
        ] as [string, ISecret][])
      : []),
    ...(props.planner?.apiKey
      ? ([["the planner's API key secret", props.planner.apiKey]] as [string, ISecret][])
      : []),
  ];
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

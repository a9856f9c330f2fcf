/**
 * `PlatformAlarms`: what an operator of a platform must be told, each as a CloudWatch alarm that
 * goes off on the first occurrence in a 5-minute period (missing data is not breaching):
 *
 * - the harness failed for a reason of its own (`HarnessErrors`, counted by the handlers' code);
 * - a harness function failed or was stopped: the `Errors` of every function that is not a state
 *   machine's task (there every error is one); for the state machines' handlers, whose `Errors`
 *   also count the step failures they throw to Step Functions on purpose, the invocations Lambda
 *   stopped at their timeout or memory limit (a metric filter on their log groups);
 * - an execution of any of the platform's state machines (deployed with CDK or created at run
 *   time, `stateMachine:<prefix>-*`) failed, timed out or was aborted: an EventBridge rule on Step
 *   Functions' status changes keeps each in a queue, and the alarm is that queue not being empty;
 * - the HTTP API answered 5xx;
 * - a failure queue (a dead-letter queue, the anchor's on-failure queue) holds anything;
 * - a gate's notice reached nobody (`GateNoticeUndelivered`, emitted by the notifier).
 *
 * With `alarmTopic`, every alarm notifies it.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  type IMetric,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Match, Rule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { FilterPattern, MetricFilter } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  type HarnessHandlerName,
  STATE_MACHINE_HANDLERS,
  type StateMachineHandlerName,
} from '../runtime/catalog.ts';
import {
  HARNESS_ERRORS_METRIC,
  HARNESS_METRICS_NAMESPACE,
  NOTICE_UNDELIVERED_METRIC,
} from '../runtime/telemetry/telemetry.ts';
import type { HarnessFunction } from './harness-function.ts';
import type { PlanHttpApi } from './plan-http-api.ts';

/**
 * The metric the notifier emits when a gate's notice reached nobody (no channel configured, or
 * every send failed), with Powertools Metrics' service dimension fixed to the notifier.
 */
export const GATE_NOTICE_UNDELIVERED = {
  namespace: NOTICE_UNDELIVERED_METRIC.namespace,
  metricName: NOTICE_UNDELIVERED_METRIC.name,
  dimensionsMap: { service: NOTICE_UNDELIVERED_METRIC.service },
} as const;

/** What Lambda writes to a function's log group when it stops an invocation at a limit. */
const STOPPED_BY_LAMBDA = ['Task timed out after', 'Runtime.OutOfMemory', 'Runtime exited with error'];

const PERIOD = Duration.minutes(5);

export interface PlatformAlarmsProps {
  /** The platform's name prefix: the `service` of its metrics, the prefix of its state machines. */
  readonly namePrefix: string;
  /** Every harness function of the platform, plan code's included. */
  readonly functions: readonly HarnessFunction[];
  readonly httpApi: PlanHttpApi;
  /** The queues where asynchronous invocations' failures land. */
  readonly failureQueues: readonly Queue[];
  /** The ARN every state machine of the platform starts with (`…:stateMachine:<prefix>-`). */
  readonly stateMachineArnPrefix: string;
  /** @default - no action: the alarms only change state */
  readonly alarmTopic?: ITopic;
}

export class PlatformAlarms extends Construct {
  /** A harness Lambda failed for a reason of its own (the handlers' HarnessErrors metric). */
  public readonly harnessErrors: Alarm;
  /** Any error of each harness function that is not a state machine's task, by handler. */
  public readonly functionErrors: Readonly<Partial<Record<HarnessHandlerName, Alarm>>>;
  /** Lambda stopped a state machine handler's invocation at its timeout or memory limit. */
  public readonly functionsStopped: Alarm;
  /** Step Functions' status changes of the platform's executions that failed, timed out or were aborted. */
  public readonly failedExecutionsRule: Rule;
  /** Those status changes, kept 14 days for the operator (the execution ARN, its status, its cause). */
  public readonly failedExecutionsQueue: Queue;
  /** An execution of the platform's state machines failed, timed out or was aborted (not yet looked at). */
  public readonly failedExecutions: Alarm;
  /** The HTTP API answered 5xx. */
  public readonly apiServerErrors: Alarm;
  /** A failure queue holds something, one alarm per queue, in the order given. */
  public readonly failureQueueMessages: readonly Alarm[];
  /** A gate's notice reached nobody. */
  public readonly noticesUndelivered: Alarm;

  constructor(scope: Construct, id: string, props: PlatformAlarmsProps) {
    super(scope, id);
    const prefix = props.namePrefix;
    const alarm = (alarmId: string, description: string, metric: IMetric): Alarm => {
      const created = new Alarm(this, alarmId, {
        alarmDescription: `plangate (${prefix}): ${description}`,
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      if (props.alarmTopic) created.addAlarmAction(new SnsAction(props.alarmTopic));
      return created;
    };

    this.harnessErrors = alarm(
      'HarnessErrors',
      'a harness Lambda failed for a reason of its own; its log entry (level ERROR) names the execution, plan, step and gate',
      new Metric({
        namespace: HARNESS_METRICS_NAMESPACE,
        metricName: HARNESS_ERRORS_METRIC,
        dimensionsMap: { service: prefix },
        statistic: 'Sum',
        period: PERIOD,
      }),
    );

    const stateMachineTasks = new Set<HarnessHandlerName>(STATE_MACHINE_HANDLERS);
    const functionErrors: Partial<Record<HarnessHandlerName, Alarm>> = {};
    // Text lines carry no field a metric filter could make a dimension of: the platform is in the namespace.
    const stopped = { namespace: `${HARNESS_METRICS_NAMESPACE}/${prefix}`, metricName: 'FunctionsStopped' };
    for (const fn of props.functions) {
      if (!stateMachineTasks.has(fn.handler)) {
        functionErrors[fn.handler] = alarm(
          `${capitalized(fn.handler)}Errors`,
          `the ${fn.handler} function failed (its Errors metric: a thrown error, a timeout, out of memory); its log group says why`,
          fn.function.metricErrors({ statistic: 'Sum', period: PERIOD }),
        );
        continue;
      }
      new MetricFilter(this, `${capitalized(fn.handler as StateMachineHandlerName)}Stopped`, {
        logGroup: fn.logGroup,
        filterPattern: FilterPattern.anyTerm(...STOPPED_BY_LAMBDA),
        metricNamespace: stopped.namespace,
        metricName: stopped.metricName,
        metricValue: '1',
      });
    }
    this.functionErrors = functionErrors;
    this.functionsStopped = alarm(
      'FunctionsStopped',
      `Lambda stopped a state machine handler (${STATE_MACHINE_HANDLERS.join(', ')}) at its timeout or memory limit; "Task timed out" or "Runtime." in its log group says which`,
      new Metric({ ...stopped, statistic: 'Sum', period: PERIOD }),
    );

    this.failedExecutionsQueue = new Queue(this, 'FailedExecutionsQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.failedExecutionsQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'It keeps copies of Step Functions status-change events for the operator to read; no consumer processes its messages, so none can fail to be processed.',
    });
    this.failedExecutionsRule = new Rule(this, 'FailedExecutionsRule', {
      description: `plangate (${prefix}): executions of the platform's state machines that failed, timed out or were aborted`,
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: {
          status: ['FAILED', 'TIMED_OUT', 'ABORTED'],
          stateMachineArn: Match.prefix(props.stateMachineArnPrefix),
        },
      },
      targets: [new SqsQueue(this.failedExecutionsQueue)],
    });
    this.failedExecutions = alarm(
      'FailedExecutions',
      `an execution of a "${prefix}-" state machine failed, timed out or was aborted; the failed-executions queue holds its status change (receive and delete it once looked at)`,
      this.failedExecutionsQueue.metricApproximateNumberOfMessagesVisible({
        statistic: 'Maximum',
        period: PERIOD,
      }),
    );

    this.apiServerErrors = alarm(
      'ApiServerErrors',
      'the HTTP API answered 5xx (a handler failed or timed out); its access log and the handler functions say which',
      props.httpApi.api.metricServerError({ statistic: 'Sum', period: PERIOD }),
    );

    this.failureQueueMessages = props.failureQueues.map((queue, i) =>
      alarm(
        `FailureQueue${i + 1}Messages`,
        `a failure queue (${queue.node.path}) holds an asynchronous invocation Lambda gave up on`,
        queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', period: PERIOD }),
      ),
    );

    this.noticesUndelivered = alarm(
      'NoticesUndelivered',
      "a gate's approval request reached nobody (no channel configured, or every send failed): its approvers do not know it waits",
      new Metric({ ...GATE_NOTICE_UNDELIVERED, statistic: 'Sum', period: PERIOD }),
    );
  }

  /** Every alarm of the platform. */
  get all(): Alarm[] {
    return [
      this.harnessErrors,
      ...Object.values(this.functionErrors),
      this.functionsStopped,
      this.failedExecutions,
      this.apiServerErrors,
      ...this.failureQueueMessages,
      this.noticesUndelivered,
    ];
  }
}

const capitalized = (name: string): string => `${name.charAt(0).toUpperCase()}${name.slice(1)}`;

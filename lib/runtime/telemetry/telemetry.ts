/**
 * What a harness Lambda tells its operators, with Powertools for AWS Lambda: structured JSON log
 * entries carrying the correlation keys (execution, plan, step, gate), CloudWatch metrics in the
 * embedded metric format (steps run, succeeded and failed by failure class, decisions, gate wait
 * time, refused answers, policy denials, harness errors), and X-Ray annotations of each
 * invocation. On Lambda the lines go to stdout (CloudWatch Logs); locally the same lines go to a
 * file under the store (lib/serve/harness-log.ts). Nothing logged carries a task token or a
 * secret value: entries hold correlation keys and outcomes, never payloads, and every line passes
 * the redactor on its way out.
 */
import { Logger, type LogItem } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { Context } from 'aws-lambda';
import type { HarnessHandlerName } from '../catalog.ts';
import type { AppendNote } from '../journal/journal.ts';
import { HarnessFailure, type JournalRecord } from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { ExecutionEndedError } from '../shared/errors.ts';

/** The CloudWatch namespace of the harness metrics (POWERTOOLS_METRICS_NAMESPACE on AWS). */
export const HARNESS_METRICS_NAMESPACE = 'plangate';

/** The metrics the harness emits. */
export const METRICS = {
  /** A step started (a tool run, an agent dispatched, a person asked). */
  stepsRun: 'StepsRun',
  /** A step passed its contract. */
  stepsSucceeded: 'StepsSucceeded',
  /** A step attempt failed; dimension FailureClass (transient, permission, logic, …). */
  stepsFailed: 'StepsFailed',
  /** A gate was decided; dimensions Gate (plan, step, escalation, human) and Decision. */
  decisions: 'Decisions',
  /** Seconds from a gate's opening to its decision; dimension Gate. */
  gateWaitTime: 'GateWaitTime',
  /** An answer a gate refused (expired, already answered, not an approver, …); dimension Gate. */
  answersRefused: 'AnswersRefused',
  /** A request the organization's policy denied; dimension Action. */
  policyDenials: 'PolicyDenials',
  /** A harness Lambda failed for a reason of its own, not a step's (the alarm's metric). */
  harnessErrors: 'HarnessErrors',
} as const;

export const HARNESS_ERRORS_METRIC = METRICS.harnessErrors;

/**
 * A gate's notice that reached nobody (the notifier: no channel, nobody to send to, every send
 * failed): one Count in namespace `plangate`, its only dimension `service` = `plangate-notifier`,
 * whatever the function's own service name, so the platform's alarm watches exactly this metric.
 */
export const NOTICE_UNDELIVERED_METRIC = {
  namespace: HARNESS_METRICS_NAMESPACE,
  name: 'GateNoticeUndelivered',
  service: 'plangate-notifier',
} as const;

/** Where log lines go: stdout on Lambda, a file under the store locally. */
export interface LogSink {
  write(line: string): void;
}

export const STDOUT_SINK: LogSink = { write: (line) => void process.stdout.write(`${line}\n`) };

/** The keys that tie a log entry to a run: every entry about one carries them. */
export interface Correlation {
  /** The execution ARN. */
  readonly execution?: string;
  readonly plan?: string;
  readonly planVersion?: number;
  readonly step?: string;
  /** The gate's kind: plan, step, escalation or human. */
  readonly gate?: string;
  readonly attempt?: number;
  /** A plan draft (the planner). */
  readonly draft?: string;
  /** The API route, e.g. `POST /approvals/{id}` (never the path: links carry ids). */
  readonly route?: string;
}

/** Credential shapes (task tokens among them) never leave in a log line, whoever logged them. */
const REDACTOR = new Redactor();

/** A Powertools Logger whose lines go to a sink, redacted. */
class SinkLogger extends Logger {
  /** Set after construction: lines the constructor prints (bad settings) go to stdout. */
  sink?: LogSink;

  protected override printLog(_logLevel: number, log: LogItem): void {
    log.prepareForPrint();
    const attributes = JSON.parse(JSON.stringify(log.getAttributes(), this.getJsonReplacer())) as unknown;
    (this.sink ?? STDOUT_SINK).write(JSON.stringify(REDACTOR.value(attributes)));
  }
}

/** Powertools Metrics whose EMF documents go to a sink. */
class SinkMetrics extends Metrics {
  sink?: LogSink;

  override publishStoredMetrics(): this {
    if (this.hasStoredMetrics() && !this.isDisabled())
      (this.sink ?? STDOUT_SINK).write(JSON.stringify(this.serializeMetrics()));
    this.clearMetrics();
    this.clearDimensions();
    this.clearMetadata();
    return this;
  }
}

export interface TelemetryProps {
  /** Which harness Lambda this is (the `handler` key of every entry). */
  readonly handler: HarnessHandlerName;
  /** @default stdout */
  readonly sink?: LogSink;
  /** The `service` of entries and metrics. @default POWERTOOLS_SERVICE_NAME, else 'plangate' */
  readonly serviceName?: string;
  /** @default POWERTOOLS_METRICS_NAMESPACE, else {@link HARNESS_METRICS_NAMESPACE} */
  readonly namespace?: string;
  /** Traces each invocation and the AWS SDK calls of clients it captured (on Lambda). @default - no traces */
  readonly tracer?: Tracer;
}

/** A harness Lambda's logger, metrics and tracer, made once per container (or per local stack). */
export class Telemetry {
  readonly handler: HarnessHandlerName;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly tracer?: Tracer;
  /** Where GateNoticeUndelivered goes: its own service, so its dimension is the alarm's. */
  private readonly noticeMetrics: Metrics;

  constructor(props: TelemetryProps) {
    this.handler = props.handler;
    const serviceName = props.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? 'plangate';
    // The level comes from POWERTOOLS_LOG_LEVEL (Powertools reads it), INFO by default.
    const logger = new SinkLogger({ serviceName, persistentKeys: { handler: props.handler } });
    logger.sink = props.sink;
    this.logger = logger;
    const metrics = new SinkMetrics({
      serviceName,
      namespace: props.namespace ?? process.env.POWERTOOLS_METRICS_NAMESPACE ?? HARNESS_METRICS_NAMESPACE,
    });
    metrics.sink = props.sink;
    this.metrics = metrics;
    const noticeMetrics = new SinkMetrics({
      serviceName: NOTICE_UNDELIVERED_METRIC.service,
      namespace: NOTICE_UNDELIVERED_METRIC.namespace,
    });
    noticeMetrics.sink = props.sink;
    this.noticeMetrics = noticeMetrics;
    if (props.tracer) this.tracer = props.tracer;
  }

  /**
   * Runs one invocation: its outcome logged with the correlation keys (and the Lambda context on
   * AWS), its segment annotated with them, and a failure that is the harness's own (not a
   * step's) logged as an error and counted in HarnessErrors.
   */
  async invoke<R>(correlation: Correlation, run: () => Promise<R>, context?: Context): Promise<R> {
    if (context) this.logger.addContext(context);
    const started = performance.now();
    const trace = this.traceStart(correlation);
    const durationMs = () => Math.round(performance.now() - started);
    try {
      const result = await run();
      const status = statusOf(result);
      if (status !== undefined && status >= 500) {
        this.reportError(correlation, `${this.handler} answered ${status}`, undefined, {
          status,
          durationMs: durationMs(),
        });
      } else {
        this.logger.info(`${this.handler} done`, {
          ...correlation,
          status,
          durationMs: durationMs(),
        });
      }
      return result;
    } catch (error) {
      if (error instanceof ExecutionEndedError) {
        // A late writer (its invocation outlived the machine): nothing it wanted to say is kept.
        this.logger.warn(`${this.handler} ended late: ${error.message}`, {
          ...correlation,
          durationMs: durationMs(),
        });
      } else if (error instanceof HarnessFailure) {
        // A step's failure as Step Functions will see it (retried, caught, escalated): the
        // journal's FAILURE_CLASSIFIED counted it; here it is tied to the invocation.
        this.logger.warn(`${this.handler} failed: ${error.name}`, {
          ...correlation,
          failureClass: error.failureCause.failureClass,
          durationMs: durationMs(),
        });
      } else {
        this.reportError(correlation, `${this.handler} failed`, error, { durationMs: durationMs() });
      }
      trace?.error(error);
      throw error;
    } finally {
      trace?.end();
    }
  }

  /**
   * The journal's observer (JournalProps.onAppended): one log entry per event with its
   * correlation keys, and the metrics the event stands for. Never throws into the journal.
   */
  readonly journaled = (record: JournalRecord, note: AppendNote = {}): void => {
    try {
      const correlation = correlationOfRecord(record);
      this.logger.info(`journal ${record.event}`, {
        ...correlation,
        event: record.event,
        seq: record.seq,
        ...eventFacts(record),
      });
      for (const metric of metricsOf(record, note)) this.emit(metric, correlation);
    } catch {
      // Telemetry never fails a journal write.
    }
  };

  /**
   * The organization's policy denied a request (lib/runtime/gate's policy check calls this): a
   * warning with the correlation keys, and PolicyDenials by action.
   */
  policyDenied(
    correlation: Correlation,
    denial: { readonly action: string; readonly reason?: string },
  ): void {
    this.logger.warn(`policy denied ${denial.action}`, { ...correlation, ...denial });
    this.emit(
      {
        name: METRICS.policyDenials,
        unit: MetricUnit.Count,
        value: 1,
        dimensions: { Action: denial.action },
      },
      correlation,
    );
  }

  /**
   * A gate's notice reached nobody: an error entry with the correlation keys and why, and
   * GateNoticeUndelivered (NOTICE_UNDELIVERED_METRIC).
   */
  noticeUndelivered(
    correlation: Correlation,
    why: { readonly reason: string; readonly message: string },
  ): void {
    this.logger.error(`gate notice undelivered: ${why.reason}`, { ...correlation, ...why });
    this.emit(
      { name: NOTICE_UNDELIVERED_METRIC.name, unit: MetricUnit.Count, value: 1, dimensions: {} },
      correlation,
      this.noticeMetrics,
    );
  }

  /** A failure of the harness itself: an error entry with the correlation keys, and HarnessErrors. */
  reportError(
    correlation: Correlation,
    message: string,
    error?: unknown,
    facts: Record<string, unknown> = {},
  ): void {
    this.logger.error(message, {
      ...correlation,
      ...facts,
      ...(error === undefined ? {} : { error: errorOf(error) }),
    });
    this.emit({ name: METRICS.harnessErrors, unit: MetricUnit.Count, value: 1, dimensions: {} }, correlation);
  }

  /** One EMF document per metric: each has its own dimensions; the execution rides along as metadata. */
  private emit(metric: MetricPoint, correlation: Correlation, metrics: Metrics = this.metrics): void {
    metrics.addDimensions(metric.dimensions);
    metrics.addMetric(metric.name, metric.unit, metric.value);
    metrics.addMetadata('handler', this.handler);
    if (correlation.execution) metrics.addMetadata('execution', correlation.execution);
    if (correlation.step) metrics.addMetadata('step', correlation.step);
    metrics.publishStoredMetrics();
  }

  /** A subsegment for the invocation, annotated with the correlation keys (on Lambda, when tracing). */
  private traceStart(correlation: Correlation): { error(error: unknown): void; end(): void } | undefined {
    const tracer = this.tracer;
    if (!tracer?.isTracingEnabled()) return undefined;
    const segment = tracer.getSegment();
    const subsegment = segment?.addNewSubsegment(`## ${this.handler}`);
    if (!segment || !subsegment) return undefined;
    tracer.setSegment(subsegment);
    tracer.annotateColdStart();
    tracer.addServiceNameAnnotation();
    for (const key of ['execution', 'plan', 'step', 'gate'] as const) {
      const value = correlation[key];
      if (value !== undefined) tracer.putAnnotation(key, value);
    }
    return {
      error: (error) => tracer.addErrorAsMetadata(errorOf(error)),
      end: () => {
        subsegment.close();
        tracer.setSegment(segment);
      },
    };
  }
}

interface MetricPoint {
  readonly name: string;
  readonly unit: (typeof MetricUnit)[keyof typeof MetricUnit];
  readonly value: number;
  readonly dimensions: Record<string, string>;
}

/** The correlation keys of a handler's input: a machine's payload, an API request, a draft. */
export function correlationOf(event: unknown): Correlation {
  if (typeof event !== 'object' || event === null) return {};
  const e = event as Record<string, unknown>;
  const plan = (typeof e.plan === 'object' && e.plan !== null ? e.plan : {}) as Record<string, unknown>;
  const params = (
    typeof e.pathParameters === 'object' && e.pathParameters !== null ? e.pathParameters : {}
  ) as Record<string, unknown>;
  const execution = typeof e.executionId === 'string' ? e.executionId : params.executionId;
  return {
    ...(typeof execution === 'string' ? { execution } : {}),
    ...(typeof plan.id === 'string' ? { plan: plan.id } : {}),
    ...(typeof plan.version === 'number' ? { planVersion: plan.version } : {}),
    ...(typeof e.stepId === 'string' ? { step: e.stepId } : {}),
    // Only a gate request's `kind` is a gate's (the checker's and runner's name other things).
    ...(typeof e.taskToken === 'string' && typeof e.kind === 'string' ? { gate: e.kind } : {}),
    ...(typeof e.attempt === 'number' ? { attempt: e.attempt } : {}),
    ...(typeof e.draftId === 'string' ? { draft: e.draftId } : {}),
    ...(typeof e.routeKey === 'string' ? { route: e.routeKey } : {}),
  };
}

function correlationOfRecord(record: JournalRecord): Correlation {
  const gate = gateOf(record);
  return {
    execution: record.executionId,
    plan: record.planId,
    planVersion: record.planVersion,
    step: record.task_id,
    gate,
  };
}

function gateOf(record: JournalRecord): string | undefined {
  if (typeof record.details.gate === 'string') return record.details.gate;
  if (record.event === 'HUMAN_TASK_ANSWERED') return 'human';
  if (record.event === 'RECOVERY_ESCALATION') return 'escalation';
  return undefined;
}

/** The decision an event records, if it records one. */
function decisionOf(record: JournalRecord): string | undefined {
  const d = record.details;
  switch (record.event) {
    case 'GATE_APPROVED':
      return d.modifications ? 'APPROVE_WITH_MODIFICATIONS' : 'APPROVE';
    case 'GATE_REJECTED':
      return 'REJECT';
    case 'GATE_CLARIFICATION_REQUESTED':
      return 'ASK_FOR_CLARIFICATION';
    case 'HUMAN_TASK_ANSWERED':
    case 'RECOVERY_ESCALATION': {
      const decision = record.event === 'HUMAN_TASK_ANSWERED' ? d.decision : d.user_decision;
      return typeof decision === 'string' ? decision : undefined;
    }
    default:
      return undefined;
  }
}

/** A few facts of an event worth seeing in its log entry (names and classes, never messages or values). */
function eventFacts(record: JournalRecord): Record<string, unknown> {
  const d = record.details;
  const decision = decisionOf(record);
  return {
    decision,
    ...(record.event === 'FAILURE_CLASSIFIED' ? { failureClass: d.failure_type, error: d.error } : {}),
    ...(record.event === 'TASK_FAILED' ? { error: d.error } : {}),
    ...(record.event === 'GATE_ANSWER_REFUSED' ? { reason: d.reason } : {}),
  };
}

function metricsOf(record: JournalRecord, note: AppendNote): MetricPoint[] {
  const count = (name: string, dimensions: Record<string, string> = {}): MetricPoint => ({
    name,
    unit: MetricUnit.Count,
    value: 1,
    dimensions,
  });
  const gate = gateOf(record) ?? 'unknown';
  switch (record.event) {
    case 'TASK_STARTED':
      return [count(METRICS.stepsRun)];
    case 'TASK_COMPLETED':
      return [count(METRICS.stepsSucceeded)];
    case 'FAILURE_CLASSIFIED':
      return [count(METRICS.stepsFailed, { FailureClass: String(record.details.failure_type) })];
    case 'GATE_ANSWER_REFUSED':
      return [count(METRICS.answersRefused, { Gate: gate })];
    default: {
      const decision = decisionOf(record);
      if (decision === undefined) return [];
      const opened = note.gateOpenedAt ? Date.parse(note.gateOpenedAt) : Number.NaN;
      const waited = (Date.parse(record.timestamp) - opened) / 1000;
      return [
        count(METRICS.decisions, { Gate: gate, Decision: decision }),
        ...(Number.isFinite(waited) && waited >= 0
          ? [
              {
                name: METRICS.gateWaitTime,
                unit: MetricUnit.Seconds,
                value: waited,
                dimensions: { Gate: gate },
              },
            ]
          : []),
      ];
    }
  }
}

/** An HTTP handler's status code, if the result is an HTTP response. */
function statusOf(result: unknown): number | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const status = (result as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' ? status : undefined;
}

function errorOf(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

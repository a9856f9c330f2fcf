/**
 * The Plans API: `POST /plans` takes a plan document (JSON, YAML or Markdown), validates it (every
 * problem located → 400, nothing deployed), compiles and deploys it and starts an execution;
 * `GET /plans/{executionId}` says how that execution is doing (status and per-step progress
 * from the journal); `GET /executions/{executionId}/events` lists its events. `{executionId}` is
 * the execution's URL-encoded ARN or its name. Every refusal is an `ErrorResponse`.
 */
import { randomUUID } from 'node:crypto';
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  ExecutionDoesNotExist,
} from '@aws-sdk/client-sfn';
import { CompileError, deployability } from '../compiler/index.ts';
import { type PlanFormat, parsePlanText } from '../plan/parse.ts';
import { formatProblem, hasErrors, type Problem, sortProblems } from '../plan/problems.ts';
import { validatePlan } from '../plan/validate.ts';
import { decisionDetails, PolicyDeniedError } from '../policy/decisions.ts';
import { draftEntity, executionEntity } from '../policy/entities.ts';
import { type PolicyPrincipal, PolicySet } from '../policy/policy-set.ts';
import {
  bodyText,
  type HttpEvent,
  type HttpResult,
  headerOf,
  type IdentitySource,
  identityOf,
  json,
  MAX_BODY_BYTES,
  pathSegments,
} from '../runtime/api/http.ts';
import { requestBaseUrl } from '../runtime/api/page-session.ts';
import { API_ROUTES } from '../runtime/api/routes.ts';
import { eventIdentity, journalFor } from '../runtime/deps.ts';
import { whoMayAnswer } from '../runtime/gate/shown-gate.ts';
import { type LadderPolicy, nextRung, waitingGates } from '../runtime/gate/waiting-gates.ts';
import { queryItems, readEvents } from '../runtime/journal/journal.ts';
import { StoredPlanMismatchError, storedPlan } from '../runtime/journal/stored-plans.ts';
import { approvalLink } from '../runtime/notify/message.ts';
import type { JournalRecord } from '../runtime/payloads/index.ts';
import { EventTooLargeError } from '../runtime/shared/errors.ts';
import {
  launchAtRunTime,
  PlanTooLargeError,
  PlanVersionConflictError,
  type RuntimeLaunchDeps,
} from './launch-plan.ts';
import { planRecordProblems, tooManySteps } from './launch-problems.ts';
import { openApiDocument } from './openapi.ts';
import { createDraft, draftResponse, readDraft } from './plan-drafts.ts';
import {
  type DraftAccepted,
  type ErrorResponse,
  type EventsResponse,
  GoalRequestSchema,
  type StatusResponse,
  type StepStatusEntry,
  type SubmitResponse,
  type WaitingGate,
} from './plans-api-schemas.ts';

export interface PlansApiDeps extends RuntimeLaunchDeps {
  /**
   * Who submitted a plan, recorded in PLAN_CREATED {submitted_by}: the IAM signer on AWS, a
   * header in local mode. A submission whose submitter cannot be told is refused (401).
   * @default { mode: 'iam' }
   */
  readonly submitter?: IdentitySource;
  /**
   * Hands a draft (`POST /plans {goal}`) to the planner without waiting for it: an asynchronous
   * Lambda invocation on AWS, a background call of the same code locally.
   * @default - goals are refused (501): this platform has no planner
   */
  readonly startPlanning?: (draftId: string) => Promise<void>;
}

const FORMATS: readonly [RegExp, PlanFormat][] = [
  [/json/, 'json'],
  [/yaml|yml/, 'yaml'],
  [/markdown/, 'markdown'],
];

/** A refusal: a short title and what to do (the OpenAPI document's `Error`). */
const refuse = (status: number, error: string, message: string): HttpResult =>
  json(status, { error, message } satisfies ErrorResponse);

export async function handlePlansRequest(event: HttpEvent, deps: PlansApiDeps): Promise<HttpResult> {
  const segments = pathSegments(event);
  const method = event.requestContext.http.method.toUpperCase();
  if (!segments) return refuse(400, 'malformed path', 'the path is not valid percent-encoding');
  if (method === 'POST' && segments.length === 1 && segments[0] === 'plans') return submit(event, deps);
  const reader = { name: (await callerOf(event, deps))?.name ?? '' };
  if (method === 'GET' && segments.length === 2 && segments[0] === 'drafts')
    return draft(segments[1] as string, reader, deps);
  if (method === 'GET' && segments.length === 1 && segments[0] === 'openapi.json')
    return json(200, openApiDocument());
  const executionId =
    method === 'GET' &&
    ((segments.length === 2 && segments[0] === 'plans') ||
      (segments.length === 3 &&
        segments[0] === 'executions' &&
        (segments[2] === 'events' || segments[2] === 'progress')))
      ? segments[1]
      : undefined;
  if (executionId === undefined)
    return refuse(
      404,
      'not found',
      API_ROUTES.filter((r) => r.handler === 'plans')
        .map((r) => `${r.method} ${r.path}`)
        .join(', '),
    );
  const executionArn = await executionArnOf(executionId, deps);
  if (!executionArn)
    return refuse(
      404,
      'no such execution',
      `no execution ${JSON.stringify(executionId)}: give its name or its whole ARN, URL-encoded`,
    );
  if (segments[0] === 'plans') return status(executionArn, reader, requestBaseUrl(event), deps);
  return segments[2] === 'events'
    ? events(executionArn, reader, deps)
    : progressStream(executionArn, reader, event, deps);
}

/**
 * The ARN of the execution `{executionId}` names: an ARN as given, or a name looked up in the
 * journal (PLAN_CREATED, newest first, on the events table's byEventType index). The Plans API
 * names every execution with a random UUID, so a name means one execution; undefined when no
 * launched execution has it.
 */
async function executionArnOf(id: string, deps: PlansApiDeps): Promise<string | undefined> {
  if (id.startsWith('arn:')) return id;
  // Step Functions' name rule, so that a name cannot match the middle of an ARN.
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(id)) return undefined;
  const suffix = `:${id}`;
  for await (const item of queryItems(deps.dynamo, {
    TableName: deps.tables.events,
    IndexName: 'byEventType',
    KeyConditionExpression: '#event = :created',
    FilterExpression: 'contains(executionId, :suffix)',
    ExpressionAttributeNames: { '#event': 'event' },
    ExpressionAttributeValues: { ':created': 'PLAN_CREATED', ':suffix': suffix },
    ProjectionExpression: 'executionId',
    ScanIndexForward: false,
  })) {
    const arn = String(item.executionId);
    if (arn.endsWith(suffix)) return arn;
  }
  return undefined;
}

/**
 * The header that overrides soft-mandatory policies refusing a submission, its value the reason
 * (docs/policy.md#enforcement-levels): one line, as headers are.
 */
export const POLICY_OVERRIDE_HEADER = 'x-plangate-policy-override';

/**
 * Who calls, as a person where the policy's people file names the IAM principal that signed
 * (so no-self-approval compares persons: an ARN is never an approver's email), with the principal.
 */
async function callerOf(
  event: HttpEvent,
  deps: PlansApiDeps,
): Promise<{ name: string; principal?: string } | undefined> {
  const source = deps.submitter ?? { mode: 'iam' };
  const principal = identityOf(event, source);
  if (principal === undefined || source.mode !== 'iam')
    return principal === undefined ? undefined : { name: principal };
  const person = (deps.policy ?? (await PolicySet.fromEnvironment())).personOf(principal);
  return person === undefined ? { name: principal } : { name: person, principal };
}

async function submit(event: HttpEvent, deps: PlansApiDeps): Promise<HttpResult> {
  const caller = await callerOf(event, deps);
  const submittedBy = caller?.name;
  if (!submittedBy)
    return refuse(
      401,
      'who submits the plan is not known',
      'sign the request with SigV4 (plangate serve --identity header: send x-plangate-user from this machine)',
    );
  const text = bodyText(event);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_BODY_BYTES)
    return refuse(
      413,
      'plan too large',
      `the body is ${bytes} bytes; the Plans API takes at most ${MAX_BODY_BYTES} bytes (4 MiB): a plan that large would not fit Step Functions' quotas either`,
    );
  const goal = goalRequest(text);
  if (goal) return submitGoal(goal, submittedBy, deps);
  const query = event.queryStringParameters?.format;
  const contentType = (headerOf(event, 'content-type') ?? '').toLowerCase();
  const format =
    (['json', 'yaml', 'markdown'] as const).find((f) => f === query) ??
    FORMATS.find(([pattern]) => pattern.test(contentType))?.[1];
  const parsed = parsePlanText(text, { filename: 'plan', format });
  if (!parsed.plan) return invalid(parsed.problems);
  // A plan too large to record is refused first, in a fraction of a second, not after validating
  // and compiling it (tens of seconds for 10,000 steps).
  const tooLarge = planRecordProblems(parsed.plan, 'plan', parsed.sourceMap);
  if (tooLarge.length > 0) return invalid(tooLarge);
  const validation = await validatePlan(parsed.plan, { sourceMap: parsed.sourceMap, file: 'plan' });
  const validated = sortProblems([...parsed.problems, ...validation.problems]);
  if (hasErrors(validated)) return invalid(validated);
  // What Step Functions cannot take is refused here, located, before anything is deployed.
  const deployable = deployability(parsed.plan, { file: 'plan', sourceMap: parsed.sourceMap });
  const problems = sortProblems([...validated, ...deployable.problems]);
  if (hasErrors(problems)) return invalid(problems);
  let launched: Awaited<ReturnType<typeof launchAtRunTime>>;
  try {
    const policyOverride = headerOf(event, POLICY_OVERRIDE_HEADER);
    launched = await launchAtRunTime(deps, parsed.plan, {
      submittedBy,
      ...(caller?.principal !== undefined ? { submitterPrincipal: caller.principal } : {}),
      channel: 'api',
      compiled: deployable.result,
      ...(policyOverride !== undefined ? { policyOverride } : {}),
    });
  } catch (error) {
    if (error instanceof PlanTooLargeError || error instanceof EventTooLargeError)
      return invalid(tooManySteps(error.message, 'plan', parsed.sourceMap));
    if (error instanceof PlanVersionConflictError)
      return refuse(409, 'plan version already submitted', error.message);
    if (error instanceof PolicyDeniedError) return denied(error);
    if (error instanceof CompileError)
      return invalid([
        {
          severity: 'error',
          code: 'not-compilable',
          message: error.message,
          location: { file: 'plan', pointer: '' },
        },
      ]);
    throw error;
  }
  return json(201, {
    executionArn: launched.executionArn,
    plan: { id: parsed.plan.id, version: parsed.plan.version, digest: `sha256:${launched.deployed.digest}` },
    stateMachineVersionArn: launched.deployed.stateMachineVersionArn,
    warnings: [...problems],
  } satisfies SubmitResponse);
}

/**
 * A JSON body naming a `goal` and no `steps` asks for a plan to be drafted; anything else is a plan
 * document. Undefined for a plan document.
 */
function goalRequest(text: string): ReturnType<typeof GoalRequestSchema.safeParse> | undefined {
  if (!/^\s*\{/.test(text)) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null || !('goal' in body) || 'steps' in body) return undefined;
  return GoalRequestSchema.safeParse(body);
}

async function submitGoal(
  request: NonNullable<ReturnType<typeof goalRequest>>,
  submittedBy: string,
  deps: PlansApiDeps,
): Promise<HttpResult> {
  if (!request.success) {
    const issue = request.error.issues[0];
    return refuse(
      400,
      'invalid goal request',
      `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'} (send {"goal": "…", "context": "…"})`,
    );
  }
  if (!deps.startPlanning)
    return refuse(501, 'no planner', 'this platform drafts no plans from goals: submit a plan');
  const created = await createDraft(deps, request.data, submittedBy);
  await deps.startPlanning(created.draftId);
  const location = `/drafts/${encodeURIComponent(created.draftId)}`;
  const accepted = json(202, {
    draftId: created.draftId,
    status: 'planning',
    location,
  } satisfies DraftAccepted);
  return { ...accepted, headers: { ...accepted.headers, location } };
}

async function draft(draftId: string, reader: PolicyPrincipal, deps: PlansApiDeps): Promise<HttpResult> {
  const item = await readDraft(deps, draftId);
  if (!item) return refuse(404, 'no such draft', `no draft ${JSON.stringify(draftId)}`);
  const policy = deps.policy ?? (await PolicySet.fromEnvironment());
  // A draft has no journal of its own yet: the refusal is the answer (its plan's journal starts at launch).
  const request = { principal: reader, action: 'ReadDraft' as const, resource: draftEntity(item) };
  const decided = policy.authorize(request);
  if (decided.decision === 'deny') return denied(new PolicyDeniedError(request, decided));
  return json(200, draftResponse(item));
}

/**
 * Whether `reader` may read this execution (ReadExecution, `view`: status, events or progress),
 * judged by its PLAN_CREATED; a refusal (403) is journaled in a stream of its own
 * (`read-refused:<uuid>`, found by the plan's id), so the execution's own journal is untouched.
 */
async function refusedRead(
  executionArn: string,
  records: readonly JournalRecord[],
  reader: PolicyPrincipal,
  view: 'status' | 'events' | 'progress',
  deps: PlansApiDeps,
): Promise<HttpResult | undefined> {
  const created = records.find((r) => r.event === 'PLAN_CREATED');
  if (!created) return undefined;
  const policy = deps.policy ?? (await PolicySet.fromEnvironment());
  const submitter = created.details.submitted_by;
  const request = {
    principal: reader,
    action: 'ReadExecution' as const,
    resource: executionEntity({
      id: executionArn,
      planId: created.planId,
      planVersion: created.planVersion,
      submitter: typeof submitter === 'string' ? submitter : undefined,
    }),
    context: { view },
  };
  const decided = policy.authorize(request);
  if (decided.decision === 'allow') return undefined;
  await journalFor(deps).append({
    ...eventIdentity({
      executionId: `read-refused:${randomUUID()}`,
      plan: { id: created.planId, version: created.planVersion, digest: created.planDigest },
    }),
    event: 'POLICY_DECISION',
    details: decisionDetails(request, decided, `the ${view} of the execution was not shown`),
  });
  return denied(new PolicyDeniedError(request, decided));
}

/** 403 with the ids of the policies that decided (none: no policy permits it). */
function denied(error: PolicyDeniedError): HttpResult {
  return json(403, { error: 'denied by policy', message: error.message, policies: error.policies });
}

/** The one problem of a plan too large to record, located at its steps. */
/** 400 with every problem, located; the message counts the errors and names the first. */
function invalid(problems: readonly Problem[]): HttpResult {
  const errors = problems.filter((p) => p.severity === 'error');
  const first = errors[0] ? `: ${formatProblem(errors[0])}` : '';
  return json(400, {
    error: 'invalid plan',
    message: `${errors.length} error${errors.length === 1 ? '' : 's'} in the plan, nothing deployed; each is located in problems${first}`,
    problems: [...problems],
  } satisfies ErrorResponse);
}

const STEP_STATUS: Partial<Record<JournalRecord['event'], StepStatusEntry['status']>> = {
  TASK_STARTED: 'running',
  TASK_COMPLETED: 'completed',
  TASK_FAILED: 'failed',
  FAILURE_DETECTED: 'failed',
  TASK_SKIPPED: 'skipped',
  TASK_BLOCKED: 'blocked',
  RECOVERY_ESCALATION: 'waiting',
  GATE_APPROVAL_REQUESTED: 'waiting',
};

/** Execution status (Step Functions), step progress and the gates waiting (the journal, the source of truth). */
async function status(
  executionArn: string,
  reader: PolicyPrincipal,
  apiUrl: string,
  deps: PlansApiDeps,
): Promise<HttpResult> {
  let described: DescribeExecutionCommandOutput;
  try {
    described = await deps.sfn.send(new DescribeExecutionCommand({ executionArn }));
  } catch (error) {
    if (error instanceof ExecutionDoesNotExist || (error as Error).name === 'InvalidArn')
      return refuse(404, 'no such execution', `no execution ${executionArn}`);
    throw error;
  }
  const records = await readEvents(deps.dynamo, deps.tables.events, executionArn);
  const refused = await refusedRead(executionArn, records, reader, 'status', deps);
  if (refused) return refused;
  const created = records.find((r) => r.event === 'PLAN_CREATED');
  const order = Object.keys((created?.details.dependencies ?? {}) as Record<string, unknown>);
  const steps = new Map<string, StepStatusEntry>(order.map((id) => [id, { id, status: 'pending' }]));
  for (const record of records) {
    if (!record.task_id) continue;
    const next = STEP_STATUS[record.event];
    if (!next) continue;
    const previous = steps.get(record.task_id);
    const progress =
      typeof record.details.progress === 'string' ? record.details.progress : previous?.progress;
    steps.set(record.task_id, {
      id: record.task_id,
      ...((record.task_name ?? previous?.name) ? { name: record.task_name ?? previous?.name } : {}),
      status: next,
      ...(progress ? { progress } : {}),
    });
  }
  const complete = records.find((r) => r.event === 'EXECUTION_COMPLETE');
  return json(200, {
    executionArn,
    status: described.status ?? 'UNKNOWN',
    ...(records[0]
      ? { plan: { id: records[0].planId, version: records[0].planVersion, digest: records[0].planDigest } }
      : {}),
    steps: [...steps.values()],
    gates: described.status === 'RUNNING' ? await gatesWaiting(records, apiUrl, deps) : [],
    progress: records.flatMap((r) => (typeof r.details.progress === 'string' ? [r.details.progress] : [])),
    summary: complete?.details.summary,
    events: records.length,
  } satisfies StatusResponse);
}

/**
 * The gates waiting in an execution, as its journal records them: who may answer, until when, what
 * happens then (the ladder, from the plan stored under the gate's digest) and the shared link.
 */
async function gatesWaiting(
  records: readonly JournalRecord[],
  apiUrl: string,
  deps: PlansApiDeps,
): Promise<WaitingGate[]> {
  const waiting = waitingGates(records);
  if (waiting.length === 0) return [];
  const created = records.find((r) => r.event === 'PLAN_CREATED');
  const submittedBy =
    typeof created?.details.submitted_by === 'string' ? created.details.submitted_by : undefined;
  const ladder = waiting.some((gate) => gate.kind === 'plan' || gate.kind === 'step')
    ? await ladderOf(records[0]?.planDigest, deps)
    : undefined;
  return waiting.map((gate) => {
    const who = whoMayAnswer({ ...gate, submittedBy });
    const next = nextRung(gate, ladder);
    return {
      kind: gate.kind,
      ...(gate.stepId ? { stepId: gate.stepId } : {}),
      ...(gate.stepName ? { stepName: gate.stepName } : {}),
      ...(gate.round !== undefined ? { round: gate.round } : {}),
      asks: gate.opened.asks,
      ...(gate.opened.question ? { question: gate.opened.question } : {}),
      mayAnswer: who.text,
      awaiting: who.names,
      ...(gate.kind === 'plan' || gate.kind === 'step'
        ? { quorum: { needed: gate.policy.quorum, approvals: gate.votes.length } }
        : {}),
      deadline: gate.opened.expires_at,
      ...(next ? { next } : {}),
      link: approvalLink(apiUrl, gate.opened.link_id),
      ...(gate.undelivered ? { undelivered: gate.undelivered } : {}),
    };
  });
}

/** The timeout ladder of the plan stored under `digest`; undefined when none is stored (or it was altered). */
async function ladderOf(digest: string | undefined, deps: PlansApiDeps): Promise<LadderPolicy | undefined> {
  if (!digest) return undefined;
  try {
    return (await storedPlan(deps.dynamo, deps.tables.plans, digest))?.approval;
  } catch (error) {
    if (error instanceof StoredPlanMismatchError) return undefined;
    throw error;
  }
}

const noEvents = (executionArn: string): HttpResult =>
  refuse(404, 'no events for this execution', `no journal events for ${executionArn}`);

async function events(
  executionArn: string,
  reader: PolicyPrincipal,
  deps: PlansApiDeps,
): Promise<HttpResult> {
  const records = await readEvents(deps.dynamo, deps.tables.events, executionArn);
  if (records.length === 0) return noEvents(executionArn);
  const refused = await refusedRead(executionArn, records, reader, 'events', deps);
  if (refused) return refused;
  return json(200, { executionArn, events: records } satisfies EventsResponse);
}

/**
 * The progress lines after the client's Last-Event-ID (or `?after=<seq>`), as Server-Sent Events
 * with the event's sequence number as id. The response ends with what there is: `retry` while the
 * execution runs (EventSource reconnects and gets only what is new, so API Gateway, which buffers
 * responses, serves it as well as the local edge), `event: end` with the summary once it is complete.
 */
async function progressStream(
  executionArn: string,
  reader: PolicyPrincipal,
  event: HttpEvent,
  deps: PlansApiDeps,
): Promise<HttpResult> {
  const records = await readEvents(deps.dynamo, deps.tables.events, executionArn);
  if (records.length === 0) return noEvents(executionArn);
  const refused = await refusedRead(executionArn, records, reader, 'progress', deps);
  if (refused) return refused;
  const after = Number(headerOf(event, 'last-event-id') ?? event.queryStringParameters?.after ?? 0) || 0;
  const frames: string[] = [];
  for (const record of records) {
    if (record.seq <= after || typeof record.details.progress !== 'string') continue;
    frames.push(sseFrame(record.seq, undefined, record.details.progress));
  }
  const complete = records.find((r) => r.event === 'EXECUTION_COMPLETE');
  if (complete) frames.push(sseFrame(complete.seq, 'end', JSON.stringify(complete.details.summary ?? null)));
  else frames.push('retry: 1000\n\n');
  return {
    statusCode: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' },
    body: frames.join(''),
  };
}

/**
 * One event (unnamed: a `message`, unless `name` is given); every line of the data gets its own
 * `data:` field, as the SSE format requires.
 */
function sseFrame(id: number, name: string | undefined, data: string): string {
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}\n`);
  return `id: ${id}\n${name ? `event: ${name}\n` : ''}${lines.join('')}\n`;
}

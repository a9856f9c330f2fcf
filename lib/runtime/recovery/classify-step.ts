/**
 * The classifier Lambda's logic: called from a step's Catch once its Retry blocks gave up,
 * it classifies the failure, records it, and says whether the whole step runs again or a
 * person (or the recipe) decides at the escalation gate.
 */
import { stepRetries } from '../../plan/recovery.ts';
import type { FailureClass } from '../../plan/schema.ts';
import { eventIdentity, type HarnessDeps, journalFor, policyFor } from '../deps.ts';
import { lastStartOrCompletion, readEvents } from '../journal/journal.ts';
import {
  type AgentRun,
  AgentRunSchema,
  BUDGET_EXCEEDED,
  type ClassifyRequest,
  type ClassifyResult,
  CONTRACT_FAILED,
  FailureCauseSchema,
  failureClassOfError,
  LAMBDA_ERROR_NAMES,
  type Usage,
  UsageSchema,
} from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import type { FailureFacts } from '../shared/errors.ts';
import { progressLabel } from '../shared/progress.ts';
import { budgetStop, WORKER_TIME_GRAIN_SECONDS } from './budget.ts';
import { classifyFailure } from './classify.ts';
import { recipeName, recordFailure } from './failure-events.ts';
import { policyDenialOf } from './policy-denial.ts';

/**
 * How often a completed step's failures are retried without a recipe (each retry answers what it
 * produced, so only repeated crashes get this far); then it is recorded and escalated like any.
 */
const COMPLETED_STEP_RETRIES = 6;

/** The error Step Functions gives a Task that ran past its TimeoutSeconds. */
const STATES_TIMEOUT = 'States.Timeout';

export async function classifyStepFailure(req: ClassifyRequest, deps: HarnessDeps): Promise<ClassifyResult> {
  const identity = eventIdentity(req, {
    id: req.stepId,
    name: req.description,
  });
  const journal = journalFor(deps);
  const facts = factsOf(req.error);
  const failedLine = `${req.index !== undefined && req.total !== undefined ? progressLabel(req.index, req.total) : '[Task]'} ✗ ${req.description ?? req.stepId}`;
  const budgetEscalation = (message: string): ClassifyResult => ({
    failureClass: 'unrecoverable',
    error: BUDGET_EXCEEDED,
    message,
    phase: req.phase,
    action: 'ESCALATE',
    policy: 'ask',
    recipe: 'escalate_budget',
  });
  // The runner recorded BUDGET_EXCEEDED; no recipe applies: a person raises the budget or aborts.
  if (req.error.Error === BUDGET_EXCEEDED) return budgetEscalation(facts.message);
  // A harness Lambda that named the error classified it with the plan's recipes and recorded it.
  const named = (LAMBDA_ERROR_NAMES as readonly string[]).includes(req.error.Error)
    ? failureClassOfError(req.error.Error)
    : undefined;
  const humanTimeout =
    req.humanTimeoutSeconds !== undefined && req.phase === 'run' && req.error.Error === STATES_TIMEOUT;
  if (
    !named &&
    req.attempt <= COMPLETED_STEP_RETRIES &&
    (await lastStartOrCompletion(deps.dynamo, deps.tables.events, req.executionId, req.stepId))?.event ===
      'TASK_COMPLETED'
  )
    // The step completed before this failure (a crash after its TASK_COMPLETED): nothing of it
    // failed, so nothing is recorded and neither a recipe nor the budget is asked; its runner and
    // checker answer what it produced (steps/README.md, "A step runs once").
    return {
      failureClass: classifyFailure(facts, req.recovery).failureClass,
      error: req.error.Error,
      message: new Redactor().text(facts.message),
      phase: req.phase,
      action: 'RETRY',
      policy: 'ask',
      recipe: 'completed_before',
    };
  // An attempt nobody recorded yet (a worker's) that used up the budget (an agent the budget's
  // wall clock stopped, say): BudgetExceeded, asked once; a retry would have nothing to run on.
  if (req.budget && !named && !humanTimeout) {
    const stopped = await budgetStop(
      req.budget,
      await readEvents(deps.dynamo, deps.tables.events, req.executionId),
      journal,
      identity,
      {
        attempt: req.attempt,
        progress: failedLine,
        message: new Redactor().text(facts.message),
        ...spentBy(req.error),
        wallClockGraceSeconds: WORKER_TIME_GRAIN_SECONDS,
      },
    );
    if (stopped) return budgetEscalation(stopped.failureCause.message);
  }
  // Nobody answering a human step is not transient: retrying the same request silently helps no one.
  const failureClass: FailureClass = humanTimeout
    ? 'unrecoverable'
    : (named ?? classifyFailure(facts, req.recovery).failureClass);
  const message = humanTimeout
    ? `no answer within ${req.humanTimeoutSeconds} s`
    : new Redactor().text(facts.message);
  const recipe = req.recovery[failureClass];
  // The step's effective recipe, as its gate showed it (lib/plan/recovery.ts effectiveRecovery).
  const retries = stepRetries(failureClass, recipe?.maxAttempts ?? 0, req.onFail);
  // A named class error already went through its Retry block; contract failures and errors
  // classified here are retried by looping the whole step. Unknown always asks a person.
  const loopsBack =
    failureClass !== 'unknown' && !humanTimeout && (req.error.Error === CONTRACT_FAILED || !named);
  const action = loopsBack && req.attempt <= retries ? 'RETRY' : 'ESCALATE';
  const policy =
    failureClass === 'unknown' || humanTimeout
      ? 'ask'
      : (req.onFail?.escalation ?? recipe?.escalation ?? 'ask');
  const recipeApplied = recipeName(failureClass, retries);
  if (!named) {
    // Nobody recorded this one yet (States.Timeout, Lambda.Unknown, ...): the runner never saw it.
    await recordFailure(journal, identity, {
      error: req.error.Error,
      message,
      attempt: req.attempt,
      failureClass,
      taskFailed: {
        progress: `${failedLine}: ${message}`,
        ...spentBy(req.error),
      },
    });
  }

  if (failureClass === 'permission') {
    // The platform's policy refusing the call is not a credential to fix: a retry is denied again.
    const denial = policyDenialOf(
      await readEvents(deps.dynamo, deps.tables.events, req.executionId),
      req.stepId,
      (await policyFor(deps)).dir,
    );
    await journal.append({
      ...identity,
      event: 'PERMISSION_REQUIRED',
      details: denial
        ? { message: denial.advice, policies: denial.policies }
        : {
            message:
              'Access was denied. Configure the credentials out of band (environment, credential vault) and answer the escalation with RETRY, or SKIP / ABORT.',
          },
    });
  }
  // A retry's outcome is recorded when it is known (the checker's `success`, or `escalated` here).
  if (action === 'ESCALATE')
    await journal.append({
      ...identity,
      event: 'RECOVERY_APPLIED',
      details: { recipe_name: recipeApplied, outcome: 'escalated' },
    });
  return {
    failureClass,
    error: req.error.Error,
    message,
    phase: req.phase,
    action,
    policy,
    recipe: recipeApplied,
  };
}

/**
 * The facts in a Step Functions error: our JSON cause when a harness Lambda threw (as the Cause
 * itself, or inside Lambda's error envelope `{"errorType", "errorMessage"}`), else the raw text.
 */
function factsOf(error: ClassifyRequest['error']): FailureFacts {
  const raw = error.Cause ?? '';
  const parsed = parseJson(raw);
  const envelope = parsed as { errorType?: unknown; errorMessage?: unknown } | undefined;
  const inner = typeof envelope?.errorMessage === 'string' ? envelope.errorMessage : undefined;
  const cause = FailureCauseSchema.safeParse(inner === undefined ? parsed : parseJson(inner));
  if (cause.success) {
    return {
      name: error.Error,
      message: cause.data.message,
      httpStatus: cause.data.httpStatus,
      exitCode: cause.data.exitCode,
      code: cause.data.code,
    };
  }
  if (inner !== undefined)
    return {
      name: typeof envelope?.errorType === 'string' ? envelope.errorType : error.Error,
      message: inner,
    };
  return { name: error.Error, message: raw || error.Error };
}

/**
 * What a worker (or a runner handing over a budget stop) said about the failed attempt (its
 * cause, also inside Lambda's error envelope): what the agent used, to count against the budget,
 * which worker (host:pid) it was, and what its agent ran and reported.
 */
function spentBy(error: ClassifyRequest['error']): { usage?: Usage; worker?: string; agent_run?: AgentRun } {
  const raw = parseJson(error.Cause ?? '') as { errorMessage?: unknown } | undefined;
  const cause = (typeof raw?.errorMessage === 'string' ? parseJson(raw.errorMessage) : raw) as
    | { usage?: unknown; worker?: unknown; agentRun?: unknown }
    | undefined;
  const usage = UsageSchema.safeParse(cause?.usage);
  const agentRun = AgentRunSchema.safeParse(cause?.agentRun);
  return {
    ...(usage.success && cause?.usage !== undefined ? { usage: usage.data } : {}),
    ...(typeof cause?.worker === 'string' ? { worker: cause.worker.slice(0, 200) } : {}),
    ...(agentRun.success ? { agent_run: agentRun.data } : {}),
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

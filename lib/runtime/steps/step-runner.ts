/**
 * The step runner: resolves a step's tool and args, runs it, and hands the output to the
 * contract checker. It never completes a step; it only reports that the tool ran (or why not).
 * Its result is stored before it answers, so a retry after a crash answers it again instead of
 * running a completed step twice (README.md, "A step runs once").
 */
import { TOOL_TIME_LIMIT_SECONDS } from '../../plan/function-limits.ts';
import { AGENT_TOOL, stepInvocation } from '../../plan/tools.ts';
import { eventIdentity, type HarnessDeps, journalFor, secretsFor } from '../deps.ts';
import { readEvents } from '../journal/journal.ts';
import {
  type Call,
  ERROR_NAMES,
  type RemainingBudget,
  type RunnerRequest,
  type RunnerResult,
  type Usage,
  UsageSchema,
} from '../payloads/index.ts';
import { budgetUsedUp, enforceBudget, remainingBudget } from '../recovery/budget.ts';
import { classifyFailure } from '../recovery/classify.ts';
import { recordFailure } from '../recovery/failure-events.ts';
import { classFailure } from '../recovery/failures.ts';
import type { NetworkRecord } from '../sandbox/plan-process-call.ts';
import { Redactor } from '../secrets/redact.ts';
import type { SecretSource } from '../secrets/secrets.ts';
import { crashPoint } from '../shared/crash-points.ts';
import { failureFacts, HarnessError, InvalidInputError } from '../shared/errors.ts';
import { progressLabel } from '../shared/progress.ts';
import { callRecord, type ResolvedCall, resolveCall } from './call.ts';
import { earlierResult } from './earlier-result.ts';
import { assertPinned } from './integrity.ts';
import { inlineOrStored, storeRunResult } from './outputs-table.ts';
import { authorizeRun, runOf } from './run-policy.ts';
import { networkReport, withStepReach } from './step-reach.ts';
import { skipOrBlock } from './step-start.ts';
import { outputsOf, resolveTaskText } from './task-text.ts';

export async function runStep(req: RunnerRequest, deps: HarnessDeps): Promise<RunnerResult> {
  const started = performance.now();
  const identity = eventIdentity(req, { id: req.stepId, name: req.description });
  const notRun = await skipOrBlock(req, journalFor(deps), identity);
  if (notRun) return notRun;
  await refuseUnpinned(req, deps, identity);
  const earlier = await earlierResult(req, deps);
  if (earlier) return earlier;

  const events = req.budget ? await readEvents(deps.dynamo, deps.tables.events, req.executionId) : [];
  if (req.budget) await enforceBudget(req.budget, events, journalFor(deps), identity);

  const secrets = secretsFor(deps, req.secrets);
  // The call is resolved first, so TASK_STARTED keeps it as it will be made (an agent's handoff
  // too: seed 003's handoff.md). A call that cannot be resolved fails after TASK_STARTED.
  const prepared = req.dispatch
    ? await dispatch(req, deps, req.budget ? remainingBudget(req.budget, events) : {}).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      )
    : undefined;
  const resolved = prepared
    ? undefined
    : await prepareCall(req, deps, secrets).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
  const handoff = prepared && 'result' in prepared ? prepared.result.result.handoff : undefined;
  const record =
    prepared && 'result' in prepared
      ? prepared.result.call
      : resolved && 'result' in resolved
        ? callRecord(resolved.result.call, secrets.resolvedValues)
        : undefined;
  await journalFor(deps, secrets.resolvedValues).append({
    ...identity,
    event: 'TASK_STARTED',
    details: {
      attempt: req.attempt,
      progress: `${progressLabel(req.index, req.total)} ▶ ${req.description}`,
      ...(handoff
        ? {
            handoff: {
              ...(handoff.task !== undefined ? { task: handoff.task } : {}),
              inputs: handoff.inputs,
              budget: handoff.budget,
              ...(req.previousFailure ? { previousFailure: req.previousFailure } : {}),
            },
          }
        : {}),
      ...(record ? { call: record } : {}),
    },
  });
  const left = req.budget ? remainingBudget(req.budget, events) : {};
  const network: NetworkRecord[] = [];
  try {
    if (prepared) {
      if ('error' in prepared) throw prepared.error;
      return prepared.result.result;
    }
    if (!resolved || 'error' in resolved) throw resolved?.error;
    const { call, task, approved } = resolved.result;
    const args = call.args;
    // The call as it will be made, values from earlier steps included: policy has the last word.
    await authorizeRun(
      runOf(req),
      deps,
      {
        tool: call.tool,
        args: call.judged,
        approved,
      },
      secrets.resolvedValues,
      identity,
    );
    const result = await withStepReach(
      req.executionId,
      req,
      () =>
        deps.tools.call(call.tool, args, {
          stepId: req.stepId,
          task,
          target: req.target,
          subscriptions: req.subscriptions,
          // An agent gets the wall clock left, as a worker's does; then a person is asked (below).
          // Within the function's time, the runner keeps its margin to record a timeout.
          timeoutMs:
            Math.min(
              req.timeoutSeconds,
              TOOL_TIME_LIMIT_SECONDS,
              call.tool === AGENT_TOOL
                ? (left.wallClockSeconds ?? Number.POSITIVE_INFINITY)
                : Number.POSITIVE_INFINITY,
            ) * 1000,
          ...(deps.cwd ? { cwd: deps.cwd } : {}),
          env: deps.env,
          lambda: deps.lambda,
        }),
      network,
    );
    const redactor = new Redactor(secrets.resolvedValues);
    const output = redactor.value(captureOutputs(req, result));
    const usage = UsageSchema.safeParse(result.usage);
    const ran: RunnerResult = {
      stepId: req.stepId,
      attempt: req.attempt,
      status: 'succeeded',
      ...(await inlineOrStored(output, req, deps)),
      ...(usage.success && result.usage !== undefined ? { usage: usage.data } : {}),
      ...networkReport(network, redactor),
      durationMs: Math.round(performance.now() - started),
      stored: true,
    };
    await storeRunResult(req.executionId, ran, deps);
    crashPoint('step-ran');
    return ran;
  } catch (error) {
    const redactor = new Redactor(secrets.resolvedValues);
    const { failureClass } = classifyFailure(failureFacts(error), req.recovery);
    const failure = classFailure(error, failureClass, redactor);
    const message = failure.failureCause.message;
    const journal = journalFor(deps, secrets.resolvedValues);
    const usage = usageOf(error);
    // The budget is used up: the attempt is handed to the classifier unrecorded, as a worker's
    // failure is, which records it as BudgetExceeded and asks a person once. It alone records:
    // the engine may time the task out at the same moment and send the classifier that instead.
    if (
      req.budget &&
      budgetUsedUp(
        req.budget,
        await readEvents(deps.dynamo, deps.tables.events, req.executionId),
        new Date(),
        usage,
      )
    )
      throw unrecorded(failureFacts(error).name, firstLine(message), usage);
    await recordFailure(journal, identity, {
      error: ERROR_NAMES[failureClass],
      message,
      attempt: req.attempt,
      failureClass,
      taskFailed: {
        progress: `${progressLabel(req.index, req.total)} ✗ ${req.description}: ${firstLine(message)}`,
        // Spent all the same: it counts against the budget.
        ...(usage ? { usage } : {}),
        ...networkReport(network, redactor),
      },
    });
    throw failure;
  }
}

/**
 * Nothing of the step runs unless the engine runs the approved definition under the pinned policy
 * set (integrity.ts): a refusal is recorded as the step's unrecoverable failure, which asks a person.
 */
async function refuseUnpinned(
  req: RunnerRequest,
  deps: HarnessDeps,
  identity: ReturnType<typeof eventIdentity>,
): Promise<void> {
  try {
    await assertPinned(deps, identity, 'step');
  } catch (error) {
    const failure = classFailure(error, 'unrecoverable', new Redactor([]));
    const message = failure.failureCause.message;
    await recordFailure(journalFor(deps), identity, {
      error: ERROR_NAMES.unrecoverable,
      message,
      attempt: req.attempt,
      failureClass: 'unrecoverable',
      taskFailed: {
        progress: `${progressLabel(req.index, req.total)} ✗ ${req.description}: ${firstLine(message)}`,
      },
    });
    throw failure;
  }
}

/**
 * An agent step's start on a worker: what its handoff reads (its args and task text), resolved here because the worker
 * cannot read the ledger's stored outputs, and what is left of the plan's budget. A secret reference in its args is refused (no secrets
 * are given to resolve it): the handoff is execution history, where no secret value may go.
 */
async function dispatch(
  req: RunnerRequest,
  deps: HarnessDeps,
  budget: RemainingBudget,
): Promise<{ result: RunnerResult & { handoff: NonNullable<RunnerResult['handoff']> }; call: Call }> {
  const inputs = await outputsOf(deps.dynamo, req.inputs);
  const task =
    req.task !== undefined ? await resolveTaskText(req.task, inputs, req.context, req.stepId) : undefined;
  const resolved = await resolveCall(
    AGENT_TOOL,
    { ...req.args, ...req.argOverrides },
    { steps: inputs, context: req.context ?? {} },
    `steps.${req.stepId}.args`,
  );
  const handoff = resolved.args;
  const ran = { ...handoff, ...(task !== undefined ? { task } : {}) };
  await authorizeRun(
    runOf(req),
    deps,
    { tool: AGENT_TOOL, args: ran, approved: { ...req.args, ...req.argOverrides } },
    [],
    eventIdentity(req, { id: req.stepId, name: req.description }),
  );
  return {
    result: {
      stepId: req.stepId,
      attempt: req.attempt,
      status: 'dispatched',
      handoff: {
        args: handoff,
        task,
        inputs,
        budget,
      },
      durationMs: 0,
    },
    call: callRecord({ ...resolved, args: ran }, []),
  };
}

/** A step's call (on this runner, not a worker) with its values filled in, and its task text. */
async function prepareCall(
  req: RunnerRequest,
  deps: HarnessDeps,
  secrets: SecretSource,
): Promise<{ call: ResolvedCall; task: string | undefined; approved: Record<string, unknown> }> {
  const invocation = stepInvocation({ tool: req.tool, args: req.args, target: req.target, task: req.task });
  if (!invocation)
    throw new InvalidInputError('the step names no tool and no target', {
      location: `steps.${req.stepId}`,
    });
  const steps = await outputsOf(deps.dynamo, req.inputs);
  const task =
    req.task !== undefined ? await resolveTaskText(req.task, steps, req.context, req.stepId) : undefined;
  // The approved args with the gate's revisions applied, then filled: a revision's values are data too.
  const approved = { ...invocation.args, ...req.argOverrides };
  const call = await resolveCall(
    invocation.tool,
    approved,
    { steps, context: req.context ?? {}, secrets },
    `steps.${req.stepId}.args`,
  );
  return { call, task, approved };
}

/**
 * The step's output: the declared `outputs` picked from the tool's named outputs (or its result's
 * top-level keys); with no declared outputs, the whole tool result (contracts assert over it).
 */
function captureOutputs(
  req: RunnerRequest,
  result: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  if (req.outputs.length === 0) return { ...result };
  const named = (result.outputs ?? {}) as Record<string, unknown>;
  const captured: Record<string, unknown> = {};
  for (const name of req.outputs) {
    if (Object.hasOwn(named, name)) captured[name] = named[name];
    else if (Object.hasOwn(result, name)) captured[name] = result[name];
    else {
      throw new HarnessError('ContractFailed', `the step did not produce its declared output "${name}"`, {
        location: `steps.${req.stepId}.outputs`,
      });
    }
  }
  return captured;
}

const firstLine = (text: string): string => text.split('\n', 1)[0] ?? '';

/** A failure for the classifier to record, its cause as a worker's (message, usage). */
function unrecorded(name: string, message: string, usage: Usage | undefined): Error {
  const error = new Error(JSON.stringify({ message, usage }));
  error.name = name;
  return error;
}

/** What a failed tool's agent reported it used (the agent tool keeps it in the error's output). */
function usageOf(error: unknown): Usage | undefined {
  const output = (error as { output?: { usage?: unknown } } | undefined)?.output;
  const usage = UsageSchema.safeParse(output?.usage);
  return usage.success && output?.usage !== undefined ? usage.data : undefined;
}

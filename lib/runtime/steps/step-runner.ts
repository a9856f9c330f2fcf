/**
 * The step runner: resolves a step's tool and args, runs it, and hands the output to the
 * contract checker. It never completes a step; it only reports that the tool ran (or why not).
 */
import { stepInvocation } from '../../plan/tools.ts';
import { eventIdentity, type HarnessDeps, journalFor, secretsFor } from '../deps.ts';
import { readEvents } from '../journal/journal.ts';
import {
  ERROR_NAMES,
  type RemainingBudget,
  type RunnerRequest,
  type RunnerResult,
  UsageSchema,
} from '../payloads/index.ts';
import { classifyFailure } from '../recovery/classify.ts';
import { recordFailure } from '../recovery/failure-events.ts';
import { classFailure } from '../recovery/failures.ts';
import { Redactor } from '../secrets/redact.ts';
import { resolveReferences } from '../secrets/references.ts';
import { failureFacts, HarnessError, InvalidInputError } from '../shared/errors.ts';
import { progressLabel } from '../shared/progress.ts';
import { enforceBudget, remainingBudget } from './budget.ts';
import { inlineOrStored } from './output-store.ts';
import { authorizeRun, runOf } from './run-policy.ts';
import { skipOrBlock } from './step-start.ts';
import { outputsOf, resolveTaskText } from './task-text.ts';

export async function runStep(req: RunnerRequest, deps: HarnessDeps): Promise<RunnerResult> {
  const started = performance.now();
  const identity = eventIdentity(req, { id: req.stepId, name: req.description });
  const notRun = await skipOrBlock(req, journalFor(deps), identity);
  if (notRun) return notRun;

  const events = req.budget ? await readEvents(deps.dynamo, deps.tables.events, req.executionId) : [];
  if (req.budget) await enforceBudget(req.budget, events, journalFor(deps), identity);

  const secrets = secretsFor(deps, req.secrets);
  await journalFor(deps).append({
    ...identity,
    event: 'TASK_STARTED',
    details: {
      attempt: req.attempt,
      progress: `${progressLabel(req.index, req.total)} ▶ ${req.description}`,
    },
  });
  try {
    if (req.dispatch) return await dispatch(req, deps, req.budget ? remainingBudget(req.budget, events) : {});
    const call = stepInvocation({ tool: req.tool, args: req.args, target: req.target, task: req.task });
    if (!call)
      throw new InvalidInputError('the step names no tool and no target', {
        location: `steps.${req.stepId}`,
      });
    const steps = await outputsOf(deps.dynamo, req.inputs);
    const task =
      req.task !== undefined ? await resolveTaskText(req.task, steps, req.context, req.stepId) : undefined;
    const resolved = (await resolveReferences(
      call.args,
      { steps, context: req.context ?? {}, secrets },
      `steps.${req.stepId}.args`,
    )) as Record<string, unknown>;
    const args = { ...resolved, ...req.argOverrides };
    // The call as it will be made, values from earlier steps included: policy has the last word.
    await authorizeRun(runOf(req), deps, { tool: call.tool, args }, secrets.resolvedValues, identity);
    const result = await deps.tools.call(call.tool, args, {
      stepId: req.stepId,
      ...(task !== undefined ? { task } : {}),
      ...(req.target !== undefined ? { target: req.target } : {}),
      subscriptions: req.subscriptions,
      timeoutMs: req.timeoutSeconds * 1000,
      ...(deps.cwd ? { cwd: deps.cwd } : {}),
      ...(deps.env ? { env: deps.env } : {}),
      ...(deps.lambda ? { lambda: deps.lambda } : {}),
    });
    const redactor = new Redactor(secrets.resolvedValues);
    const output = redactor.value(captureOutputs(req, result));
    const usage = UsageSchema.safeParse(result.usage);
    return {
      stepId: req.stepId,
      attempt: req.attempt,
      status: 'succeeded',
      ...(await inlineOrStored(output, req, deps)),
      ...(usage.success && result.usage !== undefined ? { usage: usage.data } : {}),
      durationMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    const redactor = new Redactor(secrets.resolvedValues);
    const { failureClass } = classifyFailure(failureFacts(error), req.recovery);
    const failure = classFailure(error, failureClass, redactor);
    const message = failure.failureCause.message;
    await recordFailure(journalFor(deps, secrets.resolvedValues), identity, {
      error: ERROR_NAMES[failureClass],
      message,
      attempt: req.attempt,
      failureClass,
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
): Promise<RunnerResult> {
  const inputs = await outputsOf(deps.dynamo, req.inputs);
  const task =
    req.task !== undefined ? await resolveTaskText(req.task, inputs, req.context, req.stepId) : undefined;
  const args = (await resolveReferences(
    req.args,
    { steps: inputs, context: req.context ?? {} },
    `steps.${req.stepId}.args`,
  )) as Record<string, unknown>;
  const handoff = { ...args, ...req.argOverrides };
  await authorizeRun(
    runOf(req),
    deps,
    { tool: 'agent', args: { ...handoff, ...(task !== undefined ? { task } : {}) } },
    [],
    eventIdentity(req, { id: req.stepId, name: req.description }),
  );
  return {
    stepId: req.stepId,
    attempt: req.attempt,
    status: 'dispatched',
    handoff: {
      args: handoff,
      ...(task !== undefined ? { task } : {}),
      inputs,
      budget,
    },
    durationMs: 0,
  };
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

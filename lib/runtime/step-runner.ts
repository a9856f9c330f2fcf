/**
 * The step runner: resolves a step's tool and args, runs it, and hands the output to the
 * contract checker. It never completes a step; it only reports that the tool ran (or why not).
 */
import { stepInvocation } from '../plan/tools.ts';
import { classifyFailure } from './classify.ts';
import { type HarnessDeps, journalFor } from './deps.ts';
import { failureFacts, HarnessError, InvalidInputError } from './errors.ts';
import { classFailure } from './failures.ts';
import { entryOutput, storeOutput } from './output-store.ts';
import { ERROR_NAMES, type RunnerRequest, type RunnerResult } from './payloads.ts';
import { Redactor } from './redact.ts';
import { resolveReferences } from './references.ts';
import { SecretSource } from './secrets.ts';

/** `[Task N/M]`, the spec's progress notation. */
export const progressLabel = (index: number, total: number): string => `[Task ${index}/${total}]`;

export async function runStep(req: RunnerRequest, deps: HarnessDeps): Promise<RunnerResult> {
  const started = performance.now();
  const identity = {
    executionId: req.executionId,
    planId: req.plan.id,
    planVersion: req.plan.version,
    planDigest: req.plan.digest,
    task_id: req.stepId,
    task_name: req.description,
  };
  const base = { stepId: req.stepId, attempt: req.attempt };
  const progress = progressLabel(req.index, req.total);

  if (req.skip) {
    await journalFor(deps).append({
      ...identity,
      event: 'TASK_SKIPPED',
      details: { reason: 'skipped by an approver' },
    });
    return { ...base, status: 'skipped', durationMs: 0 };
  }
  // A dependency missing from `inputs` counts as not completed.
  const blockedBy = req.dependsOn.filter((id) => req.inputs[id]?.status !== 'completed');
  if (blockedBy.length > 0) {
    await journalFor(deps).append({ ...identity, event: 'TASK_BLOCKED', details: { blocked_by: blockedBy } });
    return { ...base, status: 'blocked', blockedBy, durationMs: 0 };
  }

  const secrets = new SecretSource({
    secrets: deps.secrets ?? [],
    ...(deps.env ? { env: deps.env } : {}),
    ...(deps.secretsManager ? { secretsManager: deps.secretsManager } : {}),
  });
  await journalFor(deps).append({
    ...identity,
    event: 'TASK_STARTED',
    details: { attempt: req.attempt, progress: `${progress} ▶ ${req.description}` },
  });
  try {
    if (req.requiresHuman) {
      throw new InvalidInputError('this step is done by a person; the runner cannot perform it', {
        location: `steps.${req.stepId}.requiresHuman`,
      });
    }
    const call = stepInvocation({ tool: req.tool, args: req.args, target: req.target, task: req.task });
    if (!call)
      throw new InvalidInputError('the step names no tool and no target', {
        location: `steps.${req.stepId}`,
      });
    const steps: Record<string, Record<string, unknown> | undefined> = {};
    for (const [id, entry] of Object.entries(req.inputs)) steps[id] = await entryOutput(deps.dynamo, entry);
    const resolved = (await resolveReferences(
      call.args,
      { steps, context: req.context ?? {}, secrets },
      `steps.${req.stepId}.args`,
    )) as Record<string, unknown>;
    const result = await deps.tools.call(
      call.tool,
      { ...resolved, ...req.argOverrides },
      {
        stepId: req.stepId,
        ...(req.task !== undefined ? { task: req.task } : {}),
        ...(req.target !== undefined ? { target: req.target } : {}),
        subscriptions: req.subscriptions,
        timeoutMs: req.timeoutSeconds * 1000,
        ...(deps.cwd ? { cwd: deps.cwd } : {}),
        ...(deps.env ? { env: deps.env } : {}),
        ...(deps.lambda ? { lambda: deps.lambda } : {}),
      },
    );
    const redactor = new Redactor(secrets.resolvedValues);
    const output = redactor.value(captureOutputs(req, result));
    const durationMs = Math.round(performance.now() - started);
    if (Buffer.byteLength(JSON.stringify(output)) > req.inlineOutputLimitBytes) {
      const outputRef = await storeOutput(
        deps.dynamo,
        deps.tables.outputs,
        req.executionId,
        req.stepId,
        output,
      );
      return { ...base, status: 'succeeded', outputRef, durationMs };
    }
    return { ...base, status: 'succeeded', output, durationMs };
  } catch (error) {
    const redactor = new Redactor(secrets.resolvedValues);
    const { failureClass } = classifyFailure(failureFacts(error));
    const failure = classFailure(error, failureClass, redactor);
    await journalFor(deps, secrets.resolvedValues).append({
      ...identity,
      event: 'FAILURE_DETECTED',
      details: {
        error: ERROR_NAMES[failureClass],
        error_message: failure.failureCause.message,
        attempt: req.attempt,
      },
    });
    throw failure;
  }
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

/**
 * The step runner's rollback mode (seed 003): undo the completed steps, most recent first. The
 * journal says what completed and in which order (parallel branches and child machines
 * included), and which rollbacks already ran, so each call does the next one.
 */
import { eventIdentity, type HarnessDeps, journalFor, secretsFor } from '../deps.ts';
import { readEvents } from '../journal/journal.ts';
import type { JournalRecord, RollbackRunRequest, RollbackRunResult } from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { failureFacts } from '../shared/errors.ts';
import { truncateText } from '../shared/truncate.ts';
import { callRecord, resolveCall } from './call.ts';
import { assertPinned } from './integrity.ts';
import { authorizeRun } from './run-policy.ts';
import { withStepReach } from './step-reach.ts';

/** Strings of a rollback's output kept for its contract; the rest stays in the tool's own logs. */
const OUTPUT_TEXT_BYTES = 16 * 1024;

export async function runRollback(req: RollbackRunRequest, deps: HarnessDeps): Promise<RollbackRunResult> {
  const events = await readEvents(deps.dynamo, deps.tables.events, req.executionId);
  const failed = events.find((e) => e.event === 'ROLLBACK_FAILED');
  if (failed) return { status: 'failed', ...(failed.task_id ? { stepId: failed.task_id } : {}) };
  const stepId = nextRollback(events, Object.keys(req.procedures));
  const procedure = stepId === undefined ? undefined : req.procedures[stepId];
  if (stepId === undefined || !procedure) return { status: 'done' };
  if (req.stopped) return recordStopped(req, deps, stepId, procedure.description);
  const attempts = rollbackAttempts(events, stepId);
  // Started and never ended: the engine stopped during it. Its contract decides what follows.
  if (attempts.open !== undefined && req.rerunAfter !== attempts.open)
    return { status: 'interrupted', stepId };

  const identity = eventIdentity(req, { id: stepId, name: procedure.description });
  const secrets = secretsFor(deps, req.secrets);
  // Resolved first, so ROLLBACK_STARTED keeps the undo as it will be made.
  const resolved = await resolveCall(
    procedure.tool,
    procedure.args,
    { steps: completedOutputs(events), context: req.context ?? {}, secrets },
    `steps.${stepId}.rollback.args`,
  ).then(
    (call) => ({ call }),
    (error: unknown) => ({ error }),
  );
  await journalFor(deps, secrets.resolvedValues).append({
    ...identity,
    event: 'ROLLBACK_STARTED',
    details: {
      tool: procedure.tool,
      rehearsal: req.rehearsal,
      ...(attempts.started > 0 ? { attempt: attempts.started + 1 } : {}),
      ...('call' in resolved ? { call: callRecord(resolved.call, secrets.resolvedValues) } : {}),
    },
  });
  try {
    // The undo runs only under the approved definition and the pinned policy set (integrity.ts).
    await assertPinned(deps, identity, 'rollback');
    if ('error' in resolved) throw resolved.error;
    const { args, judged } = resolved.call;
    // The undo as it will be made: the platform's policy has the last word here too.
    await authorizeRun(
      { executionId: req.executionId, plan: req.plan, stepId, attempt: 1, rollback: true },
      deps,
      { tool: procedure.tool, args: judged },
      secrets.resolvedValues,
      identity,
    );
    const result = await withStepReach(req.executionId, procedure, () =>
      deps.tools.call(procedure.tool, args, {
        stepId,
        subscriptions: [],
        timeoutMs: procedure.timeoutSeconds * 1000,
        ...(deps.cwd ? { cwd: deps.cwd } : {}),
        env: deps.env,
        lambda: deps.lambda,
      }),
    );
    const redactor = new Redactor(secrets.resolvedValues);
    return { status: 'ran', stepId, output: redactor.value(shortened(result)) as Record<string, unknown> };
  } catch (error) {
    const message = new Redactor(secrets.resolvedValues).text(failureFacts(error).message);
    await journalFor(deps, secrets.resolvedValues).append({
      ...identity,
      event: 'ROLLBACK_FAILED',
      details: {
        error: error instanceof Error ? error.name : 'Error',
        error_message: message,
        rehearsal: req.rehearsal,
      },
    });
    return { status: 'failed', stepId };
  }
}

/** The rollback states gave up on `stepId`'s rollback: ROLLBACK_FAILED with their error. */
async function recordStopped(
  req: RollbackRunRequest,
  deps: HarnessDeps,
  stepId: string,
  description: string,
): Promise<RollbackRunResult> {
  const error = req.stopped ?? { Error: 'States.TaskFailed' };
  await journalFor(deps).append({
    ...eventIdentity(req, { id: stepId, name: description }),
    event: 'ROLLBACK_FAILED',
    details: {
      error: error.Error,
      error_message: `the rollback did not finish: ${truncateText(error.Cause ?? error.Error, 2048).text}`,
      rehearsal: req.rehearsal,
    },
  });
  return { status: 'failed', stepId };
}

/**
 * How many attempts of `stepId`'s rollback started, and the seq of the last one if it never
 * ended (ROLLBACK_COMPLETED or ROLLBACK_FAILED): cut short by the engine stopping.
 */
export function rollbackAttempts(
  events: readonly JournalRecord[],
  stepId: string,
): { started: number; open?: number } {
  let started = 0;
  let open: number | undefined;
  for (const e of events) {
    if (e.task_id !== stepId) continue;
    if (e.event === 'ROLLBACK_STARTED') {
      started++;
      open = e.seq;
    } else if (e.event === 'ROLLBACK_COMPLETED' || e.event === 'ROLLBACK_FAILED') open = undefined;
  }
  return open === undefined ? { started } : { started, open };
}

/**
 * The rollbacks still to run, in the order they run: the completed steps that have a procedure
 * (`withProcedure`) and whose rollback has not completed, most recently completed first. None
 * once a rollback failed (the loop stops there).
 */
export function pendingRollbacks(
  events: readonly JournalRecord[],
  withProcedure: readonly string[],
): string[] {
  const completedAt = new Map<string, number>();
  const ended = new Set<string>();
  for (const e of events) {
    if (!e.task_id) continue;
    if (e.event === 'TASK_COMPLETED') completedAt.set(e.task_id, e.seq);
    else if (e.event === 'ROLLBACK_COMPLETED') ended.add(e.task_id);
    else if (e.event === 'ROLLBACK_FAILED') return [];
  }
  const has = new Set(withProcedure);
  return [...completedAt]
    .filter(([id]) => has.has(id) && !ended.has(id))
    .sort((a, b) => b[1] - a[1])
    .map(([id]) => id);
}

/** The next rollback to run (see {@link pendingRollbacks}); undefined when none is left. */
export function nextRollback(
  events: readonly JournalRecord[],
  withProcedure: readonly string[],
): string | undefined {
  return pendingRollbacks(events, withProcedure)[0];
}

/** What each completed step captured, as TASK_COMPLETED recorded it (`${steps.<id>.<name>}`). */
export function completedOutputs(events: readonly JournalRecord[]): Record<string, Record<string, unknown>> {
  const outputs: Record<string, Record<string, unknown>> = {};
  for (const e of events)
    if (e.event === 'TASK_COMPLETED' && e.task_id)
      outputs[e.task_id] = (e.details.result ?? {}) as Record<string, unknown>;
  return outputs;
}

function shortened(result: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(result))
    out[key] = typeof value === 'string' ? truncateText(value, OUTPUT_TEXT_BYTES).text : value;
  return out;
}

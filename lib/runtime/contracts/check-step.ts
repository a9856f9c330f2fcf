/**
 * The contract checker's two jobs: completing a step (only a passing contract does) and, at the
 * end of a run, checking the plan's postconditions and writing EXECUTION_COMPLETE.
 */

import { outputShapeMismatch } from '../../plan/output-shapes.ts';
import type { Contract } from '../../plan/schema.ts';
import { eventIdentity, type HarnessDeps, journalFor, secretsFor } from '../deps.ts';
import { lastStartOrCompletion, readEvents } from '../journal/journal.ts';
import {
  type CheckRequest,
  type CheckResult,
  CONTRACT_FAILED,
  ERROR_NAMES,
  EVENT_DETAILS,
  type FinalizeRequest,
  type FinalizeResult,
  HarnessFailure,
  INCONSISTENT_RUN,
  type JournalRecord,
} from '../payloads/index.ts';
import { classifyFailure } from '../recovery/classify.ts';
import { recordFailure, retriedRecipe } from '../recovery/failure-events.ts';
import { classFailure, failureCause } from '../recovery/failures.ts';
import type { NetworkRecord } from '../sandbox/plan-process-call.ts';
import { Redactor } from '../secrets/redact.ts';
import { crashPoint } from '../shared/crash-points.ts';
import { failureFacts, InvalidInputError, OutputShapeMismatchError } from '../shared/errors.ts';
import { progressLabel } from '../shared/progress.ts';
import { assertPinned } from '../steps/integrity.ts';
import { dropRunResult, entryOutput, loadRunResult, storeRunResult } from '../steps/outputs-table.ts';
import { networkReport, withStepReach } from '../steps/step-reach.ts';
import {
  approvedRan,
  type ContractEvidence,
  checkContract,
  contractFailure,
  noContractEvidence,
} from './contracts.ts';

/** Checks one step's contract. Passing → TASK_COMPLETED; failing → TASK_FAILED and a thrown, named failure. */
export async function checkStep(req: CheckRequest, deps: HarnessDeps): Promise<CheckResult> {
  if (req.run.status === 'dispatched')
    throw new InvalidInputError('the step was dispatched to a worker but no worker result came back', {
      location: `steps.${req.stepId}`,
    });
  if (req.run.status !== 'succeeded') return { status: req.run.status };
  const identity = eventIdentity(req, { id: req.stepId, name: req.description });
  await pinnedOrRefused(deps, identity);
  const completed = await completedBefore(req, deps);
  if (completed) return completed;
  const progress = progressLabel(req.index, req.total);
  const output = (await entryOutput(deps.dynamo, { status: 'completed', ...pickOutput(req) })) ?? {};
  const secrets = secretsFor(deps, req.secrets);
  // The contract may name the step's own outputs too (`${steps.<this step>.url}`).
  const steps: Record<string, Record<string, unknown> | undefined> = { [req.stepId]: output };
  for (const [id, entry] of Object.entries(req.inputs)) steps[id] = await entryOutput(deps.dynamo, entry);
  // A produced value that does not fit its shape fails the step before its contract (or a later step) reads it.
  const mismatch = await outputShapeMismatch(output, req.outputShapes);
  if (mismatch)
    return refuseOutputs(
      req,
      deps,
      new OutputShapeMismatchError(mismatch.message, {
        location: `steps.${req.stepId}.outputs.${mismatch.output}`,
      }),
    );
  // What the step's tool asked of the network proxy, then its contract's.
  const network: NetworkRecord[] = [...(req.run.network ?? [])];
  const evidence: ContractEvidence = req.run.evidence
    ? workerEvidence(req.run.evidence, req.contract)
    : req.contract
      ? await withStepReach(
          req.executionId,
          req,
          () =>
            checkContract(
              req.contract as Contract,
              { output, context: req.context ?? {}, steps },
              {
                secrets,
                lambda: deps.lambda,
                ...(deps.cwd ? { cwd: deps.cwd } : {}),
              },
            ),
          network,
        )
      : noContractEvidence();
  const journal = journalFor(deps, secrets.resolvedValues);
  if (evidence.passed) {
    // A retried run (or re-check) passing is the outcome of the recipe (or person) that retried it.
    const recovered =
      req.run.attempt > 1 || req.checkRetries > 0
        ? await retriedRecipe(deps.dynamo, deps.tables.events, req.executionId, req.stepId)
        : undefined;
    if (recovered)
      await journal.append({
        ...identity,
        event: 'RECOVERY_APPLIED',
        details: { recipe_name: recovered, outcome: 'success' },
      });
    // Kept whole before the step is completed (a worker's or a person's result has no runner to
    // store it; a check made again in place follows a failed one, which forgot it): a retry after
    // a crash answers it (completedBefore).
    if (!req.run.stored || req.checkRetries > 0)
      await storeRunResult(req.executionId, { ...req.run, stored: true }, deps);
    await journal.append({
      ...identity,
      event: 'TASK_COMPLETED',
      details: {
        attempt: req.run.attempt,
        result: resultSummary(output),
        evidence,
        progress: `${progress} ✓ ${req.description} (${evidence.summary})`,
        ...workerReport(req),
        ...networkReport(network, new Redactor(secrets.resolvedValues)),
      },
    });
    crashPoint('step-completed');
    if (req.run.answeredBy !== undefined) crashPoint('human-completed');
    return { status: 'completed', ...pickOutput(req), evidence };
  }
  const facts = contractFailure(evidence);
  // A contract that ran and said no is the work's fault; trouble reaching what it checks is classified.
  const failureClass =
    evidence.error || evidence.timedOut ? classifyFailure(facts, req.recovery).failureClass : 'logic';
  const name = failureClass === 'logic' ? CONTRACT_FAILED : ERROR_NAMES[failureClass];
  const cause = failureCause(facts, failureClass, new Redactor(secrets.resolvedValues));
  await dropRunResult(req.executionId, req.stepId, req.run.attempt, deps);
  await recordFailure(journal, identity, {
    error: name,
    message: cause.message,
    attempt: req.run.attempt,
    failureClass,
    taskFailed: {
      progress: `${progress} ✗ ${req.description}: ${evidence.reason ?? 'contract failed'}`,
      evidence,
      ...workerReport(req),
      ...networkReport(network, new Redactor(secrets.resolvedValues)),
    },
  });
  throw new HarnessFailure(name, cause);
}

/**
 * The step's outputs were refused before its contract ran: TASK_FAILED and the classified failure
 * (logic, unless the plan's recipes say otherwise), thrown as a contract failure so the step's
 * recipe runs the whole step again rather than checking the same outputs twice.
 */
async function refuseOutputs(
  req: CheckRequest,
  deps: HarnessDeps,
  error: OutputShapeMismatchError,
): Promise<never> {
  const secrets = secretsFor(deps, req.secrets);
  const facts = { ...failureFacts(error), message: `${error.name}: ${error.message}` };
  const { failureClass } = classifyFailure(facts, req.recovery);
  const name = failureClass === 'logic' ? CONTRACT_FAILED : ERROR_NAMES[failureClass];
  const cause = failureCause(
    { ...facts, location: error.location } as typeof facts,
    failureClass,
    new Redactor(secrets.resolvedValues),
  );
  await dropRunResult(req.executionId, req.stepId, req.run.attempt, deps);
  await recordFailure(
    journalFor(deps, secrets.resolvedValues),
    eventIdentity(req, { id: req.stepId, name: req.description }),
    {
      error: name,
      message: cause.message,
      attempt: req.run.attempt,
      failureClass,
      taskFailed: {
        progress: `${progressLabel(req.index, req.total)} ✗ ${req.description}: ${firstLine(cause.message)}`,
        ...workerReport(req),
        ...networkReport(req.run.network ?? [], new Redactor(secrets.resolvedValues)),
      },
    },
  );
  throw new HarnessFailure(name, cause);
}

const firstLine = (text: string): string => text.split('\n', 1)[0] ?? '';

/**
 * The step's TASK_COMPLETED is journaled already (a crash after it, then a retry): the same
 * completed result, the attempt's whole output as stored and the evidence journaled, with no
 * contract run and nothing journaled again (steps/README.md, "A step runs once").
 */
async function completedBefore(req: CheckRequest, deps: HarnessDeps): Promise<CheckResult | undefined> {
  const last = await lastStartOrCompletion(deps.dynamo, deps.tables.events, req.executionId, req.stepId);
  if (last?.event !== 'TASK_COMPLETED') return undefined;
  const details = EVENT_DETAILS.TASK_COMPLETED.parse(last.details);
  const stored =
    details.attempt !== undefined
      ? await loadRunResult(req.executionId, req.stepId, details.attempt, deps)
      : undefined;
  const run = stored ?? req.run;
  // The evidence as journaled, whole (the schema names only the fields every kind has).
  const evidence = last.details.evidence as CheckResult['evidence'];
  return { status: 'completed', output: run.output, outputRef: run.outputRef, evidence };
}

/** What an agent's worker said of the attempt: what it used, who ran it, and what its agent ran and reported. */
function workerReport(req: CheckRequest) {
  return {
    ...(req.run.usage ? { usage: req.run.usage } : {}),
    ...(req.run.worker ? { worker: req.run.worker } : {}),
    ...(req.run.agentRun ? { agent_run: req.run.agentRun } : {}),
  };
}

/**
 * Checks every postcondition (when the run got that far, and unless an earlier `postconditions`
 * call did) and writes EXECUTION_COMPLETE; a `postconditions` call stops after the checks. A run
 * that got that far is a success only if its journal is consistent too (see inconsistenciesOf).
 */
export async function finalizeExecution(req: FinalizeRequest, deps: HarnessDeps): Promise<FinalizeResult> {
  const identity = eventIdentity(req);
  const secrets = secretsFor(deps, req.secrets);
  let failedPostconditions: string[] = req.failedPostconditions ?? [];
  let summary: FinalizeResult['summary'];
  let inconsistent: FinalizeResult['error'];
  const events = await readEvents(deps.dynamo, deps.tables.events, req.executionId);
  // Made again after it wrote EXECUTION_COMPLETE (the engine stopped before it heard the answer).
  const complete = req.kind === 'finalize' ? events.find((e) => e.event === 'EXECUTION_COMPLETE') : undefined;
  if (complete) return recordedOutcome(complete, events);
  const journaled = lastOutcomes(events);
  if (req.ledger && !req.error) {
    if (!req.failedPostconditions)
      failedPostconditions = await checkPostconditions(req, req.ledger, deps, secrets);
    // A split plan's parent ledger holds only the entries it still reads; the parts' other steps
    // are known from the journal they wrote.
    const outcomes = req.stepIds.map((id): StepOutcome => {
      const status = req.ledger?.steps[id]?.status;
      if (status === 'completed') return 'completed';
      if (status === 'skipped' || status === 'blocked') return 'skipped';
      return journaled.get(id) === 'completed'
        ? 'completed'
        : journaled.get(id) === 'skipped'
          ? 'skipped'
          : 'failed';
    });
    summary = tally(req.stepIds.length, outcomes);
    const problems = inconsistenciesOf(
      events,
      new Set(req.stepIds.filter((_, i) => outcomes[i] === 'completed')),
    );
    if (problems.length > 0) inconsistent = { Error: INCONSISTENT_RUN, Cause: problems.join('; ') };
  } else {
    // When the run ended early there is no ledger: count from what the journal recorded.
    summary = tally(
      req.stepIds.length,
      req.stepIds.map((id) => journaled.get(id)),
    );
  }
  const succeeded = !req.error && !inconsistent && summary.failed === 0 && failedPostconditions.length === 0;
  if (req.kind === 'postconditions') return { succeeded, summary, failedPostconditions };
  const error = req.error ?? inconsistent;
  await journalFor(deps, secrets.resolvedValues).append({
    ...identity,
    event: 'EXECUTION_COMPLETE',
    details: {
      summary,
      succeeded,
      ...(error
        ? { error: error.Error, ...(error.Cause ? { reason: error.Cause } : {}) }
        : failedPostconditions.length > 0
          ? { error: 'Plangate.PostconditionFailed' }
          : {}),
    },
  });
  return { succeeded, summary, failedPostconditions, error: inconsistent };
}

/** The outcome EXECUTION_COMPLETE recorded, answered again as the first call answered it. */
function recordedOutcome(complete: JournalRecord, events: readonly JournalRecord[]): FinalizeResult {
  const details = EVENT_DETAILS.EXECUTION_COMPLETE.parse(complete.details);
  const failedPostconditions = events.flatMap((e) =>
    e.event === 'POSTCONDITION_CHECKED' && e.details.passed === false
      ? [String(e.details.postcondition_id)]
      : [],
  );
  return {
    succeeded: details.succeeded,
    summary: details.summary,
    failedPostconditions,
    ...(details.error === INCONSISTENT_RUN
      ? { error: { Error: INCONSISTENT_RUN, Cause: details.reason ?? INCONSISTENT_RUN } }
      : {}),
  };
}

/**
 * What contradicts itself in a run that reached its end without an error: a step approved at its
 * own gate that never started (and was not skipped at an escalation), or a step blocked although
 * every dependency it was blocked by completed. Either means the harness lost track of the plan's
 * state (as a timeout ladder that dropped the ledger did), so the run must not say it succeeded.
 */
function inconsistenciesOf(events: readonly JournalRecord[], completed: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const approvedNotStarted = new Set<string>();
  for (const e of events) {
    if (!e.task_id) continue;
    if (e.event === 'GATE_APPROVED' && e.details.gate === 'step') approvedNotStarted.add(e.task_id);
    else if (
      e.event === 'TASK_STARTED' ||
      (e.event === 'RECOVERY_ESCALATION' && e.details.user_decision === 'SKIP')
    )
      approvedNotStarted.delete(e.task_id);
    else if (e.event === 'TASK_BLOCKED') {
      const blockedBy = Array.isArray(e.details.blocked_by) ? (e.details.blocked_by as string[]) : [];
      if (blockedBy.every((id) => completed.has(id)))
        problems.push(
          `step ${e.task_id} was blocked by ${blockedBy.join(', ') || 'nothing'}, which completed`,
        );
    }
  }
  for (const id of approvedNotStarted) problems.push(`step ${id} was approved at its gate but never ran`);
  return problems;
}

type StepOutcome = 'completed' | 'failed' | 'skipped';

function tally(steps: number, outcomes: readonly (StepOutcome | undefined)[]): FinalizeResult['summary'] {
  const completed = outcomes.filter((o) => o === 'completed').length;
  const failed = outcomes.filter((o) => o === 'failed').length;
  return { completed, failed, skipped: steps - completed - failed };
}

/** Checks each postcondition against the ledger's outputs (POSTCONDITION_CHECKED); returns the ids that did not hold. */
async function checkPostconditions(
  req: FinalizeRequest,
  ledger: NonNullable<FinalizeRequest['ledger']>,
  deps: HarnessDeps,
  secrets: ReturnType<typeof secretsFor>,
): Promise<string[]> {
  const identity = eventIdentity(req);
  const failed: string[] = [];
  const steps: Record<string, Record<string, unknown> | undefined> = {};
  for (const [id, entry] of Object.entries(ledger.steps)) steps[id] = await entryOutput(deps.dynamo, entry);
  for (const post of req.postconditions) {
    const evidence = await checkContract(
      post.contract,
      { output: steps, context: req.context, steps },
      { secrets, lambda: deps.lambda, ...(deps.cwd ? { cwd: deps.cwd } : {}) },
    );
    if (!evidence.passed) failed.push(post.id);
    await journalFor(deps, secrets.resolvedValues).append({
      ...identity,
      event: 'POSTCONDITION_CHECKED',
      details: { postcondition_id: post.id, passed: evidence.passed, evidence },
    });
  }
  return failed;
}

/**
 * Each step's last word in the journal: completed, failed, or anything else (skipped). A step
 * that never ran, or was stopped before it ended (abort, rejection, a critical skip elsewhere),
 * counts as skipped, like one a person skipped at an escalation.
 */
function lastOutcomes(events: readonly JournalRecord[]): Map<string, StepOutcome> {
  const last = new Map<string, StepOutcome>();
  for (const e of events) {
    if (!e.task_id) continue;
    if (e.event === 'TASK_COMPLETED') last.set(e.task_id, 'completed');
    else if (e.event === 'TASK_FAILED' || e.event === 'FAILURE_DETECTED') last.set(e.task_id, 'failed');
    else if (
      e.event === 'TASK_STARTED' ||
      e.event === 'TASK_SKIPPED' ||
      e.event === 'TASK_BLOCKED' ||
      (e.event === 'RECOVERY_ESCALATION' && e.details.user_decision === 'SKIP')
    )
      last.set(e.task_id, 'skipped');
  }
  return last;
}

/**
 * The evidence a worker returned for the contract it ran in its workspace, accepted only when it
 * is evidence of the approved contract (the one this definition carries); anything else fails.
 */
function workerEvidence(
  evidence: NonNullable<CheckRequest['run']['evidence']>,
  contract?: Contract,
): ContractEvidence {
  if (contract && evidence.kind === contract.kind && evidence.ran === approvedRan(contract, evidence.values))
    return evidence;
  return {
    ...evidence,
    passed: false,
    reason: `the worker's evidence is not of the approved contract (it ran: ${evidence.ran})`,
    summary: 'failed: evidence of another contract',
  };
}

function pickOutput(req: CheckRequest): Pick<CheckResult, 'output' | 'outputRef'> {
  return {
    output: req.run.output,
    outputRef: req.run.outputRef,
  };
}

/** What TASK_COMPLETED keeps of the output: keys and short values, not whole logs. */
function resultSummary(output: Record<string, unknown>): Record<string, unknown> {
  const summary: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(output)) {
    summary[key] = typeof value === 'string' && value.length > 512 ? `${value.slice(0, 512)}…` : value;
  }
  return summary;
}

/**
 * No contract is run, and no worker's evidence accepted, unless the engine runs the approved
 * definition under the pinned policy set (steps/integrity.ts); a refusal is unrecoverable: a person decides.
 */
export async function pinnedOrRefused(
  deps: HarnessDeps,
  identity: ReturnType<typeof eventIdentity>,
): Promise<void> {
  try {
    await assertPinned(deps, identity, 'contract');
  } catch (error) {
    throw classFailure(error, 'unrecoverable', new Redactor([]));
  }
}

/** The contract checker's rollback mode: only a passing contract says a step was undone. */
import { eventIdentity, type HarnessDeps, journalFor, secretsFor } from '../deps.ts';
import { readEvents } from '../journal/journal.ts';
import type { JournalRecord, RollbackCheckRequest, RollbackCheckResult } from '../payloads/index.ts';
import { CONTRACT_FAILED } from '../payloads/index.ts';
import { completedOutputs, rollbackAttempts } from '../steps/rollback.ts';
import { pinnedOrRefused } from './check-step.ts';
import { checkContract, noContractEvidence } from './contracts.ts';

export async function checkRollback(
  req: RollbackCheckRequest,
  deps: HarnessDeps,
): Promise<RollbackCheckResult> {
  const events = await readEvents(deps.dynamo, deps.tables.events, req.executionId);
  // Made again after it recorded its verdict (the engine stopped before it heard the answer).
  const recorded = verdictOfLastAttempt(events, req.stepId);
  if (recorded) return { status: recorded };
  const attempts = rollbackAttempts(events, req.stepId);
  // Without a contract nothing can tell whether an interrupted undo happened: it runs again.
  if (req.interrupted && !req.contract) return rerun(attempts.open);

  const identity = eventIdentity(req, { id: req.stepId, name: req.description });
  await pinnedOrRefused(deps, identity);
  const secrets = secretsFor(deps, req.secrets);
  const evidence = req.contract
    ? await checkContract(
        req.contract,
        { output: req.output, context: req.context ?? {}, steps: rollbackContractSteps(events, req) },
        {
          secrets,
          lambda: deps.lambda,
          ...(deps.cwd ? { cwd: deps.cwd } : {}),
        },
      )
    : noContractEvidence();
  const journal = journalFor(deps, secrets.resolvedValues);
  if (evidence.passed) {
    await journal.append({
      ...identity,
      event: 'ROLLBACK_COMPLETED',
      details: {
        evidence,
        rehearsal: req.rehearsal,
        ...(req.interrupted ? { after_interruption: true } : {}),
      },
    });
    return { status: 'completed' };
  }
  // The interrupted undo is not done (or not provably): the procedure runs again.
  if (req.interrupted) return rerun(attempts.open);
  await journal.append({
    ...identity,
    event: 'ROLLBACK_FAILED',
    details: {
      error: CONTRACT_FAILED,
      error_message: `the rollback's contract did not pass: ${evidence.reason ?? evidence.summary}`,
      evidence,
      rehearsal: req.rehearsal,
    },
  });
  return { status: 'failed' };
}

/**
 * What `${steps.<id>.<output>}` reads in a rollback's contract: every completed step's recorded
 * outputs, as the rollback itself was given them; for the step undone, its own outputs with the
 * rollback tool's output over them (`${steps.<own>.stdout}` is still the rollback's stdout).
 */
function rollbackContractSteps(
  events: readonly JournalRecord[],
  req: RollbackCheckRequest,
): Record<string, Record<string, unknown>> {
  const steps = completedOutputs(events);
  return { ...steps, [req.stepId]: { ...steps[req.stepId], ...req.output } };
}

function rerun(startedSeq: number | undefined): RollbackCheckResult {
  return { status: 'rerun', startedSeq };
}

/** How the step's last rollback attempt ended, if it did (after its last ROLLBACK_STARTED). */
function verdictOfLastAttempt(
  events: readonly JournalRecord[],
  stepId: string,
): 'completed' | 'failed' | undefined {
  let verdict: 'completed' | 'failed' | undefined;
  for (const e of events) {
    if (e.task_id !== stepId) continue;
    if (e.event === 'ROLLBACK_STARTED') verdict = undefined;
    else if (e.event === 'ROLLBACK_COMPLETED') verdict = 'completed';
    else if (e.event === 'ROLLBACK_FAILED') verdict = 'failed';
  }
  return verdict;
}

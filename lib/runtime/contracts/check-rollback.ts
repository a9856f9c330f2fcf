/** The contract checker's rollback mode: only a passing contract says a step was undone. */
import { eventIdentity, type HarnessDeps, journalFor, secretsFor } from '../deps.ts';
import type { RollbackCheckRequest, RollbackCheckResult } from '../payloads/index.ts';
import { CONTRACT_FAILED } from '../payloads/index.ts';
import { checkContract, noContractEvidence } from './contracts.ts';

export async function checkRollback(
  req: RollbackCheckRequest,
  deps: HarnessDeps,
): Promise<RollbackCheckResult> {
  const identity = eventIdentity(req, { id: req.stepId, name: req.description });
  const secrets = secretsFor(deps, req.secrets);
  const evidence = req.contract
    ? await checkContract(
        req.contract,
        { output: req.output, context: req.context ?? {}, steps: { [req.stepId]: req.output } },
        {
          secrets,
          ...(deps.lambda ? { lambda: deps.lambda } : {}),
          ...(deps.cwd ? { cwd: deps.cwd } : {}),
        },
      )
    : noContractEvidence();
  const journal = journalFor(deps, secrets.resolvedValues);
  if (evidence.passed) {
    await journal.append({
      ...identity,
      event: 'ROLLBACK_COMPLETED',
      details: { evidence, rehearsal: req.rehearsal },
    });
    return { status: 'completed' };
  }
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

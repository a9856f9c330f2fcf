/**
 * Seed 001's third recovery strategy at the gate: an escalation of a failure no recipe covers
 * (`unknown`) asks the run's recovery advisor, when it has one, before the person is asked; what
 * the model suggests (or why it was refused) is journaled, and shown beside the person's choices
 * on every channel. Accepting it is the person's answer like any other.
 */
import type { eventIdentity } from '../deps.ts';
import type { Journal } from '../journal/journal.ts';
import type { EscalationDecision, GateRequest, RecoveryAdvice, RecoveryAdvisor } from '../payloads/index.ts';
import { REVISING_STRATEGIES } from '../payloads/index.ts';
import type { GateView } from './gate-item.ts';

/**
 * The advisor's suggestion for an escalation of an unknown failure, after RECOVERY_SUGGESTED; or
 * undefined (no advisor, another kind of failure, or refused: RECOVERY_SUGGESTION_REFUSED).
 */
export async function adviceAtEscalation(
  req: GateRequest,
  advisor: RecoveryAdvisor | undefined,
  journal: Journal,
  identity: ReturnType<typeof eventIdentity>,
): Promise<RecoveryAdvice | undefined> {
  if (!advisor || req.kind !== 'escalation' || req.failure?.failureClass !== 'unknown' || !req.stepId)
    return undefined;
  const answer = await advisor({
    plan: req.plan,
    executionId: req.executionId,
    stepId: req.stepId,
    failure: req.failure,
    attempt: req.attempt ?? 1,
  }).catch((error: unknown) => ({
    refused: `the advisor failed: ${error instanceof Error ? error.message : String(error)}`,
    provider: 'unknown',
    model: 'unknown',
  }));
  if ('refused' in answer) {
    await journal.append({
      ...identity,
      event: 'RECOVERY_SUGGESTION_REFUSED',
      details: { reason: answer.refused, provider: answer.provider, model: answer.model },
    });
    return undefined;
  }
  const { suggestion } = answer;
  await journal.append({
    ...identity,
    event: 'RECOVERY_SUGGESTED',
    details: {
      strategy: suggestion.strategy,
      reasons: suggestion.reasons,
      provider: answer.provider,
      model: answer.model,
      input_tokens: answer.inputTokens,
      output_tokens: answer.outputTokens,
      ...(suggestion.strategy === 'retry_with_args' ? { args: suggestion.args } : {}),
      ...(suggestion.strategy === 'insert_steps' ? { steps: suggestion.steps.map((s) => s.id) } : {}),
      ...(answer.revision ? { revision: answer.revision } : {}),
    },
  });
  return answer;
}

/**
 * What accepting the gate's suggestion means as an escalation decision: SKIP or ABORT as the model
 * said. A suggestion that changes the plan is accepted only where the host launches the new
 * version (`plangate run`, whose answer reviser handles it first): here, a string says so.
 */
export function acceptedDecision(gate: GateView, by?: string): EscalationDecision | string {
  const advice = gate.kind === 'escalation' ? gate.recovery : undefined;
  if (!advice) return 'this gate has no suggestion to accept: answer retry, skip or abort';
  const { suggestion } = advice;
  if (REVISING_STRATEGIES.includes(suggestion.strategy))
    return 'this suggestion changes the plan, and only plangate run (whose planner made it) sends the new version to the gate: answer retry, skip or abort here';
  const reason = `the model's suggestion, accepted: ${suggestion.reasons}`;
  return suggestion.strategy === 'skip'
    ? { decision: 'SKIP', ...(by ? { by } : {}), comment: reason, acceptSuggestion: true }
    : { decision: 'ABORT', ...(by ? { by } : {}), reason, acceptSuggestion: true };
}

/**
 * The gate Lambda's logic: keeps the task token server-side, records the request, and hands
 * the approval id (never the token) to whoever notifies people (email, Slack, terminal, page).
 */
import { SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { ANY_APPROVER, type ApprovalPolicy, Approvals } from './approvals.ts';
import { type HarnessDeps, journalFor } from './deps.ts';
import { NotConfiguredError } from './errors.ts';
import type { EscalationDecision, GateRequest } from './payloads.ts';

/** What a notifier gets: enough to ask a person, and the signed approval id for the answer. */
export interface ApprovalNotice {
  /** Opaque, signed, expiring, single-use; goes into links and buttons. */
  readonly approvalId: string;
  readonly kind: GateRequest['kind'];
  readonly executionId: string;
  readonly plan: GateRequest['plan'];
  readonly stepId?: string;
  readonly round: number;
  readonly question?: string;
  readonly failure?: GateRequest['failure'];
  readonly expiresAt: string;
  readonly policy: ApprovalPolicy;
}

export type ApprovalNotifier = (notice: ApprovalNotice) => Promise<void>;

export interface GateDeps extends HarnessDeps {
  readonly sfn: SFNClient;
  /** The HMAC key approval ids are signed with. */
  readonly signingKey: string | Buffer;
  /** Tells people a gate is waiting. */
  readonly notify: ApprovalNotifier;
  /**
   * The approval policy of a plan.
   * @default anyone may approve, quorum 1
   */
  readonly approvalPolicy?: (plan: GateRequest['plan']) => Promise<ApprovalPolicy> | ApprovalPolicy;
}

export function approvalsFor(deps: GateDeps): Approvals {
  return new Approvals({
    dynamo: deps.dynamo,
    gatesTable: deps.tables.gates,
    sfn: deps.sfn,
    journal: journalFor(deps),
    signingKey: deps.signingKey,
  });
}

export async function openGate(req: GateRequest, deps: GateDeps): Promise<{ approvalId?: string }> {
  const identity = {
    executionId: req.executionId,
    planId: req.plan.id,
    planVersion: req.plan.version,
    planDigest: req.plan.digest,
    ...(req.stepId ? { task_id: req.stepId } : {}),
  };
  const journal = journalFor(deps);
  const reason = req.failure
    ? `${req.failure.failureClass} failure in ${req.failure.phase} (${req.failure.error}): ${req.failure.message}`
    : 'step failed';

  if (req.kind === 'escalation' && (req.policy === 'skip' || req.policy === 'abort')) {
    // The recipe decides; no person is asked.
    const decision: EscalationDecision =
      req.policy === 'skip'
        ? { decision: 'SKIP', by: 'recipe' }
        : { decision: 'ABORT', by: 'recipe', reason };
    await deps.sfn.send(
      new SendTaskSuccessCommand({ taskToken: req.taskToken, output: JSON.stringify(decision) }),
    );
    await journal.append({
      ...identity,
      event: 'RECOVERY_ESCALATION',
      details: { reason, user_decision: decision.decision, decided_by: 'recipe' },
    });
    return {};
  }
  if (req.kind === 'escalation' && !req.failure) {
    throw new NotConfiguredError('an escalation gate needs the failure it asks about', {
      location: 'failure',
    });
  }

  const policy = (await deps.approvalPolicy?.(req.plan)) ?? ANY_APPROVER;
  const approvalId = await approvalsFor(deps).create(req, policy);
  if (req.kind === 'escalation') {
    await journal.append({ ...identity, event: 'RECOVERY_ESCALATION', details: { reason } });
  } else {
    await journal.append({
      ...identity,
      event: 'GATE_APPROVAL_REQUESTED',
      details: { plan_id: req.plan.id, gate: req.kind, round: req.round },
    });
  }
  await deps.notify({
    approvalId,
    kind: req.kind,
    executionId: req.executionId,
    plan: req.plan,
    ...(req.stepId ? { stepId: req.stepId } : {}),
    round: req.round,
    ...(req.question ? { question: req.question } : {}),
    ...(req.failure ? { failure: req.failure } : {}),
    expiresAt: new Date(Date.now() + req.timeoutSeconds * 1000).toISOString(),
    policy,
  });
  return { approvalId };
}

/**
 * What the notifier is told about a waiting gate: enough to ask a person, and the link id (an
 * opaque, signed, expiring id), never the task token.
 */
import { visibleText } from '../../plan/visible-text.ts';
import type {
  AbortRollback,
  ApprovalNotice,
  GateOpened,
  GateRequest,
  GateRevision,
  PlanSummary,
  RecoveryAdvice,
  StepGateView,
} from '../payloads/index.ts';
import { sandboxSentence } from '../sandbox/sandbox.ts';
import { Redactor } from '../secrets/redact.ts';
import { shortenAtWord } from '../shared/truncate.ts';
import type { GateItem } from './gate-item.ts';
import { GATE_TITLES } from './shown-gate.ts';

/** What the notifier is told about the gate `req` opened as `approvalId` (never the token). */
export function noticeOf(
  req: GateRequest,
  approvalId: string,
  stage?: ApprovalNotice['stage'],
  /** What the gate item holds beyond the request: who submitted, the step gate's view, what an abort undoes, the model's suggestion. */
  stored: {
    readonly submittedBy?: string | undefined;
    readonly stepGate?: StepGateView | undefined;
    /** Step gate: the revision the plan gate approved, which it asks about. */
    readonly revision?: GateRevision | undefined;
    readonly abortRollsBack?: readonly AbortRollback[] | undefined;
    readonly recovery?: RecoveryAdvice | undefined;
    /** The stored gate's deadline. @default - `timeoutSeconds` from now */
    readonly expiresAt?: string | undefined;
  } = {},
): ApprovalNotice {
  return {
    approvalId,
    kind: req.kind,
    executionId: req.executionId,
    plan: req.plan,
    stepId: req.stepId,
    description: req.description,
    ...(req.summary ? { summary: withoutGraph(req.summary) } : {}),
    stepGate: stored.stepGate,
    submittedBy: stored.submittedBy,
    runsAs: sandboxSentence(),
    round: req.round,
    ...(req.question ? { question: req.question } : {}),
    failure: req.failure,
    ...(stored.abortRollsBack ? { abortRollsBack: [...stored.abortRollsBack] } : {}),
    recovery: stored.recovery,
    ...(req.human ? { human: { instructions: req.human.instructions, outputs: req.human.outputs } } : {}),
    expiresAt: stored.expiresAt ?? new Date(Date.now() + req.timeoutSeconds * 1000).toISOString(),
    policy: req.approval,
    stage,
    revision: stored.revision,
  };
}

/** The notice about a stored gate, handed out as `linkId` again (a reminder, a new revision). */
export function noticeOfItem(item: GateItem, linkId: string, stage: ApprovalNotice['stage']): ApprovalNotice {
  return {
    approvalId: linkId,
    kind: item.kind,
    executionId: item.executionId,
    plan: { id: item.planId, version: item.planVersion, digest: item.planDigest },
    stepId: item.stepId,
    description: item.description,
    ...(item.summary ? { summary: withoutGraph(item.summary) } : {}),
    stepGate: item.stepGate,
    submittedBy: item.submittedBy,
    runsAs: item.runsAs,
    ...(item.votes.length > 0
      ? { votes: item.votes.map((v) => ({ by: v.by, decision: v.decision.decision })) }
      : {}),
    round: item.round,
    ...(item.question ? { question: item.question } : {}),
    failure: item.failure,
    abortRollsBack: item.abortRollsBack,
    recovery: item.recovery,
    ...(item.human ? { human: { instructions: item.human.instructions, outputs: item.human.outputs } } : {}),
    expiresAt: item.expiresAt,
    policy: item.policy,
    stage,
    revision: item.revision,
  };
}

/** The graph is for the page: a message names the plan and links to it (and stays small). */
function withoutGraph({ graph: _graph, ...summary }: PlanSummary): NonNullable<ApprovalNotice['summary']> {
  return summary;
}

/** The longest `asks` line a journal event carries. */
const ASKS_CHARACTERS = 500;

/**
 * What a gate asks, in one line: its title and what it is about (the plan's objective, the step,
 * the failure, the person's task), redacted, its hidden characters shown, shortened at a word.
 */
export function gateAsks(notice: ApprovalNotice): string {
  const step = notice.stepId
    ? `${notice.stepId}${notice.description ? ` (${notice.description})` : ''}`
    : undefined;
  const ofStep = (text: string) => (step ? `${step}: ${text}` : text);
  const about =
    notice.kind === 'plan'
      ? (notice.summary?.objective ?? `${notice.plan.id} v${notice.plan.version}`)
      : notice.kind === 'human' && notice.human
        ? ofStep(notice.human.instructions)
        : notice.kind === 'escalation' && notice.failure
          ? ofStep(`${notice.failure.failureClass} (${notice.failure.error}): ${notice.failure.message}`)
          : (step ?? '');
  const line = visibleText(new Redactor().text(`${GATE_TITLES[notice.kind]}: ${about}`))
    .replace(/\s+/g, ' ')
    .trim();
  return shortenAtWord(line, ASKS_CHARACTERS);
}

/** The gate a notice asks about, as the event that opens it records it (GET /plans/{id} shows it). */
export function gateOpened(notice: ApprovalNotice): GateOpened {
  return {
    link_id: notice.approvalId,
    expires_at: notice.expiresAt,
    policy: {
      approvers: [...notice.policy.approvers],
      forbiddenApprovers: [...notice.policy.forbiddenApprovers],
      quorum: notice.policy.quorum,
    },
    asks: gateAsks(notice),
    ...(notice.question ? { question: notice.question } : {}),
  };
}

/**
 * The gate Lambda's logic: keeps the task token server-side, records the request, and hands
 * the approval id (never the token) to whoever notifies people (email, Slack, terminal, page).
 */

import { SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import type { z } from 'zod';
import { eventIdentity, type HarnessDeps, journalFor, policyFor } from '../deps.ts';
import { firstEvent, fromItem, type Journal, queryItems, readEvents } from '../journal/journal.ts';
import {
  type ApprovalNotice,
  type EscalationDecision,
  EVENT_DETAILS,
  type GateRequest,
  type PlanIdentity,
  type RecoveryAdvisor,
  type StepSketch,
} from '../payloads/index.ts';
import { policyDenialOf } from '../recovery/policy-denial.ts';
import { crashPoint } from '../shared/crash-points.ts';
import { NotConfiguredError } from '../shared/errors.ts';
import { progressLabel } from '../shared/progress.ts';
import { earlierResult } from '../steps/earlier-result.ts';
import { assertPinned } from '../steps/integrity.ts';
import { skipOrBlock } from '../steps/step-start.ts';
import { outputsOf, resolveTaskText } from '../steps/task-text.ts';
import { abortRollbacksOf } from './abort-rollbacks.ts';
import { type AgentRunners, withAgentRunners } from './agent-runners.ts';
import { Approvals } from './approvals.ts';
import { approvedRevisionOf } from './approved-revision.ts';
import type { DecisionListener, EscalationListener, GateItem } from './gate-item.ts';
import { announceEscalation, climbLadder, type LadderDeps } from './ladder.ts';
import { LinkSigner } from './links.ts';
import { gateOpened, noticeOf, noticeOfItem } from './notice.ts';
import { diffPlanGraphs, type PlanChanges, type RecordedSteps } from './plan-diff.ts';
import { adviceAtEscalation } from './recovery-advice.ts';
import { stepGateViewOf } from './step-gate-view.ts';
import { supersedeEarlierVersions } from './versions.ts';

export type { ApprovalNotice } from '../payloads/index.ts';

export type ApprovalNotifier = (notice: ApprovalNotice) => Promise<void>;

export interface GateDeps extends HarnessDeps {
  readonly sfn: SFNClient;
  /** The HMAC key approval ids are signed with. */
  readonly signingKey: string | Buffer;
  /** Tells people a gate is waiting. */
  readonly notify: ApprovalNotifier;
  /**
   * Told of the decisions made here (the timeout ladder's `timed out`), as the approvals API tells
   * of answers, e.g. to update the gate's Slack messages. @default - nobody
   */
  readonly onDecided?: DecisionListener;
  /** Told when the timeout ladder escalates a gate. @default - nobody */
  readonly onEscalated?: EscalationListener;
  /**
   * The run's planner, asked at an escalation of a failure no recipe covers (seed 001's third
   * strategy). @default - no suggestion: the person decides alone
   */
  readonly recoveryAdvisor?: RecoveryAdvisor;
  /**
   * What the host knows of who runs agent steps (`plangate run`'s own workers: their command and
   * workspace), added to their views. @default - what the plan says: the worker taking the target
   */
  readonly agentRunners?: AgentRunners;
}

/** What answering gates needs (the gate Lambda, the approvals API, the local session). */
export type ApprovalsDeps = Pick<
  GateDeps,
  | 'dynamo'
  | 'tables'
  | 'events'
  | 'eventBusName'
  | 'sfn'
  | 'signingKey'
  | 'policy'
  | 'env'
  | 'telemetry'
  | 'deadlineClock'
> & {
  /** Told of each final decision (e.g. to update the gate's Slack message). @default - nobody */
  readonly onDecided?: DecisionListener;
  /** Asks the gate's approvers again when an approval with modifications makes a new revision. @default - nobody */
  readonly notify?: ApprovalNotifier;
};

export function approvalsFor(deps: ApprovalsDeps): Approvals {
  return new Approvals({
    dynamo: deps.dynamo,
    gatesTable: deps.tables.gates,
    outputsTable: deps.tables.outputs,
    plansTable: deps.tables.plans,
    eventsTable: deps.tables.events,
    sfn: deps.sfn,
    journal: journalFor(deps),
    signingKey: deps.signingKey,
    onDecided: deps.onDecided,
    notify: deps.notify,
    policy: deps.policy,
    clock: deps.deadlineClock,
  });
}

export async function openGate(request: GateRequest, deps: GateDeps): Promise<{ approvalId?: string }> {
  // What the approvers read of an agent step includes what is known here of who runs it.
  let req = withAgentRunners(request, deps.agentRunners);
  const identity = eventIdentity(req, req.stepId ? { id: req.stepId, name: req.description } : undefined);
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
    await journal.append({
      ...identity,
      event: 'RECOVERY_ESCALATION',
      details: { reason, user_decision: decision.decision, decided_by: 'recipe' },
    });
    await deps.sfn.send(
      new SendTaskSuccessCommand({ taskToken: req.taskToken, output: JSON.stringify(decision) }),
    );
    return {};
  }
  if (req.kind === 'escalation' && !req.failure) {
    throw new NotConfiguredError('an escalation gate needs the failure it asks about', {
      location: 'failure',
    });
  }
  const approvals = approvalsFor(deps);
  // A retried invocation (the same task token) finds the gate it opened: nobody is asked twice.
  const existing = await approvals.openedBy(req.taskToken);
  if (existing) return resumeOpening(req, existing, { identity, journal, approvals, reason }, deps);
  if (req.kind === 'escalation' && req.failure?.failureClass === 'permission' && req.stepId) {
    // Denied by the platform's policy, not for want of a credential: every channel says so.
    const policyDenial = policyDenialOf(
      await readEvents(deps.dynamo, deps.tables.events, req.executionId),
      req.stepId,
      (await policyFor(deps)).dir,
    );
    if (policyDenial) req = { ...req, failure: { ...req.failure, policyDenial } };
  }
  /** A human step's inputs, as the person reads them (TASK_STARTED keeps them with the instructions). */
  let read: Record<string, Record<string, unknown> | undefined> = {};
  if (req.kind === 'human') {
    const human = requireHuman(req);
    // Skipped by an approver or blocked by a dependency: answered now, nobody is asked.
    const notRun = await skipOrBlock(
      { stepId: req.stepId as string, attempt: req.attempt ?? 1, ...human },
      journal,
      identity,
    );
    // A retry after a crash (the person's answer handed on, or the step completed): the stored
    // answer is the step's result, and nobody is asked again.
    const answered =
      notRun ??
      (await earlierResult(
        { executionId: req.executionId, stepId: req.stepId as string, attempt: req.attempt ?? 1 },
        deps,
      ));
    if (answered) {
      await deps.sfn.send(
        new SendTaskSuccessCommand({ taskToken: req.taskToken, output: JSON.stringify(answered) }),
      );
      return {};
    }
    // The person reads the values of earlier steps, as an agent does.
    read = await outputsOf(deps.dynamo, human.inputs);
    const instructions = await resolveTaskText(human.instructions, read, human.context, req.stepId as string);
    req = { ...req, human: { ...human, instructions } };
  }

  // The plan gate is the machine's first state: an execution whose definition (or policy set) is
  // not the one pinned at submission is refused at its start, before anyone is asked.
  if (req.kind === 'plan') await assertPinned(deps, identity, 'start');
  if (req.ladder && (req.kind === 'plan' || req.kind === 'step')) {
    await climbLadder(
      { ...req, kind: req.kind, ladder: req.ladder },
      await ladderDepsOf(req, deps, approvals, journal),
    );
    return {};
  }
  const graph = req.kind === 'plan' ? req.summary?.graph : undefined;
  const created = await planCreated(req.executionId, deps);
  // A step gate asks about the step as the plan gate's approved revision runs it, and binds that digest.
  const events =
    req.kind === 'step' ? await readEvents(deps.dynamo, deps.tables.events, req.executionId) : [];
  const approved = req.kind === 'step' ? approvedRevisionOf(events) : undefined;
  const stepGate =
    req.kind === 'step' ? await stepGateViewOf(req, events, approved, { dynamo: deps.dynamo }) : undefined;
  const abortRollsBack =
    req.kind === 'escalation'
      ? await abortRollbacksOf(
          req.executionId,
          created?.steps,
          { dynamo: deps.dynamo, eventsTable: deps.tables.events },
          created?.context,
        )
      : undefined;
  const recovery = await adviceAtEscalation(req, deps.recoveryAdvisor, journal, identity);
  const opening = await approvals.create(req, {
    submittedBy: created?.submitted_by,
    changes: graph ? await changesSincePrevious(req.plan, graph, deps, created?.steps) : undefined,
    stepGate,
    approved,
    abortRollsBack,
    recovery,
  });
  if (!opening.existing) crashPoint('gate-stored');
  // Stored meanwhile by another invocation with this token: it is that gate.
  if (opening.existing)
    return resumeOpening(req, opening.item, { identity, journal, approvals, reason }, deps);
  const approvalId = opening.linkId;
  const notice = noticeOf(req, approvalId, undefined, {
    submittedBy: created?.submitted_by,
    stepGate,
    revision: approved,
    abortRollsBack,
    recovery,
    expiresAt: opening.item.expiresAt,
  });
  await announceOpening(req, opening.item, notice, { identity, journal, approvals, reason, read }, deps);
  return { approvalId };
}

/** What announcing a gate's opening needs beside the request. */
interface OpeningContext {
  readonly identity: ReturnType<typeof eventIdentity>;
  readonly journal: Journal;
  readonly approvals: Approvals;
  /** An escalation's failure, in one line. */
  readonly reason: string;
  /** A human step's inputs, as the person reads them. */
  readonly read?: Record<string, Record<string, unknown> | undefined>;
}

/**
 * A stored gate's opening event (what it asks, of whom, until when and through which link), then,
 * unless a later version closed it, its notice: each once (Approvals.announce).
 */
async function announceOpening(
  req: GateRequest,
  gate: GateItem,
  notice: ApprovalNotice,
  ctx: OpeningContext,
  deps: GateDeps,
): Promise<void> {
  const opened = gateOpened(notice);
  const graph = req.kind === 'plan' ? req.summary?.graph : undefined;
  const { identity, journal, approvals } = ctx;
  await approvals.announce(gate, {
    journal: async () => {
      if (req.kind === 'escalation') {
        await journal.append({
          ...identity,
          event: 'RECOVERY_ESCALATION',
          details: { reason: ctx.reason, opened },
        });
      } else if (req.kind === 'human') {
        await journal.append({
          ...identity,
          event: 'TASK_STARTED',
          details: {
            attempt: req.attempt ?? 1,
            progress: `${progressLabel(req.index ?? 1, req.total ?? 1)} ▶ ${req.description ?? req.stepId} (waiting for a person)`,
            // Seed 003's handoff.md of the step: what the person reads.
            ...(req.human ? { handoff: { task: req.human.instructions, inputs: ctx.read ?? {} } } : {}),
            opened,
          },
        });
      } else {
        await journal.append({
          ...identity,
          event: 'GATE_APPROVAL_REQUESTED',
          details: {
            plan_id: req.plan.id,
            gate: req.kind,
            round: req.round,
            // Once per execution: what a later version's gate compares itself with.
            ...(graph && req.round === 1 ? { graph } : {}),
            opened,
          },
        });
      }
    },
    notify: async () => {
      // One version at a time: a later version gated first closes this gate at once; nobody is asked.
      if (
        req.kind === 'plan' &&
        (await supersedeEarlierVersions(
          { executionId: req.executionId, plan: req.plan, linkId: notice.approvalId },
          { approvals, dynamo: deps.dynamo, tables: deps.tables, signer: new LinkSigner(deps.signingKey) },
        ))
      )
        return;
      await deps.notify(notice);
    },
  });
}

/**
 * A gate the gate Lambda was invoked for again with the same task token (Lambda or Step Functions
 * retried it): the same gate, its link handed back; what its first invocation did not finish of
 * its opening (the event, the notice) is done now, and nothing twice.
 */
async function resumeOpening(
  req: GateRequest,
  gate: GateItem,
  ctx: OpeningContext,
  deps: GateDeps,
): Promise<{ approvalId: string }> {
  const approvalId = ctx.approvals.linkOf(gate);
  if (gate.announced === 'notified') return { approvalId };
  if (req.ladder?.stage === 'escalate' && (req.kind === 'plan' || req.kind === 'step')) {
    const rung = { ...req, kind: req.kind, ladder: req.ladder };
    await announceEscalation(
      rung,
      gate,
      noticeOfItem(gate, approvalId, 'escalation'),
      await ladderDepsOf(req, deps, ctx.approvals, ctx.journal),
    );
    return { approvalId };
  }
  // What the first invocation showed: the person's task as resolved then, the values it read.
  const human = req.human && gate.human ? { ...req.human, instructions: gate.human.instructions } : req.human;
  const read = req.kind === 'human' && human ? await outputsOf(deps.dynamo, human.inputs) : {};
  await announceOpening(
    { ...req, ...(human ? { human } : {}) },
    gate,
    noticeOfItem(gate, approvalId, undefined),
    { ...ctx, read },
    deps,
  );
  return { approvalId };
}

/** What the timeout ladder's rungs need. */
async function ladderDepsOf(
  req: GateRequest,
  deps: GateDeps,
  approvals: Approvals,
  journal: Journal,
): Promise<LadderDeps> {
  return {
    approvals,
    dynamo: deps.dynamo,
    tables: deps.tables,
    sfn: deps.sfn,
    journal,
    signer: new LinkSigner(deps.signingKey),
    notify: deps.notify,
    submittedBy: await submitterOf(req.executionId, deps),
    onDecided: deps.onDecided,
    onEscalated: deps.onEscalated,
  };
}

/** Who submitted the plan of an execution, as its PLAN_CREATED says (the Plans API records it). */
export async function submitterOf(
  executionId: string,
  deps: Pick<HarnessDeps, 'dynamo' | 'tables'>,
): Promise<string | undefined> {
  return (await planCreated(executionId, deps))?.submitted_by;
}

/** An execution's PLAN_CREATED details, when its first event is one (launchPlan writes it). */
async function planCreated(
  executionId: string,
  deps: Pick<HarnessDeps, 'dynamo' | 'tables'>,
): Promise<z.infer<(typeof EVENT_DETAILS)['PLAN_CREATED']> | undefined> {
  const first = await firstEvent(deps.dynamo, deps.tables.events, executionId);
  if (first?.event !== 'PLAN_CREATED') return undefined;
  const details = EVENT_DETAILS.PLAN_CREATED.safeParse(first.details);
  return details.success ? details.data : undefined;
}

/**
 * What changed since the latest earlier version of the plan that was gated (its first plan
 * gate's GATE_APPROVAL_REQUESTED holds its graph): read newest first through the events table's
 * byPlan index, stopping at the version just before this one; the values of both are read from
 * their executions' PLAN_CREATED. Undefined when none was gated.
 */
export async function changesSincePrevious(
  plan: PlanIdentity,
  graph: readonly StepSketch[],
  deps: Pick<HarnessDeps, 'dynamo' | 'tables'>,
  /** This version's steps as its PLAN_CREATED recorded them: changed values are then shown old → new. */
  recorded?: RecordedSteps,
): Promise<PlanChanges | undefined> {
  let previous:
    | { since: PlanChanges['since']; graph: readonly StepSketch[]; executionId: string }
    | undefined;
  for await (const item of queryItems(deps.dynamo, {
    TableName: deps.tables.events,
    IndexName: 'byPlan',
    KeyConditionExpression: 'planId = :plan',
    FilterExpression: '#event = :requested AND planVersion < :version',
    ExpressionAttributeNames: { '#event': 'event' },
    ExpressionAttributeValues: {
      ':plan': plan.id,
      ':requested': 'GATE_APPROVAL_REQUESTED',
      ':version': plan.version,
    },
    ScanIndexForward: false,
  })) {
    const record = fromItem(item);
    const details = EVENT_DETAILS.GATE_APPROVAL_REQUESTED.safeParse(record.details);
    if (!details.success || !details.data.graph) continue;
    if (!previous || record.planVersion > previous.since.version)
      previous = {
        since: { version: record.planVersion, digest: record.planDigest },
        graph: details.data.graph,
        executionId: record.executionId,
      };
    // No version between it and this one can turn up further back.
    if (previous.since.version === plan.version - 1) break;
  }
  if (!previous) return undefined;
  const before = recorded ? (await planCreated(previous.executionId, deps))?.steps : undefined;
  return diffPlanGraphs(previous.since, previous.graph, graph, {
    previous: before,
    current: recorded,
  });
}

function requireHuman(req: GateRequest): NonNullable<GateRequest['human']> {
  if (!req.human || !req.stepId)
    throw new NotConfiguredError('a human-step gate needs the step and its task', { location: 'human' });
  return req.human;
}

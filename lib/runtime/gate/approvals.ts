/**
 * Approvals: the gate's task token stays in the gates table; a person gets only an opaque,
 * HMAC-signed, expiring, single-use approval id. Answering verifies the id, the plan digest and
 * the approval policy, wins a conditional update (so of two concurrent clicks exactly one
 * counts), and only then calls SendTaskSuccess and writes the decision event.
 *
 * Link ids (shared and recipient-bound) are signed and checked by {@link LinkSigner} in links.ts.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SendTaskFailureCommand, SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { answerRefusal, selfApprovalRefusal } from '../../plan/approval-block.ts';
import { canonicalJson } from '../../plan/digest.ts';
import { outputShapeMismatch } from '../../plan/output-shapes.ts';
import { principalName, samePrincipal } from '../../plan/principal-names.ts';
import { decisionDetails } from '../../policy/decisions.ts';
import { type PolicyDecision, type PolicyPrincipal, PolicySet } from '../../policy/policy-set.ts';
import { type Journal, readEvents } from '../journal/journal.ts';
import { StoredPlanMismatchError } from '../journal/stored-plans.ts';
import { DEFAULT_TABLE_NAMES } from '../journal/tables.ts';
import {
  type AbortRollback,
  type ApprovalDecision,
  type ApprovalNotice,
  decisionSchemaOf,
  ERROR_NAMES,
  type FailureCause,
  type GateApprovers,
  type GateDecision,
  type GateRequest,
  type GateRevision,
  type HumanDecision,
  type PlanFacts,
  type PolicyDecisionDetails,
  type RecoveryAdvice,
  type RunnerResult,
  type StepGateView,
} from '../payloads/index.ts';
import { sandboxSentence } from '../sandbox/sandbox.ts';
import { Redactor } from '../secrets/redact.ts';
import { crashPoint } from '../shared/crash-points.ts';
import { ExecutionEndedError } from '../shared/errors.ts';
import { sha256Hex } from '../shared/hash.ts';
import { progressLabel } from '../shared/progress.ts';
import { definitionReaderOf, planCreatedOf, runningDefinitionHash } from '../steps/integrity.ts';
import { inlineOrStored, storeRunResult } from '../steps/outputs-table.ts';
import { recordedPlan } from '../steps/run-policy.ts';
import { DECISION_EVENTS, gateEventIdentity, recordDecision, recordVote } from './decision-events.ts';
import {
  contentDigest,
  type DecisionListener,
  type GateItem,
  type GateView,
  gatesOfExecution,
  gateView,
  type SupersededBy,
} from './gate-item.ts';
import { ApprovalError, GateSupersededError, LinkSigner, parseLinkId } from './links.ts';
import {
  type ModifiableContent,
  ModificationRefusedError,
  modificationProblems,
  policyProblems,
  revisedCalls,
  revisedFacts,
  revisionPolicyRequest,
} from './modification-check.ts';
import { noticeOfItem } from './notice.ts';
import type { PlanChanges } from './plan-diff.ts';
import { notApprovableReason, shownOfGate } from './shown-gate.ts';
import { gatePages, SeenPages } from './view-pages.ts';
import { answerRequest, completionRequest } from './vote-policy.ts';
import { wholeGateOf } from './whole-view.ts';

export type { GateApprovers } from '../payloads/index.ts';

/** How long a decider has to tell the machine before another answer may finish for it. */
const DELIVERY_LEASE_MS = 60_000;

/** Who rejects a gate a later version of its plan superseded, in the decision its execution gets. */
export const SUPERSEDE_DECIDER = 'plangate-supersede';

export interface ApprovalsProps {
  readonly dynamo: DynamoDBDocumentClient;
  readonly gatesTable: string;
  readonly sfn: SFNClient;
  readonly journal: Journal;
  /** The HMAC key (at least 32 bytes); from Secrets Manager or the environment, never from a plan. */
  readonly signingKey: string | Buffer;
  /**
   * Where a human step's large reported outputs are stored (see outputs-table.ts).
   * @default DEFAULT_TABLE_NAMES.outputs
   */
  readonly outputsTable?: string;
  /**
   * The plans submitted, whole (stored-plans.ts): an approval of a gate whose stored view hides a
   * command is taken only from a reader shown every page of the whole view (view-pages.ts).
   * @default DEFAULT_TABLE_NAMES.plans
   */
  readonly plansTable?: string;
  /** @default () => new Date() */
  readonly clock?: () => Date;
  /** The platform's policy, asked about every answer and every gate's completion. @default PolicySet.fromEnvironment() */
  readonly policy?: PolicySet;
  /**
   * The events table, where the plan's facts for policy are read (its PLAN_CREATED).
   * @default - the plan's facts are unknown to policy (nothing destructive, no tools)
   */
  readonly eventsTable?: string;
  /**
   * Told of each final decision after it is recorded; its failure never undoes or fails the answer.
   * @default - nobody is told
   */
  readonly onDecided?: DecisionListener;
  /**
   * Tells the gate's approvers of a new revision (same link, stage `revision`); its failure
   * never undoes or fails the answer.
   * @default - nobody is told
   */
  readonly notify?: (notice: ApprovalNotice) => Promise<void>;
}

/** The pin of an execution's definition, as the plan gate's approval binds it. */
async function runningDefinitionOf(
  props: Pick<ApprovalsProps, 'dynamo' | 'eventsTable' | 'sfn'>,
  executionId: string,
): Promise<string | undefined> {
  const pin = (await planCreatedOf(props.dynamo, props.eventsTable, executionId))?.integrity;
  if (!pin) return undefined;
  const found = await runningDefinitionHash(definitionReaderOf(props.sfn), executionId, pin.machines);
  return found.startsWith('sha256:') ? found : undefined;
}

/** A link id whose signature, expiry and single use were checked, with the gate it opens. */
interface VerifiedLink {
  readonly item: GateItem;
  /** Set when the id is bound to one emailed recipient. */
  readonly recipient?: string;
}

/** An approval from the page (it sends the pages it showed) before it showed every page of a gate too large for one. */
const UNSEEN_PAGES =
  "this gate's approval page has not shown you every page of the plan (or the list of pages you were shown is not this gate's). Open each page with Next page, then approve on the last one";

export class Approvals {
  private readonly signer: LinkSigner;

  constructor(private readonly props: ApprovalsProps) {
    this.signer = new LinkSigner(props.signingKey);
  }

  /** An approved plan gate binds the definition the engine holds now (steps/integrity.ts compares it with the pin). */
  private definitionApproved(item: GateItem, decision: GateDecision): Promise<string | undefined> {
    const approved = decision.decision === 'APPROVE' || decision.decision === 'APPROVE_WITH_MODIFICATIONS';
    return item.kind === 'plan' && approved
      ? runningDefinitionOf(this.props, item.executionId)
      : Promise.resolve(undefined);
  }

  /**
   * Stores the gate (with its token and the plan's approval policy) and returns the approval id
   * for links and buttons (the shared link id) and the gate as stored. The gate is keyed by its
   * task token ({@link gateIdOf}): when a gate was already stored for it (a retried invocation of
   * the gate Lambda), that gate is returned, `existing`, and nothing is stored. `submittedBy`, when known, may answer but never approve; `changes`
   * (plan gate) are shown beside the plan; `stepGate` (step gate) is what the step's approvers see.
   */
  async create(
    req: GateRequest,
    {
      submittedBy,
      changes,
      stepGate,
      approved,
      abortRollsBack,
      recovery,
    }: {
      submittedBy?: string;
      changes?: PlanChanges;
      stepGate?: StepGateView;
      /** Step gate: the revision the plan gate approved; the gate shows and binds it. */
      approved?: GateRevision;
      abortRollsBack?: readonly AbortRollback[];
      /** Escalation: what the model suggests, shown beside the person's choices. */
      recovery?: RecoveryAdvice;
    } = {},
  ): Promise<{ readonly linkId: string; readonly item: GateItem; readonly existing: boolean }> {
    const policy: GateApprovers = req.approval;
    const now = this.now();
    const expires = new Date(now.getTime() + req.timeoutSeconds * 1000);
    const approvalId = this.gateIdOf(req.taskToken);
    const item: GateItem = {
      approvalId,
      taskToken: req.taskToken,
      kind: req.kind,
      executionId: req.executionId,
      planId: req.plan.id,
      planVersion: req.plan.version,
      planDigest: req.plan.digest,
      ...(req.stepId ? { stepId: req.stepId } : {}),
      round: req.round,
      ...(req.description !== undefined ? { description: req.description } : {}),
      ...(req.summary ? { summary: req.summary } : {}),
      ...(changes ? { changes } : {}),
      ...(stepGate ? { stepGate } : {}),
      ...(approved ? { approved, revision: approved } : {}),
      ...(req.question ? { question: req.question } : {}),
      ...(req.failure ? { failure: req.failure } : {}),
      ...(abortRollsBack ? { abortRollsBack: [...abortRollsBack] } : {}),
      ...(recovery ? { recovery } : {}),
      ...(req.kind === 'human' && req.human
        ? {
            human: {
              instructions: req.human.instructions,
              outputs: [...req.human.outputs],
              ...(req.human.outputShapes ? { outputShapes: req.human.outputShapes } : {}),
              attempt: req.attempt ?? 1,
              inlineOutputLimitBytes: req.human.inlineOutputLimitBytes,
              ...(req.index !== undefined && req.total !== undefined
                ? { progress: progressLabel(req.index, req.total) }
                : {}),
            },
          }
        : {}),
      createdAt: now.toISOString(),
      expiresAt: expires.toISOString(),
      expiresAtEpoch: Math.ceil(expires.getTime() / 1000),
      status: 'pending',
      version: 0,
      policy: {
        approvers: [...policy.approvers],
        forbiddenApprovers: [...policy.forbiddenApprovers],
        quorum: policy.quorum,
      },
      votes: [],
      ...(submittedBy !== undefined ? { submittedBy } : {}),
      runsAs: sandboxSentence(),
    };
    try {
      await this.props.dynamo.send(
        new PutCommand({
          TableName: this.props.gatesTable,
          Item: item,
          ConditionExpression: 'attribute_not_exists(approvalId)',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const stored = await this.openedBy(req.taskToken);
      if (!stored) throw error;
      return { linkId: this.linkOf(stored), item: stored, existing: true };
    }
    return { linkId: this.linkOf(item), item, existing: false };
  }

  /**
   * A gate's id, from its task token: an HMAC under the signing key, so one token opens one gate
   * (a retried invocation finds it) and the id, which links carry, reveals nothing of the token.
   */
  private gateIdOf(taskToken: string): string {
    return createHmac('sha256', this.props.signingKey)
      .update(`gate\0${taskToken}`)
      .digest('base64url')
      .slice(0, 22);
  }

  /** The gate already opened for this task token, if there is one (read consistently). */
  async openedBy(taskToken: string): Promise<GateItem | undefined> {
    const out = await this.props.dynamo.send(
      new GetCommand({
        TableName: this.props.gatesTable,
        Key: { approvalId: this.gateIdOf(taskToken) },
        ConsistentRead: true,
      }),
    );
    return out.Item as GateItem | undefined;
  }

  /** The shared link id of a stored gate. */
  linkOf(item: Pick<GateItem, 'approvalId' | 'expiresAtEpoch' | 'planDigest'>): string {
    return this.signer.shared(item.approvalId, item.expiresAtEpoch, item.planDigest);
  }

  /**
   * What follows storing a gate, each step once however often the gate Lambda is invoked for it:
   * its opening event (`journal`), then its notice (`notify`, which may find nobody is to be asked:
   * a later version closed the gate), each marked on the gate (`announced`) once done.
   */
  async announce(
    gate: Pick<GateItem, 'approvalId' | 'announced'>,
    steps: { readonly journal: () => Promise<void>; readonly notify: () => Promise<void> },
  ): Promise<void> {
    if (gate.announced === undefined) {
      await steps.journal();
      await this.markAnnounced(gate.approvalId, 'journaled');
    }
    if (gate.announced !== 'notified') {
      await steps.notify();
      await this.markAnnounced(gate.approvalId, 'notified');
    }
  }

  private async markAnnounced(
    approvalId: string,
    announced: NonNullable<GateItem['announced']>,
  ): Promise<void> {
    // Not the version: an answer given meanwhile is not refused for it.
    await this.props.dynamo.send(
      new UpdateCommand({
        TableName: this.props.gatesTable,
        Key: { approvalId },
        UpdateExpression: 'SET announced = :announced',
        ConditionExpression: 'attribute_exists(approvalId)',
        ExpressionAttributeValues: { ':announced': announced },
      }),
    );
  }

  /**
   * The gates of an execution still waiting for an answer, oldest first, each with the link id it
   * was handed out with: a session that re-attaches after a crash can ask them again. Only those
   * whose link has not expired on this clock, unless `anyExpiry`: a process whose clock is not the
   * run's (`plangate complete`, started after a wall-clock step) finds the gate, and the run's API
   * decides on its own clock whether it can still be answered.
   */
  async pending(
    executionId: string,
    { anyExpiry = false }: { readonly anyExpiry?: boolean } = {},
  ): Promise<{ readonly linkId: string; readonly gate: GateView }[]> {
    const waiting: { linkId: string; gate: GateView }[] = [];
    for await (const item of gatesOfExecution(this.props.dynamo, this.props.gatesTable, executionId)) {
      if (item.status !== 'pending' || (!anyExpiry && this.now().getTime() / 1000 > item.expiresAtEpoch))
        continue;
      waiting.push({
        linkId: this.signer.shared(item.approvalId, item.expiresAtEpoch, item.planDigest),
        gate: gateView(item),
      });
    }
    return waiting;
  }

  /** What an approval page may show about a link (never the token). Throws ApprovalError when the link is not answerable. */
  async describe(linkId: string): Promise<GateView> {
    const { item } = await this.verify(linkId);
    this.checkOpen(item);
    return gateView(item);
  }

  /**
   * The gate a genuine link opens, whatever its state: what an answer through it is read against
   * before it is given (answering then refuses, and journals, an answer to a gate that no longer
   * waits). Throws ApprovalError for a bad link.
   */
  async gateOf(linkId: string): Promise<GateView> {
    return gateView((await this.verify(linkId)).item);
  }

  /**
   * Answers a gate. `digest` is the content digest the approver saw (the plan's, or its latest
   * revision's): an approval binds to it.
   * Returns the final decision once the gate is decided, `pending` while a quorum is still short, or
   * `modified` when an approval with modifications made a new revision (the quorum starts again).
   */
  async answer(
    linkId: string,
    answer: {
      by: string;
      digest: string;
      decision: unknown;
      /** The groups a verified request proves the approver is in (JWT claims); policy adds the groups file's. */
      groups?: readonly string[];
      /**
       * The person behind a verified token (`<iss>#<sub>`): one subject votes once, whichever email
       * it names. @default - the name alone tells persons apart
       */
      subject?: string;
      /** A Slack click shows its outcome in its own message: the listener is not told again. */
      via?: 'slack';
      /** The approval page's signed list of pages shown (view-pages.ts). */
      seen?: string;
    },
  ): Promise<AnswerOutcome> {
    return this.answerAs(linkId, () => answer.by, answer);
  }

  /**
   * Answers through a recipient-bound link: the approver is the recipient the link's signature
   * binds (whoever holds that inbox), checked against the policy like any approver. A shared
   * link is refused (`forbidden`): its holder must sign in instead.
   */
  async answerAsRecipient(
    linkId: string,
    answer: { digest: string; decision: unknown; seen?: string },
  ): Promise<AnswerOutcome> {
    return this.answerAs(
      linkId,
      (link) => {
        if (link.recipient === undefined)
          throw new ApprovalError('forbidden', 'this link is not addressed to one person: sign in to answer');
        return link.recipient;
      },
      answer,
    );
  }

  private async answerAs(
    linkId: string,
    approverOf: (link: VerifiedLink) => string,
    answer: {
      digest: string;
      decision: unknown;
      groups?: readonly string[];
      subject?: string;
      via?: 'slack';
      seen?: string;
    },
  ): Promise<AnswerOutcome> {
    const policy = this.props.policy ?? (await PolicySet.fromEnvironment());
    let recorded: Awaited<ReturnType<typeof recordedPlan>> | undefined;
    for (;;) {
      const link = await this.verify(linkId);
      const item = link.item;
      // A decision a crash cut short is finished first; this answer is then told it came late.
      if (await this.deliverDecided(item)) continue;
      // Only plan and step gates vote (quorum); an escalation or a human step has one answer.
      const voting = item.kind === 'plan' || item.kind === 'step';
      let by: string | undefined;
      let decision: GateDecision;
      let tally: Tally;
      /**
       * A gate policy kept waiting although its plan's quorum was met, or let complete by an
       * override or despite advisory rules: journaled once the vote counts.
       */
      let heldOpen: PolicyDecisionDetails | undefined;
      const at = this.now().toISOString();
      try {
        // One spelling of each person from here on: the checks, the votes and the journal.
        by = principalName(approverOf(link));
        this.checkOpen(item);
        checkDigest(item, answer.digest);
        this.checkApprover(item, by, answer.subject);
        decision = await this.parseDecision(item, answer.decision, by, answer.seen);
        const approves =
          decision.decision === 'APPROVE' || decision.decision === 'APPROVE_WITH_MODIFICATIONS';
        const own = voting && approves ? selfApprovalRefusal(item.submittedBy, by) : undefined;
        if (own) throw new ApprovalError('forbidden', own);
        recorded ??= await recordedPlan(this.props.dynamo, this.props.eventsTable, item.executionId);
        if (decision.decision === 'APPROVE_WITH_MODIFICATIONS')
          await this.checkModification(item, decision, recorded, policy);
        // The gate's current content is what its completion is judged on: a revision's calls included.
        const facts = item.revision
          ? revisedFacts(
              recorded.facts,
              revisedCalls(modifiable(item, recorded.steps), item.revision.argOverrides),
            )
          : recorded.facts;
        const voter = { name: by, groups: [...(answer.groups ?? [])] };
        await this.authorizeAnswer(item, decision, voter, facts, policy);
        tally = voting
          ? countVote(item, decision as ApprovalDecision, by, at, voter.groups, answer.subject)
          : { outcome: 'decided', votes: [], decision };
        if (voting && tally.outcome === 'decided' && decision.decision === 'APPROVE') {
          const completion = completionRequest(item, tally.votes, voter, facts, policy);
          const decided = policy.authorize(completion);
          const released =
            decided.decision === 'deny' && decision.override
              ? overridden(policy, decided, voter, decision.override.reason)
              : decided;
          if (released.decision === 'deny') {
            heldOpen = decisionDetails(completion, decided, 'the gate waits for more approvals');
            tally = { outcome: 'pending', votes: [...tally.votes] };
          } else if (released.overridden || released.advisory?.length)
            heldOpen = decisionDetails(
              completion,
              released,
              released.overridden
                ? 'the gate is complete: its policy was overridden'
                : 'the gate is complete',
            );
        }
      } catch (error) {
        // The link is genuine, so the gate is known: its journal keeps the refusal.
        if (error instanceof ApprovalError) await this.recordRefusal(item, error, by);
        throw error;
      }
      try {
        await this.props.dynamo.send(
          new UpdateCommand({
            TableName: this.props.gatesTable,
            Key: { approvalId: item.approvalId },
            ConditionExpression: '#status = :pending AND #version = :version',
            UpdateExpression:
              tally.outcome === 'decided'
                ? // The token stays until the machine is told (undelivered): a crash in between leaves a
                  // decision that deliverDecided finishes, never a gate nobody can answer.
                  'SET #status = :answered, #version = :next, votes = :votes, decision = :decision, decidedAt = :at, undelivered = :undelivered, deliveringUntil = :lease'
                : tally.outcome === 'revised'
                  ? 'SET #version = :next, votes = :votes, revision = :revision'
                  : 'SET #version = :next, votes = :votes',
            ExpressionAttributeNames: { '#status': 'status', '#version': 'version' },
            ExpressionAttributeValues: {
              ':pending': 'pending',
              ':version': item.version,
              ':next': item.version + 1,
              ':votes': tally.outcome === 'revised' ? [] : tally.votes,
              ...(tally.outcome === 'decided'
                ? {
                    ':answered': 'answered',
                    ':decision': tally.decision,
                    ':at': at,
                    ':undelivered': true,
                    ':lease': this.now().getTime() + DELIVERY_LEASE_MS,
                  }
                : {}),
              ...(tally.outcome === 'revised' ? { ':revision': tally.revision } : {}),
            },
          }),
        );
      } catch (error) {
        // Someone else answered or voted first: look again (a decided gate then refuses this answer).
        if (error instanceof ConditionalCheckFailedException) continue;
        throw error;
      }
      // The update above won: the vote counts (or made a revision). Record it, and a final
      // decision, before the machine moves on, so nothing the next states write comes first.
      if (tally.outcome === 'decided') crashPoint('gate-decided');
      if (voting) await recordVote(this.props.journal, item, decision as ApprovalDecision, by);
      if (heldOpen)
        await this.props.journal.append({
          ...gateEventIdentity(item),
          event: 'POLICY_DECISION',
          details: heldOpen,
        });
      if (tally.outcome === 'pending')
        return {
          status: 'pending',
          votes: tally.votes.length,
          ...(heldOpen?.decision === 'deny' && heldOpen.reason ? { held: heldOpen.reason } : {}),
        };
      if (tally.outcome === 'revised') {
        await this.revised(item, tally.revision);
        return { status: 'modified', revision: tally.revision.number, digest: tally.revision.digest };
      }
      const final = tally.decision;
      await recordDecision(
        this.props.journal,
        item,
        final,
        by,
        tally.votes,
        await this.definitionApproved(item, final),
      );
      crashPoint('decision-journaled');
      if (item.kind === 'human') crashPoint('human-answered');
      await this.handOn(item, final);
      if (this.props.onDecided && answer.via !== 'slack')
        await this.props
          .onDecided({ ...gateView(item), status: 'answered', decision: final, decidedAt: at }, final)
          .catch(() => {});
      return { status: 'decided', decision: final };
    }
  }

  /**
   * Tells the machine a recorded decision (a human step's outcome, or the decision as the gate
   * task's output), then forgets the token. A token the machine no longer waits on (its wait
   * timed out: the timeout ladder hands the stored decision on; or a decision told before a crash)
   * is not an error.
   */
  private async handOn(item: GateItem, final: GateDecision): Promise<void> {
    const voting = item.kind === 'plan' || item.kind === 'step';
    const gone = (error: unknown): void => {
      const name = error instanceof Error ? error.name : '';
      // Escalation and human gates have no ladder to hand a timed-out decision on.
      if (!(name === 'TaskDoesNotExist' || name === 'InvalidToken' || (voting && name === 'TaskTimedOut')))
        throw error;
    };
    if (item.kind === 'human') await this.completeHumanTask(item, final as HumanDecision).catch(gone);
    else
      await this.props.sfn
        .send(
          new SendTaskSuccessCommand({ taskToken: item.taskToken as string, output: JSON.stringify(final) }),
        )
        .catch(gone);
    await this.props.dynamo.send(
      new UpdateCommand({
        TableName: this.props.gatesTable,
        Key: { approvalId: item.approvalId },
        ConditionExpression: '#status = :answered',
        UpdateExpression: 'REMOVE taskToken, undelivered, deliveringUntil',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':answered': 'answered' },
      }),
    );
  }

  /**
   * Finishes a decision a crash cut short (the gate answered, the machine not told): the votes and
   * the decision the journal lacks are journaled, then the machine is told. Idempotent: the
   * journal is read first, and a token already used is not an error. The decider holds a lease
   * while it delivers: another answer waits it out (its process may only be slow); a restart
   * (`takeOver`: every process that held the store is gone) does not. Returns whether it did.
   */
  async deliverDecided(item: GateItem, { takeOver = false } = {}): Promise<boolean> {
    if (item.status !== 'answered' || item.undelivered !== true || item.decision === undefined) return false;
    const now = this.now().getTime();
    if (!takeOver && (item.deliveringUntil ?? 0) > now) return false;
    try {
      // One finisher: the claim holds only against the lease as read.
      await this.props.dynamo.send(
        new UpdateCommand({
          TableName: this.props.gatesTable,
          Key: { approvalId: item.approvalId },
          ConditionExpression:
            item.deliveringUntil === undefined
              ? 'undelivered = :true AND attribute_not_exists(deliveringUntil)'
              : 'undelivered = :true AND deliveringUntil = :seen',
          UpdateExpression: 'SET deliveringUntil = :lease',
          ExpressionAttributeValues: {
            ':true': true,
            ':lease': now + DELIVERY_LEASE_MS,
            ...(item.deliveringUntil === undefined ? {} : { ':seen': item.deliveringUntil }),
          },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
    const events = await readEvents(
      this.props.dynamo,
      this.props.eventsTable ?? DEFAULT_TABLE_NAMES.events,
      item.executionId,
    );
    // What the journal holds about this gate since it opened (its opening event names its link).
    const opened = events.findLastIndex(
      (e) => (e.details.opened as { link_id?: string } | undefined)?.link_id === item.approvalId,
    );
    const mine = events
      .slice(opened + 1)
      .filter((e) => e.task_id === item.stepId || (e.task_id === undefined && item.stepId === undefined));
    const final = item.decision;
    const voting = item.kind === 'plan' || item.kind === 'step';
    if (voting)
      for (const vote of item.votes)
        if (
          !mine.some(
            (e) => e.event === 'GATE_VOTE' && e.details.voter === vote.by && e.details.digest === vote.digest,
          )
        )
          await recordVote(this.props.journal, item, vote.decision, vote.by);
    if (!mine.some((e) => DECISION_EVENTS.has(e.event)))
      await recordDecision(
        this.props.journal,
        item,
        final,
        final.by ?? item.votes.at(-1)?.by ?? '',
        item.votes,
        await this.definitionApproved(item, final),
      );
    await this.handOn(item, final);
    await this.props.journal.append({
      ...gateEventIdentity(item),
      event: 'GATE_DECISION_RECOVERED',
      details: { gate: item.kind, link_id: item.approvalId, decision: final.decision },
    });
    return true;
  }

  /** Every decision a crash cut short, finished (deliverDecided): what a restart does first. */
  async deliverAllDecided(): Promise<number> {
    let delivered = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.props.dynamo.send(
        new ScanCommand({
          TableName: this.props.gatesTable,
          FilterExpression: 'undelivered = :true',
          ExpressionAttributeValues: { ':true': true },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of (page.Items ?? []) as GateItem[])
        if (await this.deliverDecided(item, { takeOver: true })) delivered++;
      start = page.LastEvaluatedKey;
    } while (start);
    return delivered;
  }

  /**
   * A modification is a plan: applied to the gate's content (after its revision so far), it is
   * validated and analysed as a submitted plan is, and the platform's policy must accept the plan
   * it makes as it accepted the submission (a denial is journaled). Every problem found refuses it
   * at once, located; nothing changes.
   */
  private async checkModification(
    item: GateItem,
    decision: Extract<ApprovalDecision, { decision: 'APPROVE_WITH_MODIFICATIONS' }>,
    recorded: Awaited<ReturnType<typeof recordedPlan>>,
    policy: PolicySet,
  ): Promise<void> {
    const content = modifiable(item, recorded.steps);
    if (content.steps.length === 0 && Object.keys(decision.argOverrides).length > 0)
      throw new ApprovalError(
        'invalid',
        "decision.argOverrides: this gate does not hold its steps' calls, so a modification cannot be checked; reject and submit a new version of the plan instead",
      );
    const problems = await modificationProblems(content, decision);
    if (problems.length === 0) {
      const argOverrides = { ...item.revision?.argOverrides };
      for (const [id, args] of Object.entries(decision.argOverrides))
        argOverrides[id] = { ...argOverrides[id], ...args };
      const request = revisionPolicyRequest(
        { id: item.planId, version: item.planVersion, digest: contentDigest(item) },
        recorded.facts,
        recorded.submitter,
        revisedCalls(content, argOverrides),
        recorded.solo,
      );
      const judged = policyProblems(request, policy, Object.keys(decision.argOverrides));
      if (judged.problems.length > 0)
        await this.props.journal.append({
          ...gateEventIdentity(item),
          event: 'POLICY_DECISION',
          details: decisionDetails(request, judged.decided, 'the modification was refused'),
        });
      problems.push(...judged.problems);
    }
    if (problems.length > 0) throw new ModificationRefusedError(problems);
  }

  /**
   * A modification made a new revision: GATE_PLAN_MODIFIED, then the gate's approvers are asked
   * again (same link) about the revision. Telling them never undoes or fails the answer.
   */
  private async revised(item: GateItem, revision: GateRevision): Promise<void> {
    await this.props.journal.append({
      ...gateEventIdentity(item),
      event: 'GATE_PLAN_MODIFIED',
      details: {
        gate: item.kind,
        by: revision.by,
        from: contentDigest(item),
        to: revision.digest,
        revision: revision.number,
        skipSteps: revision.skipSteps,
        argOverrides: revision.argOverrides,
      },
    });
    await this.props
      .notify?.(
        noticeOfItem(
          { ...item, revision, votes: [] },
          this.signer.shared(item.approvalId, item.expiresAtEpoch, item.planDigest),
          'revision',
        ),
      )
      .catch(() => {});
  }

  /**
   * A human step's answer becomes the step's runner result (DONE: the reported outputs, then the
   * contract checker decides) or its failure (FAILED: `Plangate.Unrecoverable`, escalated).
   */
  private async completeHumanTask(item: GateItem, decision: HumanDecision): Promise<void> {
    const taskToken = item.taskToken as string;
    const human = item.human as NonNullable<GateItem['human']>;
    if (decision.decision === 'FAILED') {
      const cause: FailureCause = {
        message: new Redactor().text(`reported failed by a person: ${decision.reason}`),
        failureClass: 'unrecoverable',
      };
      await this.props.sfn.send(
        new SendTaskFailureCommand({
          taskToken,
          error: ERROR_NAMES.unrecoverable,
          cause: JSON.stringify(cause),
        }),
      );
      return;
    }
    const stepId = item.stepId as string;
    const output = new Redactor().value(decision.outputs);
    const outputs = {
      dynamo: this.props.dynamo,
      tables: { outputs: this.props.outputsTable ?? DEFAULT_TABLE_NAMES.outputs },
    };
    const result: RunnerResult = {
      stepId,
      status: 'succeeded',
      attempt: human.attempt,
      durationMs: Math.max(0, this.now().getTime() - Date.parse(item.createdAt)),
      ...(decision.by !== undefined ? { answeredBy: decision.by } : {}),
      ...(await inlineOrStored(
        output,
        { executionId: item.executionId, stepId, inlineOutputLimitBytes: human.inlineOutputLimitBytes },
        outputs,
      )),
    };
    // Kept whole as the attempt's before the engine is told, as a runner's result is: a retry of the
    // step after a crash answers it (earlierResult) instead of asking the person again.
    await storeRunResult(item.executionId, { ...result, stored: true }, outputs);
    await this.props.sfn.send(
      new SendTaskSuccessCommand({ taskToken, output: JSON.stringify({ ...result, stored: true }) }),
    );
  }

  /**
   * Asks policy whether `voter` may give `decision` at this gate; a denial is journaled
   * (POLICY_DECISION, naming the policies) and refused (`forbidden`), which journals the refusal.
   */
  private async authorizeAnswer(
    item: GateItem,
    decision: GateDecision,
    voter: PolicyPrincipal,
    facts: PlanFacts,
    policy: PolicySet,
  ): Promise<void> {
    const request = answerRequest(item, decision, voter, facts);
    const asked = policy.authorize(request);
    const decided =
      asked.decision === 'deny' && decision.decision === 'APPROVE' && decision.override
        ? overridden(policy, asked, voter, decision.override.reason)
        : asked;
    if (decided.decision === 'allow') {
      if (decided.overridden || decided.advisory?.length)
        await this.props.journal.append({
          ...gateEventIdentity(item),
          event: 'POLICY_DECISION',
          details: decisionDetails(
            request,
            decided,
            decided.overridden ? 'the answer counts: its policy was overridden' : 'the answer counts',
          ),
        });
      return;
    }
    await this.props.journal.append({
      ...gateEventIdentity(item),
      event: 'POLICY_DECISION',
      details: decisionDetails(request, decided, 'the answer was refused'),
    });
    const rules = decided.determiningPolicies;
    throw new ApprovalError(
      'forbidden',
      `the platform's policy does not let ${voter.name} ${request.action === 'AnswerEscalation' || request.action === 'AnswerHumanStep' ? 'answer' : decision.decision.toLowerCase().replaceAll('_', ' ')} here (${rules.length > 0 ? `policy ${rules.join(', ')}` : 'no policy permits it'})`,
    );
  }

  private checkApprover(item: GateItem, by: string, subject: string | undefined): void {
    if (!by) throw new ApprovalError('forbidden', 'an answer must say who gives it');
    const refused = answerRefusal(item.policy, by);
    if (refused) throw new ApprovalError('forbidden', refused);
    if (item.votes.some((v) => samePrincipal(v.by, by)))
      throw new ApprovalError('used', `${by} has already approved this gate`);
    // One person, one vote: the same account under another email is not another approver.
    const same = subject === undefined ? undefined : item.votes.find((v) => v.subject === subject);
    if (same)
      throw new ApprovalError(
        'used',
        `${by} has already approved this gate as ${same.by} (the same signed-in account): one person counts once`,
      );
  }

  private async parseDecision(
    item: GateItem,
    raw: unknown,
    by: string,
    seen: string | undefined,
  ): Promise<GateDecision> {
    const parsed = decisionSchemaOf(item.kind).safeParse({ ...(raw as object), by });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ApprovalError(
        'invalid',
        `decision.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
      );
    }
    if (parsed.data.decision === 'DONE') {
      checkReportedOutputs(parsed.data.outputs, item.human?.outputs ?? []);
      const mismatch = await outputShapeMismatch(parsed.data.outputs, item.human?.outputShapes);
      if (mismatch)
        throw new ApprovalError('invalid', `decision.outputs.${mismatch.output}: ${mismatch.message}`);
    }
    if (parsed.data.decision === 'APPROVE' || parsed.data.decision === 'APPROVE_WITH_MODIFICATIONS') {
      // A stored view that hides a command is approvable only from the page that showed the whole
      // plan, every page of it (the other channels render the stored view).
      const reason = notApprovableReason(shownOfGate(gateView(item)));
      if (reason && !(await this.shownWhole(item, seen)))
        throw new ApprovalError('invalid', seen ? UNSEEN_PAGES : reason);
    }
    if (parsed.data.decision === 'APPROVE_WITH_MODIFICATIONS') checkModifiedSteps(item, parsed.data);
    return parsed.data;
  }

  /**
   * Whether `seen` proves that every page of the gate's whole view (the plan stored under its
   * digest) was shown, for its current content. A stored plan that is not the digest's is refused.
   */
  private async shownWhole(item: GateItem, seen: string | undefined): Promise<boolean> {
    if (!seen) return false;
    let whole: GateView | undefined;
    try {
      whole = await wholeGateOf(gateView(item), {
        dynamo: this.props.dynamo,
        plansTable: this.props.plansTable ?? DEFAULT_TABLE_NAMES.plans,
      });
    } catch (error) {
      if (error instanceof StoredPlanMismatchError) throw new ApprovalError('invalid', error.message);
      throw error;
    }
    if (!whole) return false;
    const shown = shownOfGate(whole);
    if (shown.hiddenCommands) return false;
    return new SeenPages(this.props.signingKey).coversAll(
      { approvalId: item.approvalId, digest: contentDigest(item), pages: gatePages(shown).length },
      seen,
    );
  }

  /**
   * What was decided through a link whose gate no longer waits (for "already decided by …"), or
   * undefined while it waits or when it was never decided. Throws ApprovalError for a bad link.
   */
  async decided(linkId: string): Promise<{ decision: GateDecision; decidedAt?: string } | undefined> {
    const { item } = await this.verify(linkId);
    if (item.status !== 'answered' || !item.decision) return undefined;
    return { decision: item.decision, decidedAt: item.decidedAt };
  }

  /**
   * Refuses an answer given through a genuine link for a reason found outside this service (e.g.
   * a page post without its form token): the gate's journal keeps the refusal, then it is thrown.
   */
  async refuse(linkId: string, error: ApprovalError, by?: string): Promise<never> {
    const { item } = await this.verify(linkId);
    await this.recordRefusal(item, error, by);
    throw error;
  }

  /**
   * Closes a waiting gate because a later version of its plan was gated (versions.ts). It wins
   * the same conditional update an answer does, so of an answer and this exactly one counts; then
   * the gate's execution is told REJECT `superseded by v<n>` (it ends rejected, as on any
   * rejection) and GATE_SUPERSEDED is journaled. False when the gate no longer waits (an answer
   * came first, or it was escalated: the ladder's new gate is closed on its own).
   */
  async supersede(approvalId: string, by: SupersededBy): Promise<boolean> {
    for (;;) {
      const out = await this.props.dynamo.send(
        new GetCommand({ TableName: this.props.gatesTable, Key: { approvalId }, ConsistentRead: true }),
      );
      const item = out.Item as GateItem | undefined;
      if (item?.status !== 'pending') return false;
      const decision: ApprovalDecision = {
        decision: 'REJECT',
        by: SUPERSEDE_DECIDER,
        reason: `superseded by v${by.version}`,
      };
      const decidedAt = this.now().toISOString();
      try {
        await this.props.dynamo.send(
          new UpdateCommand({
            TableName: this.props.gatesTable,
            Key: { approvalId },
            ConditionExpression: '#status = :pending AND #version = :version',
            UpdateExpression:
              'SET #status = :superseded, #version = :next, supersededBy = :by, decision = :decision, decidedAt = :at REMOVE taskToken',
            ExpressionAttributeNames: { '#status': 'status', '#version': 'version' },
            ExpressionAttributeValues: {
              ':pending': 'pending',
              ':version': item.version,
              ':next': item.version + 1,
              ':superseded': 'superseded',
              ':by': by,
              ':decision': decision,
              ':at': decidedAt,
            },
          }),
        );
      } catch (error) {
        // An answer or a vote came first: look again (a decided gate is left as it is).
        if (error instanceof ConditionalCheckFailedException) continue;
        throw error;
      }
      await this.props.journal.append({
        ...gateEventIdentity(item),
        event: 'GATE_SUPERSEDED',
        details: {
          gate: item.kind,
          by_version: by.version,
          by_digest: by.digest,
          by_execution: by.executionId,
        },
      });
      await this.props.sfn
        .send(
          new SendTaskSuccessCommand({
            taskToken: item.taskToken as string,
            output: JSON.stringify(decision),
          }),
        )
        .catch((error: unknown) => {
          // Between two rungs of its ladder the token is dead: the next rung hands the stored
          // decision on (ladder.ts). An execution that is gone has nothing left to stop.
          const name = error instanceof Error ? error.name : '';
          if (name !== 'TaskTimedOut' && name !== 'TaskDoesNotExist') throw error;
        });
      if (this.props.onDecided)
        await this.props
          .onDecided(
            { ...gateView(item), status: 'superseded', supersededBy: by, decision, decidedAt },
            decision,
          )
          .catch(() => {});
      return true;
    }
  }

  /** Checks the link's signature against its stored gate; returns the gate (and the bound recipient). */
  private async verify(linkId: string): Promise<VerifiedLink> {
    const link = parseLinkId(linkId);
    const out = await this.props.dynamo.send(
      new GetCommand({
        TableName: this.props.gatesTable,
        Key: { approvalId: link.approvalId },
        ConsistentRead: true,
      }),
    );
    const item = out.Item as GateItem | undefined;
    // Same answer for an unknown id and a bad signature: a guesser learns nothing. The expiry in
    // the id is signed, and must be the gate's own.
    if (
      !item ||
      link.expiresAtEpoch !== item.expiresAtEpoch ||
      !this.signer.verifies(link, item.planDigest)
    ) {
      throw new ApprovalError('forged', 'this approval link is not valid');
    }
    return link.recipient === undefined ? { item } : { item, recipient: link.recipient };
  }

  /** Expiry and single use of a genuine link; a late answer is told who decided first, and when. */
  private checkOpen(item: GateItem): void {
    if (item.status === 'superseded' && item.supersededBy) throw new GateSupersededError(item.supersededBy);
    if (item.status === 'escalated')
      throw new ApprovalError(
        'expired',
        'nobody answered in time, so this gate was handed to other approvers',
      );
    if (item.status !== 'pending') {
      const decided = item.decision;
      throw new ApprovalError(
        'used',
        decided
          ? `this gate was already answered: ${decided.decision} by ${'by' in decided ? decided.by : 'someone'}${item.decidedAt ? ` at ${item.decidedAt}` : ''}`
          : 'this gate has already been answered',
      );
    }
    if (this.now().getTime() / 1000 > item.expiresAtEpoch)
      throw new ApprovalError('expired', 'this approval link has expired');
  }

  /**
   * An answer refused before it reached this service (no identity, plan code, a bad signature):
   * GATE_ANSWER_REFUSED in the gate the link names, if there is one, saying where it came from. The
   * link is not genuine, so nobody is named: its approval id only says which gate it tried.
   */
  async recordUnverifiedAnswer(
    linkId: string,
    refused: { message: string; source: string },
  ): Promise<boolean> {
    const approvalId = linkId.split('.')[0] ?? '';
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(approvalId)) return false;
    const out = await this.props.dynamo.send(
      new GetCommand({ TableName: this.props.gatesTable, Key: { approvalId }, ConsistentRead: true }),
    );
    const item = out.Item as GateItem | undefined;
    if (!item) return false;
    return this.journalRefusal(item, {
      reason: 'unverified',
      message: refused.message,
      source: refused.source,
    });
  }

  /** GATE_ANSWER_REFUSED in the gate's execution: who tried what, and why it changed nothing. */
  private async recordRefusal(item: GateItem, error: ApprovalError, by: string | undefined): Promise<void> {
    await this.journalRefusal(item, { reason: error.reason, message: error.message, ...(by ? { by } : {}) });
  }

  /**
   * GATE_ANSWER_REFUSED in the gate's execution; once that has ended (its journal takes nothing
   * after EXECUTION_COMPLETE), in a stream of its own (`answer-refused:<uuid>`, found by the
   * plan's id) naming the execution, as a refused read is: every refusal stays audited.
   */
  private async journalRefusal(
    item: GateItem,
    details: { reason: string; message: string; by?: string; source?: string },
  ): Promise<boolean> {
    const event = { event: 'GATE_ANSWER_REFUSED', details: { gate: item.kind, ...details } } as const;
    try {
      await this.props.journal.append({ ...gateEventIdentity(item), ...event });
    } catch (error) {
      if (!(error instanceof ExecutionEndedError)) throw error;
      await this.props.journal.append({
        ...gateEventIdentity(item),
        executionId: `answer-refused:${randomUUID()}`,
        event: event.event,
        details: { ...event.details, execution: item.executionId },
      });
    }
    return true;
  }

  private now(): Date {
    return (this.props.clock ?? (() => new Date()))();
  }
}

/**
 * What an answer did: decided the gate, recorded one vote of a quorum still short, or (an
 * approval with modifications) made a new revision that the full quorum must approve again.
 */
export type AnswerOutcome =
  | { status: 'decided'; decision: GateDecision }
  /** `held`: the plan's quorum is met but the platform's policy keeps the gate waiting, and why. */
  | { status: 'pending'; votes: number; held?: string }
  | { status: 'modified'; revision: number; digest: string };

type Vote = GateItem['votes'][number];

/** What one accepted vote does to a plan or step gate. */
type Tally =
  | { readonly outcome: 'pending'; readonly votes: Vote[] }
  | { readonly outcome: 'revised'; readonly revision: GateRevision }
  | { readonly outcome: 'decided'; readonly votes: readonly Vote[]; readonly decision: GateDecision };

/**
 * Counts `decision` by `by` at a plan or step gate. Approvals count only for the content they
 * saw (the current digest); a quorum of them approves it: the plan as submitted (APPROVE) or the
 * latest revision (APPROVE_WITH_MODIFICATIONS with the revision's changes). A modification makes
 * a new revision and counts as nobody's approval of it; a rejection or a question decides alone.
 */
function countVote(
  item: GateItem,
  decision: ApprovalDecision,
  by: string,
  at: string,
  groups: readonly string[] = [],
  subject?: string,
): Tally {
  switch (decision.decision) {
    case 'APPROVE_WITH_MODIFICATIONS':
      return { outcome: 'revised', revision: revise(item, decision, by, at) };
    case 'APPROVE': {
      const vote = {
        by,
        decision,
        digest: contentDigest(item),
        ...(groups.length > 0 ? { groups: [...groups] } : {}),
        ...(subject !== undefined ? { subject } : {}),
      };
      const votes = [...item.votes, vote];
      if (votes.length < item.policy.quorum) return { outcome: 'pending', votes };
      const approvers = votes.map((v) => v.by).join(', ');
      // A step gate's approved revision is already applied by the machine (`$mods`): only a
      // revision made at this gate is decided as modifications.
      const revision = item.revision?.number === item.approved?.number ? undefined : item.revision;
      return {
        outcome: 'decided',
        votes,
        decision: revision
          ? {
              decision: 'APPROVE_WITH_MODIFICATIONS',
              by: approvers,
              skipSteps: revision.skipSteps,
              argOverrides: revision.argOverrides,
            }
          : { decision: 'APPROVE', by: approvers },
      };
    }
    default:
      return { outcome: 'decided', votes: item.votes, decision };
  }
}

/**
 * The revision a modification makes of the gate's current content: its changes on top of the
 * latest revision's (a step's args merged by name, skipped steps added). Refuses (`invalid`) a
 * modification that changes nothing: that is an approval, and is given as one.
 */
function revise(
  item: GateItem,
  decision: Extract<ApprovalDecision, { decision: 'APPROVE_WITH_MODIFICATIONS' }>,
  by: string,
  at: string,
): GateRevision {
  const current = item.revision ?? { skipSteps: [], argOverrides: {} };
  const skipSteps = [...new Set([...current.skipSteps, ...decision.skipSteps])].sort();
  const argOverrides: Record<string, Record<string, unknown>> = { ...current.argOverrides };
  for (const [id, args] of Object.entries(decision.argOverrides))
    argOverrides[id] = { ...argOverrides[id], ...args };
  const digest = revisionDigest(item.planDigest, skipSteps, argOverrides);
  if (digest === revisionDigest(item.planDigest, current.skipSteps, current.argOverrides))
    throw new ApprovalError(
      'invalid',
      'decision: these modifications change nothing; approve what is shown instead',
    );
  return { number: (item.revision?.number ?? 0) + 1, digest, skipSteps, argOverrides, by, at };
}

/** `sha256:` + hex SHA-256 of the canonical JSON of `{ base, skipSteps, argOverrides }`. */
function revisionDigest(
  base: string,
  skipSteps: readonly string[],
  argOverrides: Readonly<Record<string, Record<string, unknown>>>,
): string {
  return `sha256:${sha256Hex(canonicalJson({ base, skipSteps, argOverrides }))}`;
}

/**
 * An answer binds to the content its approver saw: the current revision's digest, or the plan's
 * when nobody modified it. A stale digest after a modification is told who modified it.
 */
function checkDigest(item: GateItem, digest: string): void {
  if (digest === contentDigest(item)) return;
  const { revision } = item;
  throw new ApprovalError(
    'digest-mismatch',
    revision
      ? `the ${item.kind === 'step' ? 'step' : 'plan'} was modified by ${revision.by} (revision ${revision.number}, ${revision.digest}): review it again`
      : 'this approval is for a different version of the plan; review the current plan',
  );
}

/**
 * A modification names only steps this gate may change: the plan's steps at a plan gate (when the
 * gate lists them), the gate's own step at a step gate; what it makes of them is checked as a plan
 * (modification-check.ts).
 */
function checkModifiedSteps(
  item: GateItem,
  decision: Extract<ApprovalDecision, { decision: 'APPROVE_WITH_MODIFICATIONS' }>,
): void {
  const allowed = item.kind === 'step' && item.stepId ? [item.stepId] : item.summary?.stepIds;
  if (!allowed) return;
  const named = [
    ...decision.skipSteps.map((id) => ['skipSteps', id] as const),
    ...Object.keys(decision.argOverrides).map((id) => ['argOverrides', id] as const),
  ];
  const unknown = named.find(([, id]) => !allowed.includes(id));
  if (unknown)
    throw new ApprovalError(
      'invalid',
      `decision.${unknown[0]}: "${unknown[1]}" is not a step this gate can change`,
    );
}

/** A human step's report must hold exactly its declared outputs. */
function checkReportedOutputs(
  reported: Readonly<Record<string, unknown>>,
  declared: readonly string[],
): void {
  const missing = declared.find((name) => !Object.hasOwn(reported, name));
  if (missing !== undefined)
    throw new ApprovalError('invalid', `decision.outputs.${missing}: this step must report "${missing}"`);
  const extra = Object.keys(reported).find((name) => !declared.includes(name));
  if (extra !== undefined)
    throw new ApprovalError(
      'invalid',
      `decision.outputs.${extra}: this step declares no output "${extra}" (declared: ${declared.join(', ') || 'none'})`,
    );
}

/** What a modification at this gate changes: the plan gate's steps, or the step gate's step, as compiled. */
function modifiable(item: GateItem, recorded: ModifiableContent['recorded']): ModifiableContent {
  const steps =
    item.kind === 'step' ? (item.stepGate ? [item.stepGate.step] : []) : (item.summary?.view?.steps ?? []);
  return {
    kind: item.kind === 'step' ? 'step' : 'plan',
    steps,
    ...(recorded ? { recorded } : {}),
    ...(item.revision ? { current: item.revision } : {}),
  };
}

/**
 * `decided` released by `voter`'s override, or refused (`forbidden`, with why: a hard rule, not a
 * member of the override group, no reason). A refused override changes nothing.
 */
function overridden(
  policy: PolicySet,
  decided: PolicyDecision,
  voter: PolicyPrincipal,
  reason: string,
): PolicyDecision {
  const released = policy.override(decided, voter, reason);
  if (typeof released === 'string') throw new ApprovalError('forbidden', `override refused: ${released}`);
  return released;
}

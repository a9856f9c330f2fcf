/**
 * Approvals: the gate's task token stays in the gates table; a person gets only an opaque,
 * HMAC-signed, expiring, single-use approval id. Answering verifies the id, the plan digest and
 * the approval policy, wins a conditional update (so of two concurrent clicks exactly one
 * counts), and only then calls SendTaskSuccess and writes the decision event.
 *
 * Link ids (shared and recipient-bound) are signed and checked by {@link LinkSigner} in links.ts.
 */
import { randomBytes } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SendTaskFailureCommand, SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { eventIdentity } from '../deps.ts';
import type { Journal } from '../journal/journal.ts';
import { DEFAULT_TABLE_NAMES } from '../journal/tables.ts';
import {
  type ApprovalDecision,
  type ApprovalPolicy,
  decisionSchemaOf,
  ERROR_NAMES,
  type FailureCause,
  type GateDecision,
  type GateRequest,
  type HumanDecision,
  type RunnerResult,
} from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { progressLabel } from '../shared/progress.ts';
import { inlineOrStored } from '../steps/output-store.ts';
import { recordDecision } from './decision-events.ts';
import {
  type DecisionListener,
  type GateItem,
  type GateView,
  gateView,
  type SupersededBy,
} from './gate-item.ts';
import { ApprovalError, GateSupersededError, LinkSigner, parseLinkId } from './links.ts';
import type { PlanChanges } from './plan-diff.ts';

export type { ApprovalPolicy } from '../payloads/index.ts';

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
   * Where a human step's large reported outputs are stored (see output-store.ts).
   * @default DEFAULT_TABLE_NAMES.outputs
   */
  readonly outputsTable?: string;
  /** @default () => new Date() */
  readonly clock?: () => Date;
  /**
   * Told of each final decision after it is recorded; its failure never undoes or fails the answer.
   * @default - nobody is told
   */
  readonly onDecided?: DecisionListener;
}

/** A link id whose signature, expiry and single use were checked, with the gate it opens. */
interface VerifiedLink {
  readonly item: GateItem;
  /** Set when the id is bound to one emailed recipient. */
  readonly recipient?: string;
}

export class Approvals {
  private readonly signer: LinkSigner;

  constructor(private readonly props: ApprovalsProps) {
    this.signer = new LinkSigner(props.signingKey);
  }

  /**
   * Stores the gate (with its token and the plan's approval policy) and returns the approval id
   * for links and buttons. `submittedBy`, when known, may answer but never approve; `changes`
   * (plan gate) are shown beside the plan.
   */
  async create(
    req: GateRequest,
    { submittedBy, changes }: { submittedBy?: string; changes?: PlanChanges } = {},
  ): Promise<string> {
    const policy: ApprovalPolicy = req.approval;
    const now = this.now();
    const expires = new Date(now.getTime() + req.timeoutSeconds * 1000);
    const approvalId = randomBytes(16).toString('base64url');
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
      ...(req.question ? { question: req.question } : {}),
      ...(req.failure ? { failure: req.failure } : {}),
      ...(req.kind === 'human' && req.human
        ? {
            human: {
              instructions: req.human.instructions,
              outputs: [...req.human.outputs],
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
    };
    await this.props.dynamo.send(
      new PutCommand({
        TableName: this.props.gatesTable,
        Item: item,
        ConditionExpression: 'attribute_not_exists(approvalId)',
      }),
    );
    return this.signer.shared(approvalId, item.expiresAtEpoch, item.planDigest);
  }

  /**
   * The gates of an execution still waiting for an answer (unexpired), oldest first, each with the
   * link id it was handed out with: a session that re-attaches after a crash can ask them again.
   */
  async pending(executionId: string): Promise<{ readonly linkId: string; readonly gate: GateView }[]> {
    const waiting: { linkId: string; gate: GateView }[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.props.dynamo.send(
        new QueryCommand({
          TableName: this.props.gatesTable,
          IndexName: 'byExecution',
          KeyConditionExpression: 'executionId = :e',
          ExpressionAttributeValues: { ':e': executionId },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of (out.Items ?? []) as GateItem[]) {
        if (item.status !== 'pending' || this.now().getTime() / 1000 > item.expiresAtEpoch) continue;
        waiting.push({
          linkId: this.signer.shared(item.approvalId, item.expiresAtEpoch, item.planDigest),
          gate: gateView(item),
        });
      }
      start = out.LastEvaluatedKey;
    } while (start);
    return waiting;
  }

  /** What an approval page may show about a link (never the token). Throws ApprovalError when the link is not answerable. */
  async describe(linkId: string): Promise<GateView> {
    const { item } = await this.verify(linkId);
    this.checkOpen(item);
    return gateView(item);
  }

  /**
   * Answers a gate. `digest` is the plan digest the approver saw: an approval binds to it.
   * Returns the final decision once the gate is decided, or `pending` while a quorum is still short.
   */
  async answer(
    linkId: string,
    answer: {
      by: string;
      digest: string;
      decision: unknown;
      /** A Slack click shows its outcome in its own message: the listener is not told again. */
      via?: 'slack';
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
    answer: { digest: string; decision: unknown },
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
    answer: { digest: string; decision: unknown; via?: 'slack' },
  ): Promise<AnswerOutcome> {
    for (;;) {
      const link = await this.verify(linkId);
      const item = link.item;
      let by: string | undefined;
      let decision: GateDecision;
      try {
        by = approverOf(link);
        this.checkOpen(item);
        if (answer.digest !== item.planDigest) {
          throw new ApprovalError(
            'digest-mismatch',
            'this approval is for a different version of the plan; review the current plan',
          );
        }
        this.checkApprover(item, by);
        decision = this.parseDecision(item, answer.decision, by);
        const approves =
          decision.decision === 'APPROVE' || decision.decision === 'APPROVE_WITH_MODIFICATIONS';
        if ((item.kind === 'plan' || item.kind === 'step') && approves && item.submittedBy === by)
          throw new ApprovalError('forbidden', `${by} submitted this plan and may not approve it`);
      } catch (error) {
        // The link is genuine, so the gate is known: its journal keeps the refusal.
        if (error instanceof ApprovalError) await this.recordRefusal(item, error, by);
        throw error;
      }
      // Only plan and step gates vote (quorum); an escalation or a human step has one answer.
      const voting = item.kind === 'plan' || item.kind === 'step';
      const votes = voting ? [...item.votes, { by: by, decision: decision as ApprovalDecision }] : [];
      const approving = decision.decision === 'APPROVE' || decision.decision === 'APPROVE_WITH_MODIFICATIONS';
      const decided = !voting || !approving || votes.length >= item.policy.quorum;
      const final = decided ? (voting && approving ? mergeVotes(votes) : decision) : undefined;
      const decidedAt = this.now().toISOString();
      try {
        await this.props.dynamo.send(
          new UpdateCommand({
            TableName: this.props.gatesTable,
            Key: { approvalId: item.approvalId },
            ConditionExpression: '#status = :pending AND #version = :version',
            UpdateExpression: final
              ? 'SET #status = :answered, #version = :next, votes = :votes, decision = :decision, decidedAt = :at REMOVE taskToken'
              : 'SET #version = :next, votes = :votes',
            ExpressionAttributeNames: { '#status': 'status', '#version': 'version' },
            ExpressionAttributeValues: {
              ':pending': 'pending',
              ':version': item.version,
              ':next': item.version + 1,
              ':votes': votes,
              ...(final ? { ':answered': 'answered', ':decision': final, ':at': decidedAt } : {}),
            },
          }),
        );
      } catch (error) {
        // Someone else answered or voted first: look again (a decided gate then refuses this answer).
        if (error instanceof ConditionalCheckFailedException) continue;
        throw error;
      }
      if (!final) return { status: 'pending', votes: votes.length };
      // The decision is final (the update above won): record it before the machine moves on, so
      // nothing the next states write can come before it in the journal.
      await recordDecision(this.props.journal, item, final, by);
      if (item.kind === 'human') await this.completeHumanTask(item, final as HumanDecision);
      else
        await this.props.sfn
          .send(
            new SendTaskSuccessCommand({
              taskToken: item.taskToken as string,
              output: JSON.stringify(final),
            }),
          )
          .catch((error: unknown) => {
            // The wait timed out just before: the next rung of the timeout ladder hands the
            // stored decision on (ladder.ts). Escalation gates have no ladder.
            if (!(voting && error instanceof Error && error.name === 'TaskTimedOut')) throw error;
          });
      if (this.props.onDecided && answer.via !== 'slack')
        await this.props
          .onDecided({ ...gateView(item), status: 'answered', decision: final, decidedAt }, final)
          .catch(() => {});
      return { status: 'decided', decision: final };
    }
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
    const result: RunnerResult = {
      stepId,
      status: 'succeeded',
      attempt: human.attempt,
      durationMs: Math.max(0, this.now().getTime() - Date.parse(item.createdAt)),
      ...(await inlineOrStored(
        output,
        { executionId: item.executionId, stepId, inlineOutputLimitBytes: human.inlineOutputLimitBytes },
        {
          dynamo: this.props.dynamo,
          tables: { outputs: this.props.outputsTable ?? DEFAULT_TABLE_NAMES.outputs },
        },
      )),
    };
    await this.props.sfn.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(result) }));
  }

  private checkApprover(item: GateItem, by: string): void {
    if (!by) throw new ApprovalError('forbidden', 'an answer must say who gives it');
    if (item.policy.forbiddenApprovers.includes(by))
      throw new ApprovalError('forbidden', `${by} may not answer this gate`);
    if (item.policy.approvers.length > 0 && !item.policy.approvers.includes(by)) {
      throw new ApprovalError('forbidden', `${by} is not one of this plan's approvers`);
    }
    if (item.votes.some((v) => v.by === by))
      throw new ApprovalError('used', `${by} has already approved this gate`);
  }

  private parseDecision(item: GateItem, raw: unknown, by: string): GateDecision {
    const parsed = decisionSchemaOf(item.kind).safeParse({ ...(raw as object), by });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ApprovalError(
        'invalid',
        `decision.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
      );
    }
    if (parsed.data.decision === 'DONE') checkReportedOutputs(parsed.data.outputs, item.human?.outputs ?? []);
    if (parsed.data.decision === 'APPROVE_WITH_MODIFICATIONS') checkModifiedSteps(item, parsed.data);
    return parsed.data;
  }

  /**
   * What was decided through a link whose gate no longer waits (for "already decided by …"), or
   * undefined while it waits or when it was never decided. Throws ApprovalError for a bad link.
   */
  async decided(linkId: string): Promise<{ decision: GateDecision; decidedAt?: string } | undefined> {
    const { item } = await this.verify(linkId);
    if (item.status !== 'answered' || !item.decision) return undefined;
    return { decision: item.decision, ...(item.decidedAt ? { decidedAt: item.decidedAt } : {}) };
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
        ...eventIdentity(
          {
            executionId: item.executionId,
            plan: { id: item.planId, version: item.planVersion, digest: item.planDigest },
          },
          item.stepId ? { id: item.stepId } : undefined,
        ),
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

  /** GATE_ANSWER_REFUSED in the gate's execution: who tried what, and why it changed nothing. */
  private async recordRefusal(item: GateItem, error: ApprovalError, by: string | undefined): Promise<void> {
    await this.props.journal.append({
      ...eventIdentity(
        {
          executionId: item.executionId,
          plan: { id: item.planId, version: item.planVersion, digest: item.planDigest },
        },
        item.stepId ? { id: item.stepId } : undefined,
      ),
      event: 'GATE_ANSWER_REFUSED',
      details: { gate: item.kind, reason: error.reason, message: error.message, ...(by ? { by } : {}) },
    });
  }

  private now(): Date {
    return (this.props.clock ?? (() => new Date()))();
  }
}

/** What an answer did: decided the gate, or recorded one vote of a quorum still short. */
export type AnswerOutcome =
  | { status: 'decided'; decision: GateDecision }
  | { status: 'pending'; votes: number };

/** The decision a quorum of approvals makes: modifications of every vote combined. */
function mergeVotes(votes: readonly { decision: ApprovalDecision }[]): ApprovalDecision {
  const skipSteps = new Set<string>();
  const argOverrides: Record<string, Record<string, unknown>> = {};
  let modified = false;
  for (const { decision } of votes) {
    if (decision.decision !== 'APPROVE_WITH_MODIFICATIONS') continue;
    modified = true;
    for (const id of decision.skipSteps) skipSteps.add(id);
    for (const [id, args] of Object.entries(decision.argOverrides))
      argOverrides[id] = { ...argOverrides[id], ...args };
  }
  const by = votes.map((v) => v.decision.by).join(', ');
  return modified
    ? { decision: 'APPROVE_WITH_MODIFICATIONS', by, skipSteps: [...skipSteps], argOverrides }
    : { decision: 'APPROVE', by };
}

/**
 * A modification names only steps this gate may change: the plan's steps at a plan gate (when the
 * gate lists them), the gate's own step at a step gate.
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

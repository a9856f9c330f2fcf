/**
 * Approvals: the gate's task token stays in the gates table; a person gets only an opaque,
 * HMAC-signed, expiring, single-use approval id. Answering verifies the id, the plan digest and
 * the approval policy, wins a conditional update (so of two concurrent clicks exactly one
 * counts), and only then calls SendTaskSuccess and writes the decision event.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SendTaskSuccessCommand, type SFNClient } from '@aws-sdk/client-sfn';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { HarnessError } from './errors.ts';
import type { Journal } from './journal.ts';
import {
  type ApprovalDecision,
  ApprovalDecisionSchema,
  type EscalationDecision,
  EscalationDecisionSchema,
  type GateRequest,
} from './payloads.ts';

/** Who may answer a gate (lib/plan/schema.ts ApprovalPolicySchema, the fields that matter here). */
export interface ApprovalPolicy {
  readonly approvers: readonly string[];
  readonly forbiddenApprovers: readonly string[];
  readonly quorum: number;
}

export const ANY_APPROVER: ApprovalPolicy = { approvers: [], forbiddenApprovers: [], quorum: 1 };

/** Why an answer was refused; nothing was changed. */
export class ApprovalError extends HarnessError {
  constructor(
    readonly reason:
      | 'malformed'
      | 'forged'
      | 'expired'
      | 'used'
      | 'not-found'
      | 'forbidden'
      | 'digest-mismatch'
      | 'invalid',
    message: string,
  ) {
    super('ApprovalRefused', message);
  }
}

/** A pending gate as stored. `taskToken` never leaves this table. */
interface GateItem {
  approvalId: string;
  taskToken?: string;
  kind: GateRequest['kind'];
  executionId: string;
  planId: string;
  planVersion: number;
  planDigest: string;
  stepId?: string;
  round: number;
  createdAt: string;
  expiresAt: string;
  expiresAtEpoch: number;
  status: 'pending' | 'answered';
  version: number;
  policy: ApprovalPolicy;
  votes: { by: string; decision: ApprovalDecision }[];
  decision?: ApprovalDecision | EscalationDecision;
}

export interface ApprovalsProps {
  readonly dynamo: DynamoDBDocumentClient;
  readonly gatesTable: string;
  readonly sfn: SFNClient;
  readonly journal: Journal;
  /** The HMAC key (at least 32 bytes); from Secrets Manager or the environment, never from a plan. */
  readonly signingKey: string | Buffer;
  /** @default () => new Date() */
  readonly clock?: () => Date;
}

export class Approvals {
  constructor(private readonly props: ApprovalsProps) {
    if (Buffer.byteLength(props.signingKey) < 32)
      throw new Error('the approval signing key must be at least 32 bytes');
  }

  /** Stores the gate (with its token) and returns the approval id to put in links and buttons. */
  async create(req: GateRequest, policy: ApprovalPolicy = ANY_APPROVER): Promise<string> {
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
    };
    await this.props.dynamo.send(
      new PutCommand({
        TableName: this.props.gatesTable,
        Item: item,
        ConditionExpression: 'attribute_not_exists(approvalId)',
      }),
    );
    return this.sign(approvalId, item.expiresAtEpoch, item.planDigest);
  }

  /** What an approval page may show about a link (never the token). Throws ApprovalError when the link is not answerable. */
  async describe(linkId: string): Promise<Omit<GateItem, 'taskToken' | 'version'>> {
    const item = await this.verify(linkId);
    const { taskToken: _t, version: _v, ...visible } = item;
    return visible;
  }

  /**
   * Answers a gate. `digest` is the plan digest the approver saw: an approval binds to it.
   * Returns the final decision once the gate is decided, or `pending` while a quorum is still short.
   */
  async answer(
    linkId: string,
    answer: { by: string; digest: string; decision: unknown },
  ): Promise<
    | { status: 'decided'; decision: ApprovalDecision | EscalationDecision }
    | { status: 'pending'; votes: number }
  > {
    for (;;) {
      const item = await this.verify(linkId);
      if (answer.digest !== item.planDigest) {
        throw new ApprovalError(
          'digest-mismatch',
          'this approval is for a different version of the plan; review the current plan',
        );
      }
      this.checkApprover(item, answer.by);
      const decision = this.parseDecision(item, answer.decision, answer.by);
      const votes =
        item.kind === 'escalation'
          ? []
          : [...item.votes, { by: answer.by, decision: decision as ApprovalDecision }];
      const approving = decision.decision === 'APPROVE' || decision.decision === 'APPROVE_WITH_MODIFICATIONS';
      const decided = !approving || item.kind === 'escalation' || votes.length >= item.policy.quorum;
      const final = decided
        ? approving && item.kind !== 'escalation'
          ? mergeVotes(votes)
          : decision
        : undefined;
      try {
        await this.props.dynamo.send(
          new UpdateCommand({
            TableName: this.props.gatesTable,
            Key: { approvalId: item.approvalId },
            ConditionExpression: '#status = :pending AND #version = :version',
            UpdateExpression: final
              ? 'SET #status = :answered, #version = :next, votes = :votes, decision = :decision REMOVE taskToken'
              : 'SET #version = :next, votes = :votes',
            ExpressionAttributeNames: { '#status': 'status', '#version': 'version' },
            ExpressionAttributeValues: {
              ':pending': 'pending',
              ':version': item.version,
              ':next': item.version + 1,
              ':votes': votes,
              ...(final ? { ':answered': 'answered', ':decision': final } : {}),
            },
          }),
        );
      } catch (error) {
        // Someone else answered or voted first: look again (a decided gate then refuses this answer).
        if (error instanceof ConditionalCheckFailedException) continue;
        throw error;
      }
      if (!final) return { status: 'pending', votes: votes.length };
      await this.props.sfn.send(
        new SendTaskSuccessCommand({ taskToken: item.taskToken as string, output: JSON.stringify(final) }),
      );
      await this.record(item, final, answer.by);
      return { status: 'decided', decision: final };
    }
  }

  private async record(
    item: GateItem,
    decision: ApprovalDecision | EscalationDecision,
    by: string,
  ): Promise<void> {
    const identity = {
      executionId: item.executionId,
      planId: item.planId,
      planVersion: item.planVersion,
      planDigest: item.planDigest,
      ...(item.stepId ? { task_id: item.stepId } : {}),
    };
    const journal = this.props.journal;
    switch (decision.decision) {
      case 'APPROVE':
        await journal.append({
          ...identity,
          event: 'GATE_APPROVED',
          details: { gate: item.kind, approver: by },
        });
        return;
      case 'APPROVE_WITH_MODIFICATIONS':
        await journal.append({
          ...identity,
          event: 'GATE_APPROVED',
          details: {
            gate: item.kind,
            approver: by,
            modifications: { skipSteps: decision.skipSteps, argOverrides: decision.argOverrides },
          },
        });
        return;
      case 'REJECT':
        await journal.append({
          ...identity,
          event: 'GATE_REJECTED',
          details: { gate: item.kind, approver: by, reason: decision.reason },
        });
        return;
      case 'ASK_FOR_CLARIFICATION':
        await journal.append({
          ...identity,
          event: 'GATE_CLARIFICATION_REQUESTED',
          details: { gate: item.kind, question: decision.question },
        });
        return;
      default:
        await journal.append({
          ...identity,
          event: 'RECOVERY_ESCALATION',
          details: { reason: `answered by ${by}`, user_decision: decision.decision, decided_by: 'person' },
        });
    }
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

  private parseDecision(item: GateItem, raw: unknown, by: string): ApprovalDecision | EscalationDecision {
    const schema = item.kind === 'escalation' ? EscalationDecisionSchema : ApprovalDecisionSchema;
    const parsed = schema.safeParse({ ...(raw as object), by });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ApprovalError(
        'invalid',
        `decision.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
      );
    }
    return parsed.data;
  }

  /** Checks signature, expiry and single use; returns the stored gate. */
  private async verify(linkId: string): Promise<GateItem> {
    const parts = linkId.split('.');
    if (parts.length !== 3 || !/^\d+$/.test(parts[1] ?? ''))
      throw new ApprovalError('malformed', 'this approval link is malformed');
    const [approvalId, expiresText] = parts as [string, string, string];
    const out = await this.props.dynamo.send(
      new GetCommand({ TableName: this.props.gatesTable, Key: { approvalId }, ConsistentRead: true }),
    );
    const item = out.Item as GateItem | undefined;
    // Same answer for an unknown id and a bad signature: a guesser learns nothing.
    if (!item || !safeEqual(this.sign(approvalId, Number(expiresText), item.planDigest), linkId)) {
      throw new ApprovalError('forged', 'this approval link is not valid');
    }
    if (this.now().getTime() / 1000 > item.expiresAtEpoch)
      throw new ApprovalError('expired', 'this approval link has expired');
    if (item.status !== 'pending') throw new ApprovalError('used', 'this gate has already been answered');
    return item;
  }

  private sign(approvalId: string, expiresAtEpoch: number, planDigest: string): string {
    const mac = createHmac('sha256', this.props.signingKey)
      .update(`${approvalId}.${expiresAtEpoch}.${planDigest}`)
      .digest('base64url');
    return `${approvalId}.${expiresAtEpoch}.${mac}`;
  }

  private now(): Date {
    return (this.props.clock ?? (() => new Date()))();
  }
}

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

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

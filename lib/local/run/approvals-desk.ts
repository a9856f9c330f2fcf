/**
 * The gate desk over the approvals service (lib/runtime/approvals.ts) and the gates table: what
 * waits in an execution, and answers that bind to the plan digest the person was shown.
 */
import { createHmac } from 'node:crypto';
import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ApprovalError, type Approvals } from '../../runtime/approvals.ts';
import type { GateKind } from '../../runtime/payloads.ts';
import type { AnswerOutcome, GateAnswer, GateDesk, PendingGate } from './gate-desk.ts';

export interface ApprovalsDeskProps {
  readonly approvals: Approvals;
  readonly dynamo: DynamoDBDocumentClient;
  readonly gatesTable: string;
  /** The key the gate Lambda signs approval ids with (the same the approvals service checks). */
  readonly signingKey: Buffer;
  /** Digest (hex) of the plan this session showed: answers bind to it. */
  readonly planDigest: string;
}

interface StoredGate {
  approvalId: string;
  kind: GateKind;
  executionId: string;
  planDigest: string;
  stepId?: string;
  round: number;
  createdAt: string;
  expiresAtEpoch: number;
  status: string;
}

export class ApprovalsDesk implements GateDesk {
  constructor(private readonly props: ApprovalsDeskProps) {}

  async pending(executionId: string): Promise<PendingGate[]> {
    const out = await this.props.dynamo.send(
      new QueryCommand({
        TableName: this.props.gatesTable,
        IndexName: 'byExecution',
        KeyConditionExpression: 'executionId = :e',
        ExpressionAttributeValues: { ':e': executionId },
      }),
    );
    return ((out.Items ?? []) as StoredGate[])
      .filter((g) => g.status === 'pending' && g.expiresAtEpoch * 1000 > Date.now())
      .map((g) => this.toPending(g, this.linkIdOf(g)));
  }

  async get(linkId: string): Promise<PendingGate | undefined> {
    try {
      return this.toPending((await this.props.approvals.describe(linkId)) as StoredGate, linkId);
    } catch (error) {
      if (error instanceof ApprovalError) return undefined;
      throw error;
    }
  }

  async answer(linkId: string, answer: GateAnswer): Promise<AnswerOutcome> {
    const { by = 'unknown', ...decision } = answer;
    try {
      const gate = await this.props.approvals.describe(linkId);
      // An approval binds to the plan shown here; the service refuses it for any other digest.
      const digest = sameDigest(gate.planDigest, this.props.planDigest)
        ? gate.planDigest
        : this.props.planDigest;
      await this.props.approvals.answer(linkId, { by, digest, decision });
      return { ok: true };
    } catch (error) {
      if (!(error instanceof ApprovalError)) throw error;
      const reason =
        error.reason === 'used' ? 'already-answered' : error.reason === 'forged' ? 'not-found' : 'invalid';
      return { ok: false, reason, message: error.message };
    }
  }

  /**
   * The link id the gate Lambda handed out: `<approvalId>.<expiresAtEpoch>.<HMAC>` as the approvals
   * service signs it, so a session that re-attaches after a crash can show pending gates again.
   */
  private linkIdOf(g: StoredGate): string {
    const mac = createHmac('sha256', this.props.signingKey)
      .update(`${g.approvalId}.${g.expiresAtEpoch}.${g.planDigest}`)
      .digest('base64url');
    return `${g.approvalId}.${g.expiresAtEpoch}.${mac}`;
  }

  private toPending(g: StoredGate, linkId: string): PendingGate {
    return {
      linkId,
      executionId: g.executionId,
      kind: g.kind,
      ...(g.stepId ? { stepId: g.stepId } : {}),
      round: g.round,
      expiresAtEpoch: g.expiresAtEpoch,
    };
  }
}

const sameDigest = (a: string, b: string): boolean => a.replace(/^sha256:/, '') === b.replace(/^sha256:/, '');

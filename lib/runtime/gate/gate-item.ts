/** A gate as the gates table stores it, and the view of it that may leave the backend. */
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { ApprovalDecision, ApprovalPolicy, GateDecision, GateRequest } from '../payloads/index.ts';
import type { PlanChanges } from './plan-diff.ts';

/** A pending gate as stored. `taskToken` never leaves this table. */
export interface GateItem {
  approvalId: string;
  taskToken?: string;
  kind: GateRequest['kind'];
  executionId: string;
  planId: string;
  planVersion: number;
  planDigest: string;
  stepId?: string;
  round: number;
  description?: string;
  summary?: GateRequest['summary'];
  /** Plan gate: what changed since the plan's latest earlier version that was gated. */
  changes?: PlanChanges;
  question?: string;
  failure?: GateRequest['failure'];
  /** Kind `human`: what the person is asked to do and report. */
  human?: {
    instructions: string;
    outputs: string[];
    attempt: number;
    inlineOutputLimitBytes: number;
    /** "[Task N/M]", for the TASK_FAILED line of a FAILED answer. */
    progress?: string;
  };
  createdAt: string;
  expiresAt: string;
  expiresAtEpoch: number;
  /** `escalated`: the timeout ladder handed the gate to the next approver group (a new gate). */
  status: 'pending' | 'answered' | 'escalated';
  version: number;
  policy: ApprovalPolicy;
  votes: { by: string; decision: ApprovalDecision }[];
  decision?: GateDecision;
  /** When the decision was made (ISO 8601). */
  decidedAt?: string;
  /** Who submitted the plan (PLAN_CREATED): they may not approve it. */
  submittedBy?: string;
  /** The Slack message asking for this gate, so it can show the decision wherever it was made. */
  slackMessage?: SlackMessageRef;
}

/** A posted Slack message: where it is and what it showed (its buttons are removed once decided). */
export interface SlackMessageRef {
  channel: string;
  ts: string;
  text: string;
  blocks: Record<string, unknown>[];
}

/** Records where a gate's Slack message went (the notifier, after posting it). */
export async function recordSlackMessage(
  dynamo: DynamoDBDocumentClient,
  gatesTable: string,
  approvalId: string,
  message: SlackMessageRef,
): Promise<void> {
  await dynamo.send(
    new UpdateCommand({
      TableName: gatesTable,
      Key: { approvalId },
      UpdateExpression: 'SET slackMessage = :message',
      // Only a gate that exists: an update must never create a gate item.
      ConditionExpression: 'attribute_exists(approvalId)',
      ExpressionAttributeValues: { ':message': message },
    }),
  );
}

/** What an approval page may show about a gate: everything stored but the token. */
export type GateView = Omit<GateItem, 'taskToken' | 'version'>;

/** The gate without its task token (and its update counter). */
export function gateView(item: GateItem): GateView {
  const { taskToken: _t, version: _v, ...view } = item;
  return view;
}

/** Told of every final decision, wherever it was made (e.g. to show it in the gate's Slack message). */
export type DecisionListener = (gate: GateView, decision: GateDecision) => Promise<void>;

/** A gate as the gates table stores it, and the view of it that may leave the backend. */
import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { OutputShapes } from '../../plan/schema.ts';
import { queryItems } from '../journal/journal.ts';
import type {
  AbortRollback,
  ApprovalDecision,
  GateApprovers,
  GateDecision,
  GateRequest,
  GateRevision,
  RecoveryAdvice,
  StepGateView,
} from '../payloads/index.ts';
import type { PlanChanges } from './plan-diff.ts';

/** A pending gate as stored. `taskToken` never leaves this table. */
export interface GateItem {
  approvalId: string;
  taskToken?: string;
  /** Decided, and the machine not yet told: a restart (or the next answer) finishes it. */
  undelivered?: boolean;
  /** Until when (epoch ms) the one telling the machine holds the delivery. */
  deliveringUntil?: number;
  kind: GateRequest['kind'];
  executionId: string;
  planId: string;
  planVersion: number;
  planDigest: string;
  stepId?: string;
  round: number;
  description?: string;
  summary?: GateRequest['summary'];
  /** Step gate: the step as its approvers see it, what already ran and the values it will consume. */
  stepGate?: StepGateView;
  /** Plan gate: what changed since the plan's latest earlier version that was gated. */
  changes?: PlanChanges;
  question?: string;
  failure?: GateRequest['failure'];
  /** Kind `escalation`: the rollbacks an ABORT runs, as of when it was asked. */
  abortRollsBack?: AbortRollback[];
  /** Escalation of an unknown failure in a run with a planner: what the model suggests. */
  recovery?: RecoveryAdvice;
  /** Kind `human`: what the person is asked to do and report. */
  human?: {
    instructions: string;
    outputs: string[];
    /** The step's `outputShapes`, when it declares any. */
    outputShapes?: OutputShapes;
    attempt: number;
    inlineOutputLimitBytes: number;
    /** "[Task N/M]", for the TASK_FAILED line of a FAILED answer. */
    progress?: string;
  };
  createdAt: string;
  expiresAt: string;
  expiresAtEpoch: number;
  /**
   * `escalated`: the timeout ladder handed the gate to the next approver group (a new gate).
   * `superseded`: a later version of the plan was gated, so this one can no longer be answered.
   */
  status: 'pending' | 'answered' | 'escalated' | 'superseded';
  version: number;
  policy: GateApprovers;
  /**
   * The approvals counted so far, each for the content digest its voter saw (the current one),
   * with the groups the voter's verified request proved (policy counts them at completion).
   */
  /** `subject`: the signed-in account behind a vote (`<iss>#<sub>`), so one person counts once. */
  votes: { by: string; decision: ApprovalDecision; digest: string; groups?: string[]; subject?: string }[];
  /**
   * The content as modified by approvers, when it was: votes count for it only. A step gate opens
   * with the revision its plan gate approved (`approved`); a modification here builds on it.
   */
  revision?: GateRevision;
  /** Step gate: the revision the plan gate approved (what the step runner applies), kept across the ladder. */
  approved?: GateRevision;
  decision?: GateDecision;
  /** When the decision was made (ISO 8601). */
  decidedAt?: string;
  /** Who submitted the plan (PLAN_CREATED): they may not approve it. */
  submittedBy?: string;
  /** How the plan's processes run where this gate was opened (lib/runtime/sandbox: `sandboxSentence`). */
  runsAs?: string;
  /** Status `superseded`: the later version whose gate closed this one. */
  supersededBy?: SupersededBy;
  /**
   * Every Slack message asking for this gate (the request and its reminders), so each shows the
   * outcome wherever it was decided, and that the gate was escalated.
   */
  slackMessages?: SlackMessageRef[];
  /**
   * How far its opening got (Approvals.announce): `journaled` its opening event, `notified` its
   * notice too; absent, only stored. A retried invocation of the gate Lambda does the rest only.
   */
  announced?: 'journaled' | 'notified';
}

/** The later version of a plan that closed an earlier version's gate, and where to review it. */
export interface SupersededBy {
  version: number;
  digest: string;
  executionId: string;
  /**
   * The shared link id of the later version's plan gate (its page needs sign-in); absent when
   * that gate could not be found.
   */
  linkId?: string;
}

/** A posted Slack message: where it is and what it showed (its buttons are removed once decided). */
export interface SlackMessageRef {
  channel: string;
  ts: string;
  text: string;
  blocks: Record<string, unknown>[];
}

/** Every gate of an execution (the gates table's byExecution index), page after page. */
export async function* gatesOfExecution(
  dynamo: DynamoDBDocumentClient,
  gatesTable: string,
  executionId: string,
): AsyncGenerator<GateItem> {
  for await (const item of queryItems(dynamo, {
    TableName: gatesTable,
    IndexName: 'byExecution',
    KeyConditionExpression: 'executionId = :e',
    ExpressionAttributeValues: { ':e': executionId },
  }))
    yield item as unknown as GateItem;
}

/** Records where a gate's Slack message went (the notifier, after posting it), beside its earlier ones. */
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
      UpdateExpression: 'SET slackMessages = list_append(if_not_exists(slackMessages, :none), :message)',
      // Only a gate that exists: an update must never create a gate item.
      ConditionExpression: 'attribute_exists(approvalId)',
      ExpressionAttributeValues: { ':message': [message], ':none': [] },
    }),
  );
}

/** The content digest an answer must carry: the latest revision's, else the plan's. */
export function contentDigest(item: Pick<GateItem, 'planDigest' | 'revision'>): string {
  return item.revision?.digest ?? item.planDigest;
}

/** What an approval page may show about a gate: everything stored but the token (and the gate's own bookkeeping). */
export type GateView = Omit<
  GateItem,
  'taskToken' | 'version' | 'announced' | 'undelivered' | 'deliveringUntil'
>;

/** The gate without its task token (and its update counter and how far its opening got). */
export function gateView(item: GateItem): GateView {
  const { taskToken: _t, version: _v, announced: _a, undelivered: _u, deliveringUntil: _d, ...view } = item;
  return view;
}

/** Told of every final decision, wherever it was made (e.g. to show it in the gate's Slack message). */
export type DecisionListener = (gate: GateView, decision: GateDecision) => Promise<void>;

/** Told when the timeout ladder hands a gate to the next approver group (its links stop working). */
export type EscalationListener = (
  gate: GateView,
  to: { readonly approvers: readonly string[]; readonly at: string },
) => Promise<void>;

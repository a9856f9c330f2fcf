/**
 * Plans drafted from a goal (`POST /plans {goal}`). A model may take minutes and API Gateway
 * answers within 30 s, so the Plans API only records the request (202) and hands it to the
 * planner; the planner (lambdas/planner.ts) runs the LLM-Modulo loop (lib/planner) and launches a
 * valid plan exactly as a submitted one: PLAN_CREATED {planner, submitted_by}, then the gate.
 * Nothing the model writes skips the gate: a planned plan never allows auto-approval.
 */
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { formatProblem } from '../plan/problems.ts';
import { planFromGoal } from '../planner/loop.ts';
import type { PlannerProvider } from '../planner/provider.ts';
import { launchAtRunTime, type RuntimeLaunchDeps } from './launch-plan.ts';
import { type DraftResponse, DraftResponseSchema, type GoalRequest } from './plans-api-schemas.ts';

/** A draft as stored: what the API shows, plus the context the planner reads. */
export type DraftItem = DraftResponse & { readonly context?: string };

export interface DraftRunDeps extends RuntimeLaunchDeps {
  readonly provider: PlannerProvider;
  /** @default 4 */
  readonly maxRounds?: number;
}

const MAX_ROUND_PROBLEMS = 20;
const MAX_OPEN_PROBLEMS = 50;

/** Records a new draft (status `planning`) for `submittedBy`. */
export async function createDraft(
  deps: Pick<RuntimeLaunchDeps, 'dynamo' | 'tables'>,
  request: GoalRequest,
  submittedBy: string,
): Promise<DraftItem> {
  const now = new Date().toISOString();
  const item: DraftItem = {
    draftId: randomUUID(),
    status: 'planning',
    goal: request.goal,
    ...(request.context !== undefined ? { context: request.context } : {}),
    submittedBy,
    createdAt: now,
    updatedAt: now,
    rounds: [],
  };
  await deps.dynamo.send(
    new PutCommand({
      TableName: deps.tables.drafts,
      Item: item,
      ConditionExpression: 'attribute_not_exists(draftId)',
    }),
  );
  return item;
}

export async function readDraft(
  deps: Pick<RuntimeLaunchDeps, 'dynamo' | 'tables'>,
  draftId: string,
): Promise<DraftItem | undefined> {
  const out = await deps.dynamo.send(
    new GetCommand({ TableName: deps.tables.drafts, Key: { draftId }, ConsistentRead: true }),
  );
  return out.Item as DraftItem | undefined;
}

/** What the API shows of a draft: everything but the context it was given. */
export function draftResponse(item: DraftItem): DraftResponse {
  return DraftResponseSchema.parse(item);
}

/**
 * Drafts the plan and launches it. Safe to run again for the same draft (Lambda retries an
 * asynchronous invocation that failed): only a draft still `planning` is planned, and only the
 * run that moves it to `launching` launches, under the draft's id as the execution's name.
 */
export async function runDraft(deps: DraftRunDeps, draftId: string): Promise<DraftItem | undefined> {
  const draft = await readDraft(deps, draftId);
  if (draft?.status !== 'planning') return draft;
  const rounds: DraftResponse['rounds'] = [];
  let planned: Awaited<ReturnType<typeof planFromGoal>>;
  try {
    planned = await planFromGoal({
      goal: draft.goal,
      provider: deps.provider,
      context: draft.context,
      maxRounds: deps.maxRounds,
      onRound: (round) => {
        rounds.push({
          round: round.round,
          ...(round.steps ? { steps: [...round.steps] } : {}),
          problems: round.problems.slice(0, MAX_ROUND_PROBLEMS).map(formatProblem),
          inputTokens: round.inputTokens,
          outputTokens: round.outputTokens,
        });
      },
    });
  } catch (error) {
    return finish(deps, draftId, 'planning', {
      status: 'failed',
      provider: deps.provider.name,
      model: deps.provider.model,
      rounds,
      error: oneLine(error),
    });
  }
  const account = {
    provider: planned.provider,
    model: planned.model,
    rounds,
    outcome: planned.outcome,
  };
  if (!planned.plan)
    return finish(deps, draftId, 'planning', {
      ...account,
      status: 'failed',
      problems: planned.problems.slice(0, MAX_OPEN_PROBLEMS).map((p) => ({ ...p })),
    });
  const claimed = await finish(deps, draftId, 'planning', { ...account, status: 'launching' });
  if (!claimed) return readDraft(deps, draftId);
  try {
    const launched = await launchAtRunTime(deps, planned.plan, {
      submittedBy: draft.submittedBy,
      channel: 'planner',
      executionName: draftId,
      planner: {
        goal: draft.goal,
        provider: planned.provider,
        model: planned.model,
        rounds: planned.rounds.length,
        input_tokens: planned.inputTokens,
        output_tokens: planned.outputTokens,
      },
    });
    return finish(deps, draftId, 'launching', {
      status: 'launched',
      executionArn: launched.executionArn,
      plan: {
        id: planned.plan.id,
        version: planned.plan.version,
        digest: `sha256:${launched.deployed.digest}`,
      },
    });
  } catch (error) {
    return finish(deps, draftId, 'launching', { status: 'failed', error: oneLine(error) });
  }
}

/**
 * Moves the draft on from `from` (a conditional update, so two runs cannot both move it);
 * undefined when another run moved it first.
 */
async function finish(
  deps: Pick<RuntimeLaunchDeps, 'dynamo' | 'tables'>,
  draftId: string,
  from: DraftResponse['status'],
  change: Partial<Omit<DraftResponse, 'draftId' | 'goal' | 'submittedBy' | 'createdAt'>>,
): Promise<DraftItem | undefined> {
  const fields = Object.entries({ ...change, updatedAt: new Date().toISOString() });
  try {
    const out = await deps.dynamo.send(
      new UpdateCommand({
        TableName: deps.tables.drafts,
        Key: { draftId },
        UpdateExpression: `SET ${fields.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
        ConditionExpression: '#status = :from',
        ExpressionAttributeNames: {
          '#status': 'status',
          ...Object.fromEntries(fields.map(([name], i) => [`#f${i}`, name])),
        },
        ExpressionAttributeValues: {
          ':from': from,
          ...Object.fromEntries(fields.map(([, value], i) => [`:v${i}`, value])),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return out.Attributes as DraftItem;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** An error as one line: provider errors already name no key; this keeps a stack out of the record. */
function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 500 ? `${line.slice(0, 499)}…` : line;
}

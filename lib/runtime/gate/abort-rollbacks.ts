/**
 * What an escalation's ABORT will undo, shown to the person deciding: the rollbacks still to run,
 * in the order they run, by the rollback loop's own rule (steps/rollback.ts) over the journal's
 * completion order, each with its procedure as PLAN_CREATED recorded it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { readEvents } from '../journal/journal.ts';
import type { AbortRollback, ShownCall } from '../payloads/index.ts';
import { pendingRollbacks } from '../steps/rollback.ts';
import type { RecordedSteps } from './plan-diff.ts';

/**
 * The rollbacks an ABORT of `executionId` runs now, or undefined when its plan has none (or was
 * too large to record: nothing can be said then).
 */
export async function abortRollbacksOf(
  executionId: string,
  recorded: RecordedSteps | undefined,
  deps: { readonly dynamo: DynamoDBDocumentClient; readonly eventsTable: string },
): Promise<AbortRollback[] | undefined> {
  const procedures = Object.entries(recorded ?? {}).flatMap(([id, step]) =>
    step.rollback !== undefined ? [[id, step.rollback] as const] : [],
  );
  if (procedures.length === 0) return undefined;
  const byStep = new Map(procedures);
  const events = await readEvents(deps.dynamo, deps.eventsTable, executionId);
  return pendingRollbacks(events, [...byStep.keys()]).map((stepId) => ({
    stepId,
    ...recordedCall(byStep.get(stepId) ?? ''),
  }));
}

/** A recorded `{tool, args}` as the gate shows a call: a shell command as its text, else JSON. */
function recordedCall(recorded: string): { tool: string; call: ShownCall } {
  let parsed: { tool?: unknown; args?: Record<string, unknown> } | undefined;
  try {
    parsed = JSON.parse(recorded) as typeof parsed;
  } catch {
    // Shortened when long: shown as recorded.
  }
  const tool = typeof parsed?.tool === 'string' ? parsed.tool : 'unknown';
  const command = parsed?.args?.command;
  if (tool === 'shell' && typeof command === 'string')
    return { tool, call: { form: 'command', text: command } };
  return { tool, call: { form: 'json', text: parsed?.args ? JSON.stringify(parsed.args) : recorded } };
}

/**
 * What a step gate shows besides the step (whose view was compiled with it): the steps that
 * already completed in this execution with their evidence (their TASK_COMPLETED events), and the
 * values the step will consume (its `${steps.x.y}` references, read from the ledger entries the
 * gate request carries). Everything is redacted; no secret is ever resolved here.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  type CompletedStep,
  type ConsumedValue,
  EVENT_DETAILS,
  type GateRequest,
  type GateRevision,
  type JournalRecord,
  type StepGateView,
} from '../payloads/index.ts';
import { Redactor } from '../secrets/redact.ts';
import { truncateText } from '../shared/truncate.ts';
import { entryOutput } from '../steps/outputs-table.ts';
import { revisedStep } from './revised-view.ts';

/** Most completed steps listed (the latest); the gate item must stay far below DynamoDB's 400 KB. */
export const COMPLETED_LIMIT = 100;
/** Longest evidence excerpt and consumed value shown, in bytes. */
const EXCERPT_BYTES = 600;
const VALUE_BYTES = 2 * 1024;

/**
 * The step gate's view, when the request carries the step's compiled view (undefined otherwise),
 * from the execution's `events`. `step` stays the compiled view (every channel shows it through
 * the gate's revision, revised-view.ts); the values it consumes are those of the call `approved`
 * (the plan gate's approved revision) makes.
 */
export async function stepGateViewOf(
  req: Pick<GateRequest, 'stepId' | 'view' | 'inputs'>,
  events: readonly JournalRecord[],
  approved: GateRevision | undefined,
  deps: { readonly dynamo: DynamoDBDocumentClient },
): Promise<StepGateView | undefined> {
  if (!req.view) return undefined;
  const redactor = new Redactor();
  const completed: CompletedStep[] = [];
  for (const event of events) {
    if (event.event !== 'TASK_COMPLETED' || !event.task_id) continue;
    const details = EVENT_DETAILS.TASK_COMPLETED.safeParse(event.details);
    const evidence = details.success ? details.data.evidence : undefined;
    completed.push({
      id: event.task_id,
      ...(details.success ? { progress: redactor.text(details.data.progress) } : {}),
      ...(evidence
        ? {
            evidence: {
              kind: evidence.kind,
              passed: evidence.passed,
              summary: redactor.text(evidence.summary),
              ...(evidence.excerpt
                ? { excerpt: truncateText(redactor.text(evidence.excerpt), EXCERPT_BYTES).text }
                : {}),
            },
          }
        : {}),
    });
  }
  const runs = approved ? revisedStep(req.view, approved) : req.view;
  const references = [...(runs.call?.references ?? []), ...(runs.contract?.references ?? [])];
  const consumes: ConsumedValue[] = [];
  const seen = new Set<string>();
  for (const ref of references) {
    if (seen.has(ref.raw)) continue;
    seen.add(ref.raw);
    const output = await entryOutput(deps.dynamo, req.inputs?.[ref.step]).catch(() => undefined);
    const value = output?.[ref.output];
    consumes.push({
      ...ref,
      ...(value !== undefined
        ? { value: truncateText(JSON.stringify(redactor.value(value)), VALUE_BYTES).text }
        : {}),
    });
  }
  return {
    step: req.view,
    ...(completed.length > 0 ? { completed: completed.slice(-COMPLETED_LIMIT) } : {}),
    ...(completed.length > COMPLETED_LIMIT ? { completedNotListed: completed.length - COMPLETED_LIMIT } : {}),
    ...(consumes.length > 0 ? { consumes } : {}),
  };
}

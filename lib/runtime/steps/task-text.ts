/**
 * A step's task text as the agent or person who does the step reads it: its `${steps.<id>.<output>}`
 * and `${context.<key>}` references resolved, as its args are. Never secrets: task text is shown to
 * people and agents and kept in execution history (validation refuses `${secrets.*}` there, and no
 * secrets are given here to resolve one).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { StepEntry } from '../payloads/index.ts';
import { resolveReferences } from '../secrets/references.ts';
import { entryOutput } from './outputs-table.ts';

/** Outputs of earlier steps by step id, as references read them. */
export type StepOutputs = Readonly<Record<string, Readonly<Record<string, unknown>> | undefined>>;

/** `text` with its references resolved against the outputs `steps` and the plan's `context`. */
export async function resolveTaskText(
  text: string,
  steps: StepOutputs,
  context: Readonly<Record<string, unknown>> | undefined,
  stepId: string,
): Promise<string> {
  const resolved = await resolveReferences(text, { steps, context: context ?? {} }, `steps.${stepId}.task`);
  // A task that is one reference takes the value as is; the reader gets it as text.
  return typeof resolved === 'string' ? resolved : JSON.stringify(resolved);
}

/** The outputs of the ledger entries `inputs` (read back when stored outside the payload). */
export async function outputsOf(
  dynamo: DynamoDBDocumentClient,
  inputs: Readonly<Record<string, StepEntry>>,
): Promise<Record<string, Record<string, unknown> | undefined>> {
  const outputs: Record<string, Record<string, unknown> | undefined> = {};
  for (const [id, entry] of Object.entries(inputs)) outputs[id] = await entryOutput(dynamo, entry);
  return outputs;
}

/**
 * What an escalation's ABORT will undo, shown to the person deciding: the rollbacks still to run,
 * in the order they run, by the rollback loop's own rule (steps/rollback.ts) over the journal's
 * completion order, each with its procedure as PLAN_CREATED recorded it and, beside it, the call
 * as it will run: its values filled in from the journal's TASK_COMPLETED results and the plan's
 * context (a secret by its reference), with the risk marks of that filled call.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { callReach, callRisks, valueReach } from '../../plan/risks.ts';
import { REFERENCE_PATTERN } from '../../plan/schema.ts';
import { createToolRegistry } from '../../plan/tools.ts';
import { readEvents } from '../journal/journal.ts';
import type { AbortRollback, FilledValue, ShownCall } from '../payloads/index.ts';
import { completedOutputs, pendingRollbacks } from '../steps/rollback.ts';
import type { RecordedSteps } from './plan-diff.ts';

/** What fills a rollback's references now. */
interface FillScope {
  readonly steps: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly context: Readonly<Record<string, unknown>>;
}

/**
 * The rollbacks an ABORT of `executionId` runs now, or undefined when its plan has none (or was
 * too large to record: nothing can be said then). `context` is the plan's, as PLAN_CREATED
 * recorded it (absent: its references stay unfilled).
 */
export async function abortRollbacksOf(
  executionId: string,
  recorded: RecordedSteps | undefined,
  deps: { readonly dynamo: DynamoDBDocumentClient; readonly eventsTable: string },
  context?: Readonly<Record<string, unknown>>,
): Promise<AbortRollback[] | undefined> {
  const procedures = Object.entries(recorded ?? {}).flatMap(([id, step]) =>
    step.rollback !== undefined ? [[id, step.rollback] as const] : [],
  );
  if (procedures.length === 0) return undefined;
  const byStep = new Map(procedures);
  const events = await readEvents(deps.dynamo, deps.eventsTable, executionId);
  const scope: FillScope = { steps: completedOutputs(events), context: context ?? {} };
  return pendingRollbacks(events, [...byStep.keys()]).map((stepId) =>
    abortRollback(stepId, byStep.get(stepId) ?? '', scope),
  );
}

/** One rollback as recorded, and, when recorded whole, filled in with its marks. */
export function abortRollback(stepId: string, recorded: string, scope: FillScope): AbortRollback {
  let parsed: { tool?: unknown; args?: unknown } | undefined;
  try {
    parsed = JSON.parse(recorded) as typeof parsed;
  } catch {
    // Shortened by an earlier version of the record: shown as recorded, nothing to fill.
  }
  const tool = typeof parsed?.tool === 'string' ? parsed.tool : 'unknown';
  const args = isRecord(parsed?.args) ? parsed.args : undefined;
  if (!args) return { stepId, tool, call: { form: 'json', text: recorded } };
  const values: FilledValue[] = [];
  const filledArgs = fill(args, scope, values) as Record<string, unknown>;
  if (values.length === 0) return { stepId, tool, call: shown(tool, args), risks: risksOf(tool, args, []) };
  return {
    stepId,
    tool,
    call: shown(tool, args),
    filled: shown(tool, filledArgs),
    values,
    risks: risksOf(tool, filledArgs, values),
  };
}

/** A call as the gate shows it: a shell command as its text, anything else as JSON. */
function shown(tool: string, args: Record<string, unknown>): ShownCall {
  if (tool === 'shell' && typeof args.command === 'string') return { form: 'command', text: args.command };
  return { form: 'json', text: JSON.stringify(args) };
}

/**
 * Why the filled call is destructive and where it reaches outside the workspace: the command's
 * own words and `cwd`, and each value that would, were it used as a path (a value a command only
 * prints, pipes or hands to a program the analysis does not read is marked all the same).
 */
function risksOf(
  tool: string,
  args: Record<string, unknown>,
  values: readonly FilledValue[],
): NonNullable<AbortRollback['risks']> {
  const outside = [...callReach(tool, args)];
  for (const value of values) {
    if (value.value === undefined) continue;
    for (const reason of valueReach(value.raw, value.value))
      if (!outside.some((known) => known.includes(reason.slice(value.raw.length + 2)))) outside.push(reason);
  }
  return { destructive: [...callRisks(tool, args, createToolRegistry())], outsideWorkspace: outside };
}

/** `value` with each reference replaced by its value's text; `values` collects each reference once. */
function fill(value: unknown, scope: FillScope, values: FilledValue[]): unknown {
  if (typeof value === 'string')
    return value.replace(new RegExp(REFERENCE_PATTERN.source, 'g'), (raw, namespace, first, second) => {
      const found = lookup(namespace as string, first as string, second as string | undefined, scope);
      if (!values.some((v) => v.raw === raw)) values.push({ raw, ...found });
      return found.value ?? raw;
    });
  if (Array.isArray(value)) return value.map((item) => fill(item, scope, values));
  if (isRecord(value))
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fill(item, scope, values)]));
  return value;
}

/** A reference's value as text (as the run-time resolver interpolates it), or why there is none. */
function lookup(
  namespace: string,
  first: string,
  second: string | undefined,
  scope: FillScope,
): Omit<FilledValue, 'raw'> {
  if (namespace === 'secrets') return { secret: true };
  const top =
    namespace === 'steps'
      ? second !== undefined && Object.hasOwn(scope.steps, first)
        ? (scope.steps[first] as Record<string, unknown>)
        : undefined
      : scope.context;
  const key = namespace === 'steps' ? second : first;
  if (!top || key === undefined || !Object.hasOwn(top, key)) return {};
  let found = top[key];
  if (namespace === 'context' && second !== undefined) {
    if (!isRecord(found) || !Object.hasOwn(found, second)) return {};
    found = found[second];
  }
  return { value: typeof found === 'string' ? found : JSON.stringify(found) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

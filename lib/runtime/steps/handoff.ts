/**
 * Seed 003's `handoff.md`, rendered in one place: the worker renders it for its agent from the
 * activity's handoff, and `lib/files` renders it from the journal (TASK_STARTED keeps what the
 * plan does not say), so the task's file is byte for byte what the agent read. A person's step
 * and a tool's step get the same sections. Every section of the seed is there: task identity,
 * what to accomplish, context from prior tasks, required outputs, resource constraints, fallback
 * behaviours; then how to report, and on a retry why the last attempt failed.
 *
 * The text depends on nothing a store may reorder: values are listed by step and name, and a
 * value that is not a string is shown as canonical JSON.
 */
import { canonicalJson } from '../../plan/digest.ts';
import type { RecoveryTable } from '../../plan/recovery.ts';
import type { Contract, Step } from '../../plan/schema.ts';
import {
  AGENT_LOG_TAIL_BYTES,
  type Handoff,
  type PlanIdentity,
  type PreviousFailure,
  type RemainingBudget,
} from '../payloads/index.ts';
import { markdownCell } from '../shared/markdown.ts';

/** Characters of a value shown in the context table: the whole value is the earlier task's result. */
const VALUE_CHARACTERS = 2000;

/** Who does the step. */
export type HandoffDoer =
  | { readonly kind: 'agent'; readonly target: string }
  | { readonly kind: 'person' }
  | { readonly kind: 'tool'; readonly tool: string };

/** Everything a handoff says, whoever does the step. */
export interface HandoffDocument {
  readonly plan: PlanIdentity;
  readonly executionId: string;
  readonly stepId: string;
  readonly index: number;
  readonly total: number;
  readonly description: string;
  readonly doer: HandoffDoer;
  /** The task text, its references resolved (the description when the step has none). */
  readonly task: string;
  readonly subscriptions: readonly string[];
  readonly inputs: Handoff['inputs'];
  readonly outputs: readonly string[];
  readonly attempt: number;
  readonly contract?: Contract;
  readonly previousFailure: PreviousFailure | null;
  /** How long the doer has, and why when it is not the step's own limit. */
  readonly timeLimit?: { readonly seconds: number; readonly why?: string };
  readonly budget: RemainingBudget;
  readonly fallbacks: readonly string[];
}

/**
 * How long the agent may run: the step's timeout, cut to the plan's wall clock left when the step
 * started (at least a second: the runner stops the plan before a step when none is left).
 */
export function agentTimeoutSeconds(handoff: Pick<Handoff, 'timeoutSeconds' | 'budget'>): number {
  const left = handoff.budget.wallClockSeconds;
  return left === undefined
    ? handoff.timeoutSeconds
    : Math.max(1, Math.min(handoff.timeoutSeconds, Math.floor(left)));
}

/** The previous attempt's failure in a few lines, for the agent's prompt (seed 004 §7). */
export function failureNote(
  attempt: number,
  failure: PreviousFailure | null | undefined,
): string | undefined {
  if (!failure || (!failure.error && !failure.evidence)) return undefined;
  const evidence = failure.evidence;
  const lines = [`Previous attempt (${attempt - 1}) failed.`];
  if (evidence) {
    lines.push(`Contract \`${evidence.ran}\` ${evidence.reason ?? evidence.summary}.`);
    if (evidence.stderr) lines.push('Stderr:', evidence.stderr.trimEnd());
    else if (evidence.excerpt) lines.push('Output:', evidence.excerpt.trimEnd());
  } else if (failure.error) {
    lines.push(`${failure.error.Error}: ${causeMessage(failure.error.Cause)}`);
  }
  lines.push('Try again.');
  return lines.join('\n');
}

/** The prompt the agent reads on stdin: the task, and on a retry why the last attempt failed. */
export function agentPrompt(handoff: Handoff): string {
  const task = handoff.task ?? handoff.description;
  const note = failureNote(handoff.attempt, handoff.previousFailure);
  return note ? `${task}\n\n${note}\n` : task;
}

/** An agent's handoff as a document. */
export function agentHandoffDocument(handoff: Handoff): HandoffDocument {
  const seconds = agentTimeoutSeconds(handoff);
  return {
    plan: handoff.plan,
    executionId: handoff.executionId,
    stepId: handoff.stepId,
    index: handoff.index,
    total: handoff.total,
    description: handoff.description,
    doer: { kind: 'agent', target: handoff.target },
    task: handoff.task ?? handoff.description,
    subscriptions: handoff.subscriptions,
    inputs: handoff.inputs,
    outputs: handoff.outputs,
    attempt: handoff.attempt,
    contract: handoff.contract,
    previousFailure: handoff.previousFailure,
    timeLimit: {
      seconds,
      why: seconds < handoff.timeoutSeconds ? "the plan's wall-clock budget left" : undefined,
    },
    budget: handoff.budget,
    fallbacks: handoff.fallbacks,
  };
}

/** The `handoff.md` an agent reads (what the worker writes to `$PLANGATE_HANDOFF`). */
export function renderHandoff(handoff: Handoff): string {
  return renderHandoffDocument(agentHandoffDocument(handoff));
}

/** Seed 003's handoff.md of any step. */
export function renderHandoffDocument(doc: HandoffDocument): string {
  const note = failureNote(doc.attempt, doc.previousFailure);
  return [
    `# Handoff: Task ${doc.index}/${doc.total} — ${doc.description}`,
    '',
    '## Task identity',
    '',
    '| | |',
    '|---|---|',
    `| Plan | \`${doc.plan.id}\` v${doc.plan.version} (${doc.plan.digest}) |`,
    `| Execution | ${markdownCell(doc.executionId)} |`,
    `| Task | ${doc.index} of ${doc.total}: \`${doc.stepId}\` |`,
    `| Attempt | ${doc.attempt} |`,
    `| Done by | ${doerText(doc.doer)} |`,
    '',
    '## What to accomplish',
    '',
    doc.task,
    '',
    '## Context from prior tasks',
    '',
    ...contextLines(doc),
    '',
    '## Required outputs',
    '',
    ...outputLines(doc),
    '',
    '## Resource constraints',
    '',
    ...constraintLines(doc),
    '',
    '## Fallback behaviors',
    '',
    ...(doc.fallbacks.length > 0 ? doc.fallbacks.map((f) => `- ${f}`) : ['None declared.']),
    '',
    '## How to report',
    '',
    ...reportLines(doc),
    '',
    ...(note ? ['## Earlier attempts', '', note, ''] : []),
  ].join('\n');
}

function doerText(doer: HandoffDoer): string {
  if (doer.kind === 'agent') return `agent \`${doer.target}\` (a worker of this target)`;
  if (doer.kind === 'person') return 'a person (requiresHuman)';
  return `the harness, with the \`${doer.tool}\` tool`;
}

function contextLines(doc: HandoffDocument): string[] {
  const values = Object.keys(doc.inputs)
    .sort()
    .flatMap((from) => {
      const outputs = doc.inputs[from] ?? {};
      return Object.keys(outputs)
        .sort()
        .map((name) => `| \`${name}\` | \`${from}\` | ${valueCell(outputs[name])} |`);
    });
  return [
    ...(values.length === 0
      ? ['None.']
      : ['| Value | From | Captured |', '|-------|------|----------|', ...values]),
    ...(doc.subscriptions.length > 0
      ? ['', 'Subscriptions (seed 004: read these first):', ...doc.subscriptions.map((s) => `- ${s}`)]
      : []),
  ];
}

function outputLines(doc: HandoffDocument): string[] {
  if (doc.outputs.length === 0) return ['None declared.'];
  const how =
    doc.doer.kind === 'agent'
      ? (o: string) => ` (append \`${o}=<value>\` to $PLANGATE_OUTPUT)`
      : doc.doer.kind === 'person'
        ? (o: string) => ` (report it as \`--value ${o}=<value>\`)`
        : () => '';
  return doc.outputs.map((o) => `- \`${o}\`${how(o)}`);
}

/** Seed 003's constraints: the time the doer has, its command limit, the plan's budget left. */
function constraintLines(doc: HandoffDocument): string[] {
  const { budget, timeLimit } = doc;
  const agent = doc.doer.kind === 'agent';
  const lines = [
    ...(timeLimit
      ? [`- Finish within ${timeLimit.seconds} s${timeLimit.why ? ` (${timeLimit.why})` : ''}.`]
      : []),
    ...(budget.maxCommands !== undefined
      ? [
          `- Run at most ${budget.maxCommands} commands; when near the limit, conclude with the data you have.`,
        ]
      : []),
    ...(budget.tokens !== undefined ? [`- Tokens left in the plan's budget: ${budget.tokens}.`] : []),
    ...(budget.costUsd !== undefined
      ? [`- Cost left in the plan's budget: $${budget.costUsd.toFixed(2)}.`]
      : []),
    ...(agent && (budget.tokens !== undefined || budget.costUsd !== undefined)
      ? [
          '- Report what you used as the last line of your output: `{"usage": {"tokens": N, "cost_usd": X}}` (or Claude Code\'s JSON result).',
        ]
      : []),
    ...(agent ? ['- Work in the workspace you are started in; write nothing outside it.'] : []),
  ];
  return lines.length > 0 ? lines : ['None.'];
}

function reportLines(doc: HandoffDocument): string[] {
  const contract = doc.contract?.kind === 'command' ? ['', '```shell', doc.contract.command, '```'] : [];
  if (doc.doer.kind === 'agent')
    return [
      `- Append each command you run and its output to $PLANGATE_LOG (the last ${AGENT_LOG_TAIL_BYTES / 1024} KB go to the task's execution.log).`,
      "- Write `summary: <text>`, `blocker: <text>` and `deviation: <text>` lines (one per line, as many as there are) to $PLANGATE_REPORT: the task's result.md lists them.",
      '- You cannot mark this task done: the harness runs the contract below after you exit.',
      ...contract,
    ];
  if (doc.doer.kind === 'person') {
    const values = doc.outputs.map((o) => ` --value ${o}=<value>`).join('');
    return [
      `- When it is done: \`plangate complete ${doc.executionId} ${doc.stepId}${values}\` (add \`--store DIR\` when the run uses another store than .plangate), or answer in the \`plangate run\` terminal or on the approval page it links.`,
      `- If it cannot be done: \`plangate complete ${doc.executionId} ${doc.stepId} --failed "<why>"\`: the step's recovery decides.`,
      "- What you report is then checked by the step's contract, not taken on your word.",
      ...contract,
    ];
  }
  return [
    '- The harness runs the tool and records its result; only its contract completes the step.',
    ...contract,
  ];
}

/**
 * Seed 003's fallback behaviours of a step, from the plan (the same lines in the worker's handoff,
 * compiled into the definition, and in the task's file): what follows a failed contract or a
 * failed attempt, what to do when a value is missing, and what becomes of the work if the run stops.
 */
export function handoffFallbacks(
  step: Pick<Step, 'critical' | 'rollback'>,
  recovery: RecoveryTable,
): string[] {
  const logic = recovery.logic;
  return [
    `If the contract fails: ${logic.maxAttempts > 0 ? `the step is tried again up to ${logic.maxAttempts} more time(s), each new attempt's handoff saying why the last failed; then ` : ''}${ESCALATION_TEXT[logic.escalation]}.`,
    "If the attempt itself fails (an error, the time runs out): the failure is classified and the plan's recipe for its class decides (retry, then the same as above).",
    'If a value you need is missing or not available: do not guess it; write "unavailable" where it goes, report it as a blocker, and finish what you can.',
    'Never retry the same approach more than twice.',
    step.critical
      ? 'Critical: if this step does not complete, the run stops.'
      : 'Not critical: if this step is skipped, the steps that do not depend on it go on.',
    ...(step.rollback
      ? [
          `If the run is aborted later, this step's work is undone by its rollback (\`${step.rollback.tool}\`).`,
        ]
      : []),
  ];
}

const ESCALATION_TEXT: Record<RecoveryTable['logic']['escalation'], string> = {
  ask: 'a person decides (retry, skip or abort)',
  skip: 'the step is skipped',
  abort: 'the run is aborted (completed steps with a rollback are undone)',
};

function valueCell(value: unknown): string {
  const text = typeof value === 'string' ? value : (canonicalJson(value) ?? '');
  return markdownCell(
    text.length > VALUE_CHARACTERS
      ? `${text.slice(0, VALUE_CHARACTERS)}… (${text.length - VALUE_CHARACTERS} more characters)`
      : text,
  );
}

function causeMessage(cause: string | undefined): string {
  if (!cause) return 'no details';
  try {
    const parsed = JSON.parse(cause) as { message?: unknown; errorMessage?: unknown };
    if (typeof parsed.message === 'string') return parsed.message;
    if (typeof parsed.errorMessage === 'string') return parsed.errorMessage;
  } catch {
    // Not JSON: the cause is the message.
  }
  return cause;
}

/**
 * What an agent step's activity Task hands a worker (lib/compiler/step-task.ts builds it), and
 * the seed 003 `handoff.md` the worker writes from it for the agent.
 */
import { z } from 'zod';
import { ContractSchema, IdSchema } from '../plan/schema.ts';
import {
  ErrorOutputSchema,
  PlanIdentitySchema,
  RemainingBudgetSchema,
  WorkerEvidenceSchema,
} from '../runtime/payloads/index.ts';
import { markdownCell } from '../runtime/shared/markdown.ts';

export const HandoffSchema = z.object({
  plan: PlanIdentitySchema,
  executionId: z.string().min(1),
  stepId: IdSchema,
  index: z.number().int().min(1),
  total: z.number().int().min(1),
  description: z.string(),
  target: z.string().min(1),
  task: z.string().optional(),
  subscriptions: z.array(z.string()).default([]),
  /** The step's args, references resolved (no secrets: those are refused before dispatch). */
  args: z.record(z.string(), z.unknown()).default({}),
  /** Captured outputs of the steps it depends on, by step id. */
  inputs: z.record(z.string(), z.record(z.string(), z.unknown()).nullable().optional()).default({}),
  outputs: z.array(IdSchema).default([]),
  attempt: z.number().int().min(1),
  /** The contract from the approved definition: the only one the worker runs. */
  contract: ContractSchema.optional(),
  /** Why the previous attempt failed, on a retry. */
  previousFailure: z
    .object({ error: ErrorOutputSchema.optional(), evidence: WorkerEvidenceSchema.optional() })
    .nullable()
    .default(null),
  timeoutSeconds: z.number().int().positive(),
  heartbeatSeconds: z.number().int().positive(),
  /** What was left of the plan's budget when the step started, and its command limit. */
  budget: RemainingBudgetSchema.default({}),
});
export type Handoff = z.infer<typeof HandoffSchema>;

/**
 * How long the agent may run: the step's timeout, cut to the plan's wall clock left when the step
 * started (at least a second: the runner stops the plan before a step when none is left).
 */
export function agentTimeoutSeconds(handoff: Handoff): number {
  const left = handoff.budget.wallClockSeconds;
  return left === undefined
    ? handoff.timeoutSeconds
    : Math.max(1, Math.min(handoff.timeoutSeconds, Math.floor(left)));
}

/** The previous attempt's failure in a few lines, for the agent's prompt (seed 004 §7). */
export function failureNote(handoff: Handoff): string | undefined {
  const failure = handoff.previousFailure;
  if (!failure || (!failure.error && !failure.evidence)) return undefined;
  const evidence = failure.evidence;
  const lines = [`Previous attempt (${handoff.attempt - 1}) failed.`];
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
  const note = failureNote(handoff);
  return note ? `${task}\n\n${note}\n` : task;
}

/** Seed 003's handoff.md: identity, goal, values from prior tasks, outputs, constraints. */
export function renderHandoff(handoff: Handoff): string {
  const values = Object.entries(handoff.inputs).flatMap(([from, outputs]) =>
    Object.entries(outputs ?? {}).map(([name, value]) => ({ from, name, value })),
  );
  const note = failureNote(handoff);
  return [
    `# Handoff: Task ${handoff.index}/${handoff.total} — ${handoff.description}`,
    '',
    `**Plan:** ${handoff.plan.id} v${handoff.plan.version} (${handoff.plan.digest})`,
    `**Step:** \`${handoff.stepId}\` (attempt ${handoff.attempt})`,
    `**Agent:** ${handoff.target}`,
    '',
    '## What to accomplish',
    '',
    handoff.task ?? handoff.description,
    '',
    '## Context from prior tasks',
    '',
    ...(values.length === 0
      ? ['None.']
      : [
          '| Value | From | Captured |',
          '|-------|------|----------|',
          ...values.map((v) => `| \`${v.name}\` | \`${v.from}\` | ${cell(v.value)} |`),
        ]),
    '',
    '## Subscriptions',
    '',
    ...(handoff.subscriptions.length === 0 ? ['None.'] : handoff.subscriptions.map((s) => `- ${s}`)),
    '',
    '## Required outputs',
    '',
    ...(handoff.outputs.length === 0
      ? ['None declared.']
      : handoff.outputs.map((o) => `- \`${o}\` (append \`${o}=<value>\` to $PLANGATE_OUTPUT)`)),
    '',
    '## Constraints',
    '',
    ...constraints(handoff),
    '- You cannot mark this task done: the harness runs the contract below after you exit.',
    ...(handoff.contract?.kind === 'command' ? ['', '```shell', handoff.contract.command, '```'] : []),
    '',
    ...(note ? ['## Earlier attempts', '', note, ''] : []),
  ].join('\n');
}

/** Seed 003's constraints: the time the agent has, its command limit, the plan's budget left. */
function constraints(handoff: Handoff): string[] {
  const { budget } = handoff;
  const seconds = agentTimeoutSeconds(handoff);
  return [
    `- Finish within ${seconds} s${seconds < handoff.timeoutSeconds ? " (the plan's wall-clock budget left)" : ''}.`,
    ...(budget.maxCommands !== undefined ? [`- Run at most ${budget.maxCommands} commands.`] : []),
    ...(budget.tokens !== undefined ? [`- Tokens left in the plan's budget: ${budget.tokens}.`] : []),
    ...(budget.costUsd !== undefined
      ? [`- Cost left in the plan's budget: $${budget.costUsd.toFixed(2)}.`]
      : []),
    ...(budget.tokens !== undefined || budget.costUsd !== undefined
      ? [
          '- Report what you used as the last line of your output: `{"usage": {"tokens": N, "cost_usd": X}}` (or Claude Code\'s JSON result).',
        ]
      : []),
  ];
}

function cell(value: unknown): string {
  return markdownCell(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
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

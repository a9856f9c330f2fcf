/**
 * Seed 001's third recovery strategy, asking the model: a step failed in a way no recovery recipe
 * covers, and the run has a planner. The model is shown the plan, the step and its failure, and
 * proposes one of retry with changed args, skip, insert recovery steps, or abort, with its reasons.
 * Its answer is hostile input: read only through RecoverySuggestionSchema (closed shapes, bounded
 * sizes), and a suggestion that changes the plan is applied to a new version that must pass the
 * validator, as any plan does, before a person is shown it. A person still decides.
 */

import { z } from 'zod';
import { planDigest } from '../plan/digest.ts';
import { formatProblem, hasErrors } from '../plan/problems.ts';
import type { Plan, Step } from '../plan/schema.ts';
import { BUILTIN_TOOLS, type ToolDefinition, ToolRegistry } from '../plan/tools.ts';
import { validatePlan } from '../plan/validate.ts';
import {
  type RecoveryAdvice,
  type RecoveryAdviceRefused,
  type RecoveryAdviceRequest,
  type RecoverySuggestion,
  RecoverySuggestionSchema,
} from '../runtime/payloads/index.ts';
import { toolCatalogue } from './prompt.ts';
import type { PlannerProvider } from './provider.ts';

/** Longest answer read: a suggestion is a few sentences and at most a few steps. */
export const MAX_SUGGESTION_BYTES = 64 * 1024;
/** Longest plan text shown to the model (a larger plan is cut, and the model told). */
const MAX_PLAN_CHARS = 60_000;

export interface AdviseRecoveryOptions {
  readonly provider: PlannerProvider;
  /** The plan as approved (the version that failed). */
  readonly plan: Plan;
  readonly request: RecoveryAdviceRequest;
  /** @default lib/plan's built-in tools */
  readonly tools?: readonly ToolDefinition[];
  /** @default 4096 */
  readonly maxOutputTokens?: number;
  /** Report the new version's shell commands that are not valid shell. @default true */
  readonly checkShell?: boolean;
  /** Seconds the model may take. @default the provider's request timeout */
  readonly timeBudgetSeconds?: number;
}

/** The advice, and for a revising suggestion the new version it makes (valid, not yet gated). */
export interface AdvisedRecovery {
  readonly advice: RecoveryAdvice;
  readonly revised?: { readonly plan: Plan; readonly digest: string };
}

const SYSTEM = `You advise plangate, a plan-execution harness, when a step of an approved plan fails in a way that no recovery recipe covers. Propose exactly one strategy, with your reasons:
- retry_with_args: run the failed step again with new values for some of its args ("args": only the args to change).
- skip: skip the failed step (steps that depend on it do not run).
- insert_steps: new steps that run before the failed step, which then runs again after them ("steps": plan steps, each with an id, description, tool, args and a contract that proves it; a contract only checks, it never changes anything).
- abort: stop the run.
A person decides. A suggestion that changes the plan becomes a new version of it, which is checked by the validator and approved at the gate like any plan. Never write a secret's value; reference secrets as \${secrets.name}.
Answer with one JSON object: {"strategy": ..., "reasons": ..., "args"|"steps": ...}.`;

/** The suggestion's JSON Schema, as the model is asked to answer in it. */
function suggestionJsonSchema(): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(RecoverySuggestionSchema, {
    io: 'input',
    unrepresentable: 'any',
  });
  return schema;
}

export async function adviseRecovery(
  options: AdviseRecoveryOptions,
): Promise<AdvisedRecovery | RecoveryAdviceRefused> {
  const { provider, plan, request } = options;
  const refused = (reason: string): RecoveryAdviceRefused => ({
    refused: reason,
    provider: provider.name,
    model: provider.model,
  });
  const step = plan.steps.find((s) => s.id === request.stepId);
  if (!step) return refused(`the plan has no step "${request.stepId}"`);
  const tools = options.tools ?? BUILTIN_TOOLS;
  let proposal: Awaited<ReturnType<PlannerProvider['propose']>>;
  try {
    proposal = await provider.propose({
      system: [SYSTEM, '', 'Tools a step may call:', ...toolCatalogue(tools)].join('\n'),
      messages: [{ role: 'user', content: failureMessage(plan, step, request) }],
      planSchema: suggestionJsonSchema(),
      answer: { name: 'recovery', description: 'recovery suggestion: one strategy with its reasons' },
      maxOutputTokens: options.maxOutputTokens ?? 4096,
      signal: options.timeBudgetSeconds ? AbortSignal.timeout(options.timeBudgetSeconds * 1000) : undefined,
    });
  } catch (error) {
    return refused(`the model could not be asked: ${(error as Error).message}`);
  }
  const read = readSuggestion(proposal);
  if (typeof read === 'string') return refused(read);
  const advice: RecoveryAdvice = {
    suggestion: read,
    provider: provider.name,
    model: provider.model,
    inputTokens: proposal.inputTokens,
    outputTokens: proposal.outputTokens,
  };
  if (read.strategy !== 'retry_with_args' && read.strategy !== 'insert_steps') return { advice };
  const plan2 = revisedPlan(plan, step, read);
  const validation = await validatePlan(plan2, {
    file: 'suggestion',
    tools: options.tools ? new ToolRegistry(options.tools) : undefined,
    checkShell: options.checkShell,
  });
  if (hasErrors(validation.problems))
    return refused(
      `the suggested ${read.strategy} does not make a valid plan: ${validation.problems
        .filter((p) => p.severity === 'error')
        .map(formatProblem)
        .join('; ')}`,
    );
  const digest = planDigest(plan2);
  return {
    advice: { ...advice, revision: { version: plan2.version, digest: `sha256:${digest}` } },
    revised: { plan: plan2, digest },
  };
}

/** What the model is told: the failed step and its failure, then the whole plan as approved. */
function failureMessage(plan: Plan, step: Step, request: RecoveryAdviceRequest): string {
  const planText = JSON.stringify(plan);
  return [
    `Step "${step.id}" (${step.description}) failed on attempt ${request.attempt}, in its ${request.failure.phase === 'run' ? 'run' : 'contract check'}.`,
    `Failure: ${request.failure.error}: ${request.failure.message}`,
    'No recovery recipe covers it.',
    '',
    `The plan (${plan.id} v${plan.version})${planText.length > MAX_PLAN_CHARS ? ', cut to fit' : ''}:`,
    planText.length > MAX_PLAN_CHARS ? `${planText.slice(0, MAX_PLAN_CHARS)}…` : planText,
    '',
    'What should happen next?',
  ].join('\n');
}

/** The model's answer as a suggestion, or why it is refused (in words a person can act on). */
export function readSuggestion(proposal: {
  readonly structured?: unknown;
  readonly text?: string;
}): RecoverySuggestion | string {
  let value: unknown = proposal.structured;
  if (value === undefined || value === null) {
    if (proposal.text === undefined) return 'the model gave no answer';
    if (Buffer.byteLength(proposal.text) > MAX_SUGGESTION_BYTES)
      return `the answer is ${Buffer.byteLength(proposal.text)} bytes; a suggestion must fit in ${MAX_SUGGESTION_BYTES}`;
    const fenced = /```(?:json)?[^\n]*\n([\s\S]*?)```/i.exec(proposal.text);
    try {
      value = JSON.parse(fenced ? (fenced[1] as string) : proposal.text.trim());
    } catch {
      return 'the answer is not a JSON object';
    }
  } else if (Buffer.byteLength(JSON.stringify(value) ?? '') > MAX_SUGGESTION_BYTES)
    return `the answer is larger than ${MAX_SUGGESTION_BYTES} bytes`;
  const parsed = RecoverySuggestionSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? `/${issue.path.join('/')}` : '(answer)'}: ${issue.message}`);
  return `the answer is not a recovery suggestion: ${issues.join('; ')}`;
}

/**
 * The next version a revising suggestion makes: the failed step's args changed, or the new steps
 * before it (after its own dependencies, when they name none); never auto-approvable.
 */
export function revisedPlan(
  plan: Plan,
  step: Step,
  suggestion: Extract<RecoverySuggestion, { strategy: 'retry_with_args' | 'insert_steps' }>,
): Plan {
  const next = {
    ...plan,
    version: plan.version + 1,
    approval: { ...plan.approval, allowAutoApprove: false },
  };
  if (suggestion.strategy === 'retry_with_args')
    return {
      ...next,
      steps: plan.steps.map((s) =>
        s.id === step.id ? { ...s, args: { ...s.args, ...suggestion.args } } : s,
      ),
    };
  const inserted = suggestion.steps.map((s) =>
    s.dependsOn.length > 0 ? s : { ...s, dependsOn: [...step.dependsOn] },
  );
  const steps: Step[] = [];
  for (const s of plan.steps) {
    if (s.id === step.id)
      steps.push(...inserted, { ...s, dependsOn: [...s.dependsOn, ...inserted.map((n) => n.id)] });
    else steps.push(s);
  }
  return { ...next, steps };
}

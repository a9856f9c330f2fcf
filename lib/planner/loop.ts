/**
 * The LLM-Modulo loop (seed 002, after Kambhampati et al.): the model proposes, lib/plan's
 * validator decides. Each round's located problems go back to the model verbatim; the loop ends at
 * a valid plan, after `maxRounds`, or when the token or time budget is spent. Whatever the model
 * wrote, the plan still goes through the gate: a planned plan never allows auto-approval.
 */
import { formatProblem, hasErrors, type Problem, sortProblems } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { BUILTIN_TOOLS, type ToolDefinition, ToolRegistry } from '../plan/tools.ts';
import { validatePlan } from '../plan/validate.ts';
import { readAnswer } from './answer.ts';
import { goalMessage, planJsonSchema, systemPrompt, workspaceListing } from './prompt.ts';
import type { ChatMessage, PlannerProvider } from './provider.ts';

export interface PlanFromGoalOptions {
  readonly goal: string;
  /** More about the goal (a file's text): constraints, conventions, what exists. */
  readonly context?: string;
  /** A directory whose file names and sizes (not contents) the model may see. */
  readonly workspace?: string;
  readonly provider: PlannerProvider;
  /** @default lib/plan's built-in tools */
  readonly tools?: readonly ToolDefinition[];
  /** @default 4 */
  readonly maxRounds?: number;
  /** Tokens (input + output, all rounds) one planning call may spend. @default 200000 */
  readonly tokenBudget?: number;
  /** Seconds one planning call may take. @default 300 */
  readonly timeBudgetSeconds?: number;
  /** @default 8192 */
  readonly maxOutputTokens?: number;
  /** Report shell commands that are not valid shell, as `plangate validate` does. @default true */
  readonly checkShell?: boolean;
  /** Told of each round as it ends. */
  readonly onRound?: (round: PlanningRound) => void;
  /**
   * A revision: the version a person answered at the gate and what they asked (a question or the
   * reason they rejected it). The new plan keeps its id and takes the next version.
   * @default - a first version
   */
  readonly revise?: { readonly plan: Plan; readonly feedback: string };
}

export interface PlanningRound {
  readonly round: number;
  /** The step ids the model proposed, when its answer was a plan at all. */
  readonly steps?: readonly string[];
  readonly problems: readonly Problem[];
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly milliseconds: number;
}

export type PlanningOutcome = 'converged' | 'max-rounds' | 'token-budget' | 'time-budget';

export interface PlanningResult {
  /** Set only when the last round's plan passed the validator. */
  readonly plan?: Plan;
  /** The problems still open (empty when converged). */
  readonly problems: readonly Problem[];
  readonly rounds: readonly PlanningRound[];
  readonly outcome: PlanningOutcome;
  readonly provider: string;
  readonly model: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** Longest echo of the model's own answer sent back with the problems. */
const MAX_ECHO_CHARS = 20_000;
/** A round that may not answer with at least this many tokens cannot hold a plan: it is not asked. */
const MIN_OUTPUT_TOKENS = 1024;
/**
 * Characters per token when estimating a round's input before sending it: tokenizers give about
 * 4 for English and JSON; 3 errs on the side of the budget.
 */
const CHARS_PER_TOKEN = 3;

function estimateTokens(system: string, messages: readonly ChatMessage[], schemaChars: number): number {
  const chars = messages.reduce((n, m) => n + m.content.length, system.length + schemaChars);
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

export async function planFromGoal(options: PlanFromGoalOptions): Promise<PlanningResult> {
  const tools = options.tools ?? BUILTIN_TOOLS;
  const maxRounds = options.maxRounds ?? 4;
  const tokenBudget = options.tokenBudget ?? 200_000;
  const deadline = Date.now() + (options.timeBudgetSeconds ?? 300) * 1000;
  const system = systemPrompt(tools);
  const planSchema = planJsonSchema();
  const messages: ChatMessage[] = [
    {
      role: 'user',
      content: goalMessage({
        goal: options.goal,
        context: options.context,
        workspace: options.workspace ? await workspaceListing(options.workspace) : undefined,
        tools,
      }),
    },
  ];
  if (options.revise)
    messages.push(
      { role: 'assistant', content: JSON.stringify(options.revise.plan) },
      {
        role: 'user',
        content: `The approver did not approve this plan and said: ${options.revise.feedback}\nRevise the plan to answer that, keeping its id, and answer with the whole plan.`,
      },
    );
  const version = options.revise ? options.revise.plan.version + 1 : 1;
  const id = options.revise?.plan.id;
  const rounds: PlanningRound[] = [];
  let inputTokens = 0;
  let outputTokens = 0;
  let problems: Problem[] = [];
  const result = (outcome: PlanningOutcome, plan?: Plan): PlanningResult => ({
    plan,
    problems,
    rounds,
    outcome,
    provider: options.provider.name,
    model: options.provider.model,
    inputTokens,
    outputTokens,
  });

  const schemaChars = JSON.stringify(planSchema).length;
  for (let round = 1; round <= maxRounds; round++) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return result('time-budget');
    // The budget is checked before a round, not after it: the round's input is estimated from its
    // text and its output capped to what is left, so a round never takes the total past it.
    const tokensLeft = tokenBudget - inputTokens - outputTokens;
    const inputEstimate = estimateTokens(system, messages, schemaChars);
    const maxOutputTokens = Math.min(options.maxOutputTokens ?? 8192, tokensLeft - inputEstimate);
    if (maxOutputTokens < MIN_OUTPUT_TOKENS) return result('token-budget');
    const started = Date.now();
    const proposal = await options.provider.propose({
      system,
      messages,
      planSchema,
      maxOutputTokens,
      signal: AbortSignal.timeout(remaining),
    });
    inputTokens += proposal.inputTokens;
    outputTokens += proposal.outputTokens;
    const answer = readAnswer(proposal);
    problems = [...answer.problems];
    const plan = answer.plan ? throughTheGate(answer.plan, version, id) : undefined;
    if (plan) {
      const validation = await validatePlan(plan, {
        file: 'plan',
        tools: options.tools ? new ToolRegistry(options.tools) : undefined,
        checkShell: options.checkShell,
      });
      problems = sortProblems([...problems, ...validation.problems]);
    }
    const record: PlanningRound = {
      round,
      steps: plan?.steps.map((s) => s.id),
      problems,
      inputTokens: proposal.inputTokens,
      outputTokens: proposal.outputTokens,
      milliseconds: Date.now() - started,
    };
    rounds.push(record);
    options.onRound?.(record);
    if (plan && !hasErrors(problems)) return result('converged', plan);
    const echo =
      proposal.structured !== undefined ? JSON.stringify(proposal.structured) : (proposal.text ?? '');
    messages.push(
      {
        role: 'assistant',
        content: echo.length > MAX_ECHO_CHARS ? `${echo.slice(0, MAX_ECHO_CHARS)}…` : echo || '(empty)',
      },
      {
        role: 'user',
        content: [
          'The validator refused this plan. Fix every problem below and answer with the whole corrected plan:',
          ...problems.filter((p) => p.severity === 'error').map((p) => `- ${formatProblem(p)}`),
        ].join('\n'),
      },
    );
  }
  return result('max-rounds');
}

/**
 * What the model may not decide: the id of a plan it revises, the version (the harness numbers
 * versions) and whether the plan can be approved without a person.
 */
function throughTheGate(plan: Plan, version: number, id: string | undefined): Plan {
  return { ...plan, id: id ?? plan.id, version, approval: { ...plan.approval, allowAutoApprove: false } };
}

/**
 * `plangate plan "<goal>"`: an LLM drafts a plan and plangate's validator checks it, round by
 * round, until it passes or the rounds run out. Writes the plan only when it is valid.
 */
import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parseArgs } from 'node:util';
import { formatProblem } from '../plan/problems.ts';
import { renderJson, renderYaml } from '../plan/render.ts';
import { type PlanningRound, planFromGoal } from '../planner/loop.ts';
import { PlannerProviderError } from '../planner/provider.ts';
import { PLANNER_OPTIONS, PLANNER_OPTIONS_HELP, plannerSettings } from './planner-options.ts';

export const usage = `Usage: plangate plan "<goal>" [options]

Asks a model for a plan that reaches the goal, checks it with the validator, and sends every
located problem back, until the plan passes (exit 0; written to --out) or the rounds run out
(exit 1; the problems still open are listed, nothing is written).

Options:
${PLANNER_OPTIONS_HELP}
  --out FILE            where to write the plan: .yaml, .yml or .json (default plan.yaml)
  -h, --help            show this help

Credentials: Bedrock uses the AWS default credential chain and region; OpenAI reads
OPENAI_API_KEY. Keys never appear in output or errors.

Exit codes: 0 a valid plan was written, 1 no valid plan, 2 usage or provider error.`;

export async function run(argv: string[]): Promise<number> {
  let values: ReturnType<typeof options>['values'];
  let positionals: string[];
  try {
    ({ values, positionals } = options(argv));
  } catch (error) {
    process.stderr.write(`plangate plan: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  const goal = positionals.join(' ').trim();
  const out = values.out ?? 'plan.yaml';
  const format = { '.yaml': 'yaml', '.yml': 'yaml', '.json': 'json' }[extname(out).toLowerCase()] as
    | 'yaml'
    | 'json'
    | undefined;
  const usageError = !goal
    ? 'say the goal, e.g. plangate plan "add a health check to the API"'
    : !format
      ? `--out must end in .yaml, .yml or .json, not "${out}"`
      : undefined;
  if (usageError) {
    process.stderr.write(`plangate plan: ${usageError}\n\n${usage}\n`);
    return 2;
  }
  try {
    const settings = await plannerSettings(values);
    if (typeof settings === 'string') {
      process.stderr.write(`plangate plan: ${settings}\n\n${usage}\n`);
      return 2;
    }
    const { provider, loop } = settings;
    process.stdout.write(
      `Planning with ${provider.name} ${provider.model} (at most ${loop.maxRounds} rounds)\n`,
    );
    const result = await planFromGoal({
      goal,
      provider,
      ...loop,
      onRound: (round) => printRound(round, process.stdout),
    });
    const tokens = `${result.inputTokens} input + ${result.outputTokens} output tokens`;
    if (!result.plan) {
      process.stdout.write(
        `No valid plan (${result.outcome}) after ${result.rounds.length} round(s), ${tokens}. Nothing written.\n`,
      );
      return 1;
    }
    await writeFile(out, format === 'json' ? renderJson(result.plan) : renderYaml(result.plan));
    process.stdout.write(
      `✓ ${out}: plan "${result.plan.id}" v${result.plan.version}, ${result.plan.steps.length} steps, valid after ${result.rounds.length} round(s), ${tokens}. It still goes through the approval gate.\n`,
    );
    return 0;
  } catch (error) {
    if (error instanceof PlannerProviderError) {
      process.stderr.write(`plangate plan: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

/** One round as `plangate plan` and `plangate run --goal` print it: what came back, and every problem. */
export function printRound(round: PlanningRound, out: NodeJS.WritableStream): void {
  const errors = round.problems.filter((p) => p.severity === 'error');
  out.write(
    `Round ${round.round}: ${round.steps ? `${round.steps.length} steps (${round.steps.join(', ')})` : 'no plan'}, ${errors.length === 0 ? 'valid' : `${errors.length} problem${errors.length === 1 ? '' : 's'}`} — ${round.inputTokens + round.outputTokens} tokens, ${(round.milliseconds / 1000).toFixed(1)} s\n`,
  );
  for (const problem of errors) out.write(`  ${formatProblem(problem)}\n`);
}

function options(args: string[]) {
  return parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: { ...PLANNER_OPTIONS, out: { type: 'string' } },
  });
}

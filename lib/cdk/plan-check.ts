/**
 * A plan the constructs deploy is checked as `plangate validate` checks it: lib/plan's validator,
 * then the compiler's Step Functions quotas and a PLAN_CREATED too large to record (`launchProblems`, the list the CLI prints). A plan
 * that fails throws with every located problem, so synth fails before anything is added.
 */
import { launchProblems } from '../launch/launch-problems.ts';
import { type LoadedPlan, loadPlanSync } from '../plan/load.ts';
import { loadJsonSchemaCompiler } from '../plan/output-shapes.ts';
import { formatProblem, hasErrors, type Problem } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { validatePlanSync } from '../plan/validate.ts';

// A constructor cannot await: the validator's one asynchronous part (Ajv, for JSON Schema output
// shapes) is loaded with this module, so the checks below run synchronously.
await loadJsonSchemaCompiler();

/** Plans `plangate validate` rejects: every problem of each, located, one a line. */
export class InvalidPlanError extends Error {
  constructor(
    /** What failed, e.g. `example plans`, `plan "release-api"`, a file name. */
    readonly subject: string,
    readonly problems: readonly Problem[],
  ) {
    super(`${subject} does not validate (plangate validate):\n${problems.map(formatProblem).join('\n')}`);
    this.name = 'InvalidPlanError';
  }
}

/** The problems of the plan file at `file` (parse, validation, deployability), and the plan when it parsed. */
export function checkPlanFile(file: string): {
  readonly plan: Plan | undefined;
  readonly problems: Problem[];
} {
  const loaded = loadPlanSync(file);
  return { plan: loaded.plan, problems: launchProblems(loaded, file) };
}

/** The plan in `file`, checked; throws `InvalidPlanError` with its problems when it does not validate. */
export function checkedPlanFile(file: string): Plan {
  const { plan, problems } = checkPlanFile(file);
  if (!plan || hasErrors(problems)) throw new InvalidPlanError(file, problems);
  return plan;
}

/** A parsed plan, checked (no file: its problems carry pointers); throws `InvalidPlanError` as `checkedPlanFile`. */
export function checkedPlan(plan: Plan): Plan {
  const file = `plan "${plan.id}"`;
  const validation = validatePlanSync(plan, { file });
  const loaded: Pick<LoadedPlan, 'plan' | 'valid' | 'problems' | 'sourceMap'> = {
    plan,
    valid: validation.valid,
    problems: validation.problems,
    sourceMap: undefined,
  };
  const problems = launchProblems(loaded, file);
  if (hasErrors(problems)) throw new InvalidPlanError(file, problems);
  return plan;
}

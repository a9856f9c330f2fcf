/** The example plans the CDK app deploys: every plan file in examples/, validated. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { hasErrors, type Problem } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { EXAMPLES_DIR } from './paths.ts';
import { checkPlanFile, InvalidPlanError } from './plan-check.ts';

const PLAN_FILE = /\.(?:md|markdown|ya?ml|json)$/i;

/**
 * Loads and validates each plan file in `dir` (sorted by name), as `plangate validate` does.
 * Throws `InvalidPlanError`, listing every located problem of every invalid file, if any file
 * does not validate.
 */
export async function loadExamplePlans(dir: string = EXAMPLES_DIR): Promise<Plan[]> {
  const files = (await readdir(dir)).filter((name) => PLAN_FILE.test(name)).sort();
  const plans: Plan[] = [];
  const failures: Problem[] = [];
  for (const file of files) {
    const { plan, problems } = checkPlanFile(join(dir, file));
    if (plan && !hasErrors(problems)) plans.push(plan);
    else failures.push(...problems.filter((p) => p.severity === 'error'));
  }
  if (failures.length > 0) throw new InvalidPlanError('example plans', failures);
  return plans;
}

/** The example plans the CDK app deploys: every plan file in examples/, validated. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPlan } from '../plan/load.ts';
import { formatProblem } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { EXAMPLES_DIR } from './paths.ts';

const PLAN_FILE = /\.(?:md|markdown|ya?ml|json)$/i;

/**
 * Loads and validates each plan file in `dir` (sorted by name). Throws, listing every located
 * problem of every invalid file, if any file does not validate.
 */
export async function loadExamplePlans(dir: string = EXAMPLES_DIR): Promise<Plan[]> {
  const files = (await readdir(dir)).filter((name) => PLAN_FILE.test(name)).sort();
  const plans: Plan[] = [];
  const failures: string[] = [];
  for (const file of files) {
    const loaded = await loadPlan(join(dir, file));
    if (loaded.valid && loaded.plan) plans.push(loaded.plan);
    else failures.push(...loaded.problems.filter((p) => p.severity === 'error').map(formatProblem));
  }
  if (failures.length > 0) throw new Error(`example plans do not validate:\n${failures.join('\n')}`);
  return plans;
}

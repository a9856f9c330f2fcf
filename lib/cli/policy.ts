/**
 * The platform's policy in the CLI: `--policy DIR` of `plangate run`, `resume` and `serve`.
 */
import { formatProblem } from '../plan/problems.ts';
import { PolicyLoadError, PolicySet } from '../policy/policy-set.ts';

/** The `--policy` option's help line. */
export const POLICY_OPTION_HELP = `  --policy DIR       the platform's Cedar policies (and groups.json) that decide who may submit,
                     answer, auto-approve and run what (default: the shipped set, policies/default;
                     see docs/policy.md)`;

/**
 * The policy set of `--policy DIR` (the shipped default without it); a directory that does not
 * load is reported with every problem located, and `undefined` returned.
 */
export async function loadPolicyOption(
  dir: string | undefined,
  command: string,
  stderr: NodeJS.WritableStream = process.stderr,
): Promise<PolicySet | undefined> {
  try {
    return await PolicySet.load(dir);
  } catch (error) {
    if (!(error instanceof PolicyLoadError)) throw error;
    for (const problem of error.problems) stderr.write(`${formatProblem(problem)}\n`);
    stderr.write(`plangate ${command}: the policies in ${error.dir} do not load; fix the problems above.\n`);
    return undefined;
  }
}

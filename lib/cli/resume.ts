/**
 * `plangate resume <execution>`: re-attach to an execution left unfinished (Ctrl-C, kill -9):
 * the engine carries on from its stored history, so completed steps are not run again, and
 * gates still waiting are asked again.
 */
import { runSession } from '../run/session.ts';
import { DEFAULT_STORE_DESCRIPTION } from '../serve/store-directory.ts';
import { loadPolicyOption, POLICY_OPTION_HELP } from './policy.ts';
import { parseRunArgs, sessionOptions } from './run.ts';

export const usage = `Usage: plangate resume <execution-arn> [options]

Carries on with an unfinished execution from the local store (see plangate status): completed
steps are not run again, pending gates are asked again, progress continues live.

Options:
  --as NAME          answer gates as NAME (default: your OS user name), e.g. the approver a
                     refusal named
  --approve          approve plan and step gates non-interactively when the plan allows it
  --json             print the events as JSON lines on stdout (prompts and notes on stderr)
  --store DIR        the local store (default: ${DEFAULT_STORE_DESCRIPTION})
  --time-scale X     multiply retry intervals, waits and gate timeouts (default 1)
  --files-dir DIR    where seed 003's <plan-id>-execution/ files are written (default .)
  --no-workers       leave agent steps to plangate worker processes (default: as the execution
                     was started: with --no-workers, or with workers here)
  --agents-per-target N  the run's own workers run up to N agents of one target at once
${POLICY_OPTION_HELP}
  -h, --help         show this help

Exit codes: 0 succeeded, 1 failed or not found, 2 usage, 130 interrupted.`;

export async function run(argv: string[]): Promise<number> {
  const args = parseRunArgs(argv);
  if (typeof args === 'string' || args.positionals.length !== 1) {
    const problem = typeof args === 'string' ? args : 'give exactly one execution ARN';
    process.stderr.write(`plangate resume: ${problem}\n\n${usage}\n`);
    return 2;
  }
  const executionArn = args.positionals[0] as string;
  if (!/^arn:aws:states:[^:]+:\d{12}:execution:[^:]+:[^:]+$/.test(executionArn)) {
    process.stderr.write(
      `plangate resume: "${executionArn}" is not an execution ARN (see plangate status)\n`,
    );
    return 2;
  }
  const policy = await loadPolicyOption(args.policyDir, 'resume');
  if (!policy) return 2;
  // A resumed execution was submitted already: it only carries on (no rollback rehearsal; its
  // submitter, or its solo launch, is the one PLAN_CREATED recorded).
  const options = sessionOptions(args, policy);
  return runSession({ kind: 'execution', executionArn }, { ...options, rehearseRollback: false });
}

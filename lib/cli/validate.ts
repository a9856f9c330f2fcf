/**
 * `plangate validate <plan>`: parse and check a plan, then whether Step Functions can take it
 * (the compiler's quotas). Exit 0 with a one-line summary, 1 with every located problem, 2 on
 * usage errors.
 */
import { launchProblems } from '../launch/launch-problems.ts';
import { loadPlan } from '../plan/load.ts';
import { formatProblem, hasErrors } from '../plan/problems.ts';

export const usage = `Usage: plangate validate <plan.md|plan.yaml|plan.json> [options]

Parses the plan and runs every check, then compiles it and checks it fits Step Functions'
quotas (definition 1 MiB, state payload 256 KiB, history events); prints a one-line summary
when it is valid, else every problem as "file:line:col severity code message [pointer]".

Options:
  --json                     print the result as JSON
  --min-steps N              fewest steps allowed (default: the plan's sizePolicy, else 3)
  --max-steps N              most steps allowed (default: the plan's sizePolicy, else 7)
  --allow-missing-contracts  report steps without a contract as warnings, not errors
  --no-shell-check           do not report shell commands that are not valid shell
  -h, --help                 show this help

Exit codes: 0 valid, 1 invalid, 2 usage error (bad option, unreadable file).`;

interface ValidateArgs {
  file: string;
  json: boolean;
  minSteps?: number;
  maxSteps?: number;
  allowMissingContracts: boolean;
  checkShell: boolean;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(`plangate validate: ${args}\n\n${usage}\n`);
    return 2;
  }
  let loaded: Awaited<ReturnType<typeof loadPlan>>;
  try {
    loaded = await loadPlan(args.file, {
      minSteps: args.minSteps,
      maxSteps: args.maxSteps,
      missingContract: args.allowMissingContracts ? 'warning' : 'error',
      checkShell: args.checkShell,
    });
  } catch (error) {
    process.stderr.write(
      `plangate validate: cannot read ${args.file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`,
    );
    return 2;
  }
  const { plan, digest } = loaded;
  const problems = launchProblems(loaded, args.file);
  const valid = !hasErrors(problems) && plan !== undefined;
  if (args.json) {
    const summary = plan && { id: plan.id, version: plan.version, steps: plan.steps.length };
    process.stdout.write(
      `${JSON.stringify({ file: args.file, valid, plan: summary, digest: digest && `sha256:${digest}`, problems }, null, 2)}\n`,
    );
    return valid ? 0 : 1;
  }
  for (const problem of problems) process.stdout.write(`${formatProblem(problem)}\n`);
  if (valid && plan && digest) {
    const steps = `${plan.steps.length} step${plan.steps.length === 1 ? '' : 's'}`;
    process.stdout.write(
      `✓ ${args.file}: plan "${plan.id}" v${plan.version}, ${steps}, digest sha256:${digest.slice(0, 12)}…\n`,
    );
    return 0;
  }
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.length - errors;
  process.stdout.write(
    `✗ ${args.file}: ${errors} error${errors === 1 ? '' : 's'}${warnings ? `, ${warnings} warning${warnings === 1 ? '' : 's'}` : ''}\n`,
  );
  return 1;
}

function parseArgs(argv: string[]): ValidateArgs | string {
  const files: string[] = [];
  const out: Omit<ValidateArgs, 'file'> = { json: false, allowMissingContracts: false, checkShell: true };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json') out.json = true;
    else if (arg === '--allow-missing-contracts') out.allowMissingContracts = true;
    else if (arg === '--no-shell-check') out.checkShell = false;
    else if (arg === '--min-steps' || arg === '--max-steps') {
      const value = argv[++i];
      if (value === undefined || !/^\d+$/.test(value) || Number(value) < 1)
        return `${arg} needs a positive whole number`;
      if (arg === '--min-steps') out.minSteps = Number(value);
      else out.maxSteps = Number(value);
    } else if (arg.startsWith('-')) return `unknown option "${arg}"`;
    else files.push(arg);
  }
  if (files.length !== 1) return files.length === 0 ? 'missing the plan file' : 'give exactly one plan file';
  return { ...out, file: files[0]! };
}

/**
 * `plangate policy validate|test|explain`: tools for the authors of the platform's Cedar policies
 * (docs/policy.md), and the `--policy DIR` option of `plangate run`, `resume`, `serve` and `audit`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { loadPlan } from '../plan/load.ts';
import { formatProblem } from '../plan/problems.ts';
import type { Plan } from '../plan/schema.ts';
import { entityName } from '../policy/decisions.ts';
import { CASE_FILE } from '../policy/policy-files.ts';
import {
  POLICY_DIR_ENV,
  type PolicyDecision,
  PolicyLoadError,
  PolicySet,
  policyDirOf,
} from '../policy/policy-set.ts';
import {
  approvalBlockRefusal,
  explainScenarios,
  type Scenario,
  scenarioRequest,
} from '../policy/scenarios.ts';
import { PolicyActionSchema } from '../runtime/payloads/index.ts';

/** The `--policy` option's help line. */
export const POLICY_OPTION_HELP = `  --policy DIR       the platform's Cedar policies (and groups.json) that decide who may submit,
                     answer, auto-approve and run what (default: $${POLICY_DIR_ENV}, else the
                     shipped set, policies/default; see docs/policy.md)`;

/**
 * The policy set of `--policy DIR`, else of PLANGATE_POLICY_DIR, else the shipped one
 * ({@link policyDirOf}); a directory that does not load is reported with every problem located,
 * and `undefined` returned. The directory chosen is named in PLANGATE_POLICY_DIR from then on, so
 * whatever this process starts, or asks with the environment's set, decides by the same policies.
 */
export async function loadPolicyOption(
  dir: string | undefined,
  command: string,
  stderr: NodeJS.WritableStream = process.stderr,
): Promise<PolicySet | undefined> {
  try {
    const set = await PolicySet.load(policyDirOf(dir));
    process.env[POLICY_DIR_ENV] = set.dir;
    return set;
  } catch (error) {
    if (!(error instanceof PolicyLoadError)) throw error;
    for (const problem of error.problems) stderr.write(`${formatProblem(problem)}\n`);
    stderr.write(`plangate ${command}: the policies in ${error.dir} do not load; fix the problems above.\n`);
    return undefined;
  }
}

export const usage = `Usage: plangate policy validate [DIR]
       plangate policy test DIR [CASES…]
       plangate policy explain <plan> --as NAME [--groups G,…] [--submitted-by NAME] [--policy DIR]

The platform's policies are a directory of Cedar files (*.cedar) and, optionally, groups.json
({"<group>": ["<user>", …]}). See docs/policy.md.

  validate   parses every policy and validates it against plangate's Cedar schema; every
             problem is located (file:line:col). DIR defaults to $PLANGATE_POLICY_DIR, else
             the shipped set.
             Exit 0 valid, 1 problems.
  test       runs table-driven cases against DIR: each case names a principal (and groups), an
             action, a plan (and step), and the decision expected (allow or deny, and optionally
             the deciding policies). CASES are case files or directories of them (*.cases.yaml,
             *.cases.yml, *.cases.json); default: the ones in DIR. Exit 0 all pass, 1 any fails.
  explain    what NAME may do with this plan under the policies (default: $PLANGATE_POLICY_DIR,
             else the shipped set), and
             which policies decide each answer. Exit 0.

Exit 2: usage, or a file that cannot be read.`;

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  try {
    if (sub === 'validate') return await validate(rest);
    if (sub === 'test') return await test(rest);
    if (sub === 'explain') return await explain(rest);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`plangate policy: ${error.message}\n`);
    return 2;
  }
  process.stderr.write(
    `plangate policy: ${sub === undefined ? 'give a subcommand: validate, test or explain' : `unknown subcommand "${sub}"`}\n\n${usage}\n`,
  );
  return 2;
}

class UsageError extends Error {}

async function validate(argv: string[]): Promise<number> {
  if (argv.length > 1) throw new UsageError('validate takes one directory');
  const checked = await PolicySet.check(policyDirOf(argv[0]));
  for (const problem of checked.problems) process.stderr.write(`${formatProblem(problem)}\n`);
  const errors = checked.problems.filter((p) => p.severity === 'error').length;
  if (errors > 0) {
    process.stderr.write(`✗ ${checked.dir}: ${errors} problem(s)\n`);
    return 1;
  }
  const groups = Object.keys(checked.groups).length;
  process.stdout.write(
    `✓ ${checked.dir}: ${checked.policies.length} policies valid against plangate's schema${groups > 0 ? `, ${groups} groups` : ''}\n`,
  );
  for (const policy of checked.policies)
    process.stdout.write(`  ${policy.id}  ${path.relative(checked.dir, policy.file)}:${policy.line}\n`);
  return 0;
}

/** A principal as a case names it: a name, or a name with the groups a verified token would carry. */
const PrincipalSchema = z.union([
  z.string().min(1),
  z.strictObject({ name: z.string().min(1), groups: z.array(z.string()).default([]) }),
]);

const CaseSchema = z.strictObject({
  name: z.string().min(1),
  principal: PrincipalSchema,
  /** Groups the request proves (a JWT's `cognito:groups`), on top of groups.json. */
  groups: z.array(z.string()).default([]),
  action: PolicyActionSchema,
  /** A plan file (relative to the case file), or the name of one in `plans`. */
  plan: z.string().min(1),
  step: z.string().optional(),
  submitter: z.string().optional(),
  args: z.record(z.string(), z.unknown()).optional(),
  /** The gate's revision: new arg values by step id. */
  revision: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  /** Steps' args as they run (values filled in), by step id. */
  resolved: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  approvals: z.array(PrincipalSchema).optional(),
  context: z.record(z.string(), z.unknown()).optional(),
  expect: z.enum(['allow', 'deny']),
  /** The deciding policies expected (the permits that allowed, or the forbids that denied). */
  policies: z.array(z.string()).optional(),
});

const CaseFileSchema = z.strictObject({
  /** Plans the cases name: name → plan file, relative to the case file. */
  plans: z.record(z.string(), z.string()).default({}),
  cases: z.array(CaseSchema).min(1),
});

async function test(argv: string[]): Promise<number> {
  const [dir, ...given] = argv;
  if (dir === undefined) throw new UsageError('test needs the policy directory');
  const policy = await loadPolicyOption(dir, 'policy test');
  if (!policy) return 1;
  const files = caseFiles(given.length > 0 ? given : [dir]);
  if (files.length === 0)
    throw new UsageError(`no case files (*.cases.yaml, *.cases.json) in ${given.join(', ') || dir}`);
  let failed = 0;
  let passed = 0;
  for (const file of files) {
    const cases = readCaseFile(file);
    if (typeof cases === 'string') {
      process.stderr.write(`${cases}\n`);
      failed++;
      continue;
    }
    const plans = new Map<string, Plan>();
    for (const [index, testCase] of cases.cases.entries()) {
      const where = `${file}: cases[${index}] "${testCase.name}"`;
      const named = Object.hasOwn(cases.plans, testCase.plan) ? cases.plans[testCase.plan] : undefined;
      const planPath = path.resolve(path.dirname(file), named ?? testCase.plan);
      let plan = plans.get(planPath);
      if (!plan) {
        const loaded = await loadPlan(planPath).catch((error: unknown) => {
          process.stderr.write(
            `✗ ${where}: cannot read its plan ${planPath}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`,
          );
          return undefined;
        });
        if (!loaded) {
          failed++;
          continue;
        }
        if (!loaded.plan) {
          for (const problem of loaded.problems) process.stderr.write(`${formatProblem(problem)}\n`);
          process.stderr.write(`✗ ${where}: its plan ${planPath} does not load\n`);
          failed++;
          continue;
        }
        plan = loaded.plan;
        plans.set(planPath, plan);
      }
      const principal = principalOf(testCase.principal, testCase.groups);
      let decided: PolicyDecision;
      try {
        decided = policy.authorize(
          scenarioRequest(
            plan,
            {
              principal,
              action: testCase.action,
              submitter: testCase.submitter,
              step: testCase.step,
              args: testCase.args,
              revision: testCase.revision,
              resolved: testCase.resolved,
              ...(testCase.approvals ? { approvals: testCase.approvals.map((a) => principalOf(a, [])) } : {}),
              context: testCase.context,
            },
            policy,
          ),
        );
      } catch (error) {
        process.stderr.write(`✗ ${where}: ${(error as Error).message}\n`);
        failed++;
        continue;
      }
      const policiesMatch =
        testCase.policies === undefined ||
        JSON.stringify([...testCase.policies].sort()) === JSON.stringify(decided.determiningPolicies);
      if (decided.decision === testCase.expect && policiesMatch) {
        passed++;
        process.stdout.write(`✓ ${testCase.name}\n`);
      } else {
        failed++;
        process.stdout.write(
          `✗ ${testCase.name} (${where}): expected ${testCase.expect}${testCase.policies ? ` by ${testCase.policies.join(', ') || 'no policy'}` : ''}, got ${describe(decided)}\n`,
        );
      }
    }
  }
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  return failed > 0 ? 1 : 0;
}

function principalOf(
  principal: z.infer<typeof PrincipalSchema>,
  groups: readonly string[],
): { name: string; groups: string[] } {
  return typeof principal === 'string'
    ? { name: principal, groups: [...groups] }
    : { name: principal.name, groups: [...principal.groups, ...groups] };
}

function caseFiles(paths: readonly string[]): string[] {
  return paths.flatMap((given) => {
    if (!existsSync(given)) throw new UsageError(`${given} does not exist`);
    if (!statSync(given).isDirectory()) return [given];
    return readdirSync(given)
      .filter((f) => CASE_FILE.test(f))
      .sort()
      .map((f) => path.join(given, f));
  });
}

/** A case file, or its problems as located lines. */
function readCaseFile(file: string): z.infer<typeof CaseFileSchema> | string {
  let value: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    value = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    return `${file}: cannot read the cases: ${(error as Error).message}`;
  }
  const parsed = CaseFileSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  return parsed.error.issues.map((i) => `${file}: ${i.path.join('.') || 'cases'}: ${i.message}`).join('\n');
}

function describe(decided: PolicyDecision): string {
  const by = decided.determiningPolicies.length > 0 ? ` by ${decided.determiningPolicies.join(', ')}` : '';
  const errors = decided.errors.length > 0 ? ` (errors: ${decided.errors.join('; ')})` : '';
  // Which enforcement level decided: a soft denial says who may override it; advisory rules that
  // matched are named, as they would have denied.
  const level =
    decided.decision === 'deny'
      ? decided.overridable
        ? ` [soft-mandatory: a member of ${decided.overridable.by.join(', ')} may override it with a reason]`
        : ' [hard-mandatory]'
      : '';
  const advisory = decided.advisory?.length
    ? ` [advisory, not enforced: ${decided.advisory.join(', ')} would deny]`
    : '';
  return `${decided.decision}${by}${level}${advisory}${errors}`;
}

async function explain(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof explainOptions>;
  try {
    parsed = explainOptions(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError('explain takes one plan file');
  if (!values.as) throw new UsageError('explain needs --as NAME: whose decisions to explain');
  const file = positionals[0] as string;
  const loaded = await loadPlan(file).catch((error: unknown) => {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  });
  if (!loaded.plan) {
    for (const problem of loaded.problems) process.stderr.write(`${formatProblem(problem)}\n`);
    throw new UsageError(`${file} is not a plan`);
  }
  const policy = await loadPolicyOption(values.policy, 'policy explain');
  if (!policy) return 2;
  const principal = {
    name: values.as,
    groups: (values.groups ?? '').split(',').filter((g) => g !== ''),
  };
  const groups = policy.groupsOf(principal);
  process.stdout.write(
    `${principal.name}${groups.length > 0 ? ` (groups: ${groups.join(', ')})` : ' (no groups)'} and plan ${loaded.plan.id} v${loaded.plan.version}${values['submitted-by'] ? `, submitted by ${values['submitted-by']}` : ''}, under ${policy.dir}:\n`,
  );
  for (const scenario of explainScenarios(loaded.plan, principal, values['submitted-by'])) {
    const request = scenarioRequest(loaded.plan, scenario, policy);
    // The plan's own block first, as the gate judges it: policy is asked only about what it lets through.
    const refused = approvalBlockRefusal(loaded.plan, scenario);
    const decided = policy.authorize(request);
    process.stdout.write(
      `  ${!refused && decided.decision === 'allow' ? '✓' : '✗'} ${label(scenario)} ${entityName(request.resource)}: ${refused ? `refused by the plan's approval block: ${refused} (policy alone: ${describe(decided)})` : describe(decided)}\n`,
    );
  }
  process.stdout.write(
    "(The plan's approval block is its first group's: a gate the timeout ladder escalates asks the next group. CompleteGate: with this person as the only approver. RunStep: with the args as written; at run time they are the resolved ones.)\n",
  );
  return 0;
}

function label(scenario: Scenario): string {
  return scenario.action.padEnd(16);
}

function explainOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      as: { type: 'string' },
      groups: { type: 'string' },
      'submitted-by': { type: 'string' },
      policy: { type: 'string' },
    },
  });
}

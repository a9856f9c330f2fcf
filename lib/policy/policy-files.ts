/**
 * What a policy directory may hold, so that nothing in it is silently ignored: its policies
 * (`*.cedar`), the groups file (`groups.json`), the people file (`people.json`), a `README.md`, and `plangate policy test`'s cases
 * (`*.cases.yaml`, `*.cases.yml`, `*.cases.json`) with the plan files they name. Anything else (a
 * subfolder, `org.cedar.txt`, `ORG.CEDAR`, a stray file) refuses the whole directory, located, so
 * a policy never fails to apply because of where or how its file was named.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Problem } from '../plan/problems.ts';

/** The groups file of a policy directory. */
export const GROUPS_FILE = 'groups.json';
/** The people file: which IAM principals each person is (lib/policy/policy-set.ts). */
export const PEOPLE_FILE = 'people.json';
/** A policy directory's own documentation. */
export const README_FILE = 'README.md';
/** `plangate policy test`'s case files. */
export const CASE_FILE = /\.cases\.(ya?ml|json)$/;
const POLICY_FILE = /\.cedar$/;

/** The policy files of `dir`, sorted; every entry that is none of what a policy directory holds is a problem. */
export function policyFiles(dir: string, problems: Problem[]): string[] {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
    entries = readdirSync(dir).sort();
  } catch (error) {
    problems.push(refused(dir, `cannot read the policy directory: ${(error as Error).message}`));
    return [];
  }
  const plans = new Set(entries.filter((f) => CASE_FILE.test(f)).flatMap((f) => plansNamed(dir, f)));
  const policies: string[] = [];
  for (const entry of entries) {
    const file = path.join(dir, entry);
    let isFile: boolean;
    try {
      isFile = statSync(file).isFile();
    } catch (error) {
      problems.push(refused(file, `cannot be read: ${(error as Error).message}`));
      continue;
    }
    if (!isFile) {
      problems.push(
        refused(
          file,
          'a policy directory has no subfolders: its policies are the *.cedar files at its top, so move the files up (or out)',
        ),
      );
      continue;
    }
    if (POLICY_FILE.test(entry)) policies.push(entry);
    else if (
      entry === GROUPS_FILE ||
      entry === PEOPLE_FILE ||
      entry === README_FILE ||
      CASE_FILE.test(entry) ||
      plans.has(entry)
    )
      continue;
    else
      problems.push(
        refused(
          file,
          `not a policy file: a policy directory holds *.cedar policies, ${GROUPS_FILE}, ${PEOPLE_FILE}, ${README_FILE} and policy test cases (*.cases.yaml) with the plans they name; ${/cedar/i.test(entry) ? 'name a policy file <name>.cedar' : 'move it out'}`,
        ),
      );
  }
  return policies;
}

/**
 * The files of `dir` a case file names as its plans (`plans: {name: file}`, a case's `plan:`),
 * relative to it; none when it does not parse (`plangate policy test` reports that).
 */
function plansNamed(dir: string, caseFile: string): string[] {
  let value: unknown;
  try {
    const text = readFileSync(path.join(dir, caseFile), 'utf8');
    value = caseFile.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch {
    return [];
  }
  if (value === null || typeof value !== 'object') return [];
  const { plans, cases } = value as { plans?: unknown; cases?: unknown };
  const byName = plans !== null && typeof plans === 'object' ? (plans as Record<string, unknown>) : {};
  const named = [
    ...Object.values(byName),
    // A case's plan is a name in `plans`, else a file.
    ...(Array.isArray(cases) ? cases.map((c: unknown) => (c as { plan?: unknown } | null)?.plan) : []).filter(
      (plan) => typeof plan !== 'string' || !Object.hasOwn(byName, plan),
    ),
  ];
  return named.flatMap((file) => {
    if (typeof file !== 'string') return [];
    const resolved = path.resolve(dir, file);
    return path.dirname(resolved) === path.resolve(dir) ? [path.basename(resolved)] : [];
  });
}

function refused(file: string, message: string): Problem {
  return { severity: 'error', code: 'policy-dir', message, location: { file } };
}

/**
 * `npm run statemachines`: compiles every example plan in examples/ and writes its
 * definition(s) to statemachines/<name>.asl.json (removing files no example produces).
 * tests/compiler/statemachines.test.ts fails when a file here is stale.
 */

import { realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compilePlan } from '../lib/compiler/index.ts';
import { loadPlan } from '../lib/plan/load.ts';
import { formatProblem } from '../lib/plan/problems.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const EXAMPLES_DIR = join(ROOT, 'examples');
export const STATEMACHINES_DIR = join(ROOT, 'statemachines');
const PLAN_FILE = /\.(json|ya?ml|md)$/;

/** File name → contents that statemachines/ must hold. Throws if an example is invalid. */
export async function expectedStatemachines(): Promise<Map<string, string>> {
  const files = (await readdir(EXAMPLES_DIR)).filter((f) => PLAN_FILE.test(f)).sort();
  const out = new Map<string, string>();
  for (const file of files) {
    const loaded = await loadPlan(join(EXAMPLES_DIR, file));
    if (!loaded.valid || !loaded.plan || !loaded.digest) {
      const problems = loaded.problems.map(formatProblem).join('\n');
      throw new Error(`examples/${file} is not a valid plan:\n${problems}`);
    }
    const result = compilePlan(loaded.plan, { digest: `sha256:${loaded.digest}`, simulate: false });
    for (const definition of result.definitions) {
      const name = `${definition.name}.asl.json`;
      if (out.has(name)) throw new Error(`two examples compile to statemachines/${name}`);
      out.set(name, `${JSON.stringify(definition.asl, null, 2)}\n`);
    }
  }
  return out;
}

/** What statemachines/ holds now. */
export async function currentStatemachines(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let files: string[] = [];
  try {
    files = await readdir(STATEMACHINES_DIR);
  } catch {
    return out;
  }
  for (const file of files.filter((f) => f.endsWith('.asl.json')).sort())
    out.set(file, await readFile(join(STATEMACHINES_DIR, file), 'utf8'));
  return out;
}

async function main(): Promise<void> {
  const expected = await expectedStatemachines();
  const current = await currentStatemachines();
  await mkdir(STATEMACHINES_DIR, { recursive: true });
  for (const file of current.keys()) {
    if (!expected.has(file)) {
      await rm(join(STATEMACHINES_DIR, file));
      process.stdout.write(`removed statemachines/${file}\n`);
    }
  }
  for (const [file, text] of expected) {
    if (current.get(file) === text) continue;
    await writeFile(join(STATEMACHINES_DIR, file), text);
    process.stdout.write(`wrote statemachines/${file}\n`);
  }
  process.stdout.write(`${expected.size} definition(s) from examples/ are up to date\n`);
}

const invokedDirectly =
  process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}

/**
 * `plangate compile <plan> [--out DIR] [--json]`: validate a plan, compile it to Step Functions
 * definitions (ASL, JSONata) and print the compile report. With `--out`, writes each
 * definition to `<DIR>/<name>.asl.json` and the report to `<DIR>/<plan>.report.json`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type CompileResult, deployability } from '../compiler/index.ts';
import { loadPlan } from '../plan/load.ts';
import { formatProblem, hasErrors } from '../plan/problems.ts';

export const usage = `Usage: plangate compile <plan.md|plan.yaml|plan.json> [options]

Validates the plan, compiles it into AWS Step Functions definition(s) (JSONata ASL with
\${...} placeholders for the harness Lambdas) and prints the compile report: states,
billed transitions and history events per step, definition sizes, joins, child machines.

Options:
  --out DIR      write <name>.asl.json per definition and <plan>.report.json into DIR
  --json         print {definitions, substitutions, report} as JSON instead of the summary
  -h, --help     show this help

Exit codes: 0 compiled, 1 the plan is invalid or does not fit Step Functions' quotas
(definition 1 MiB, state payload 256 KiB, history events), 2 usage error.`;

interface CompileArgs {
  file: string;
  out?: string;
  json: boolean;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(`plangate compile: ${args}\n\n${usage}\n`);
    return 2;
  }
  let loaded: Awaited<ReturnType<typeof loadPlan>>;
  try {
    loaded = await loadPlan(args.file);
  } catch (error) {
    process.stderr.write(
      `plangate compile: cannot read ${args.file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`,
    );
    return 2;
  }
  if (!loaded.valid || !loaded.plan || !loaded.digest) {
    for (const problem of loaded.problems) process.stderr.write(`${formatProblem(problem)}\n`);
    process.stderr.write(`✗ ${args.file}: not compiled, the plan is invalid\n`);
    return 1;
  }
  const deployable = deployability(loaded.plan, {
    file: args.file,
    sourceMap: loaded.sourceMap,
    compile: { digest: `sha256:${loaded.digest}` },
  });
  const result = deployable.result;
  if (!result || hasErrors(deployable.problems)) {
    for (const problem of deployable.problems) process.stderr.write(`${formatProblem(problem)}\n`);
    process.stderr.write(`✗ ${args.file}: not compiled, Step Functions cannot take this plan\n`);
    return 1;
  }
  if (args.out !== undefined) await writeResult(result, args.out, loaded.plan.id);
  if (args.json) {
    process.stdout.write(
      `${JSON.stringify({ definitions: result.definitions.map((d) => ({ name: d.name, asl: d.asl, arnSubstitution: d.arnSubstitution })), substitutions: result.substitutions, report: result.report }, null, 2)}\n`,
    );
  } else {
    process.stdout.write(`${summary(result, args.file, args.out)}\n`);
  }
  return 0;
}

/** Writes the definitions (pretty JSON) and the report into `dir`; returns the paths written. */
export async function writeResult(result: CompileResult, dir: string, planId: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const definition of result.definitions) {
    const path = join(dir, `${definition.name}.asl.json`);
    await writeFile(path, `${JSON.stringify(definition.asl, null, 2)}\n`);
    written.push(path);
  }
  const reportPath = join(dir, `${planId}.report.json`);
  await writeFile(reportPath, `${JSON.stringify(result.report, null, 2)}\n`);
  written.push(reportPath);
  return written;
}

function summary(result: CompileResult, file: string, out: string | undefined): string {
  const r = result.report;
  const lines = [
    `✓ ${file}: plan "${r.plan.id}" v${r.plan.version} (${r.plan.digest.slice(0, 19)}…) → ${result.definitions.length} definition${result.definitions.length === 1 ? '' : 's'}`,
  ];
  for (const m of r.machines) {
    lines.push(
      `  ${m.name}: ${m.steps} steps, ${m.states} states, ${m.bytes} bytes, ~${m.estimatedHistoryEvents} history events (happy path)`,
    );
  }
  lines.push(
    `  structure: ${r.structure.parallels} Parallel, ${r.structure.joinEdges} join edge${r.structure.joinEdges === 1 ? '' : 's'}${r.structure.seriesParallel ? ' (series-parallel: none needed)' : ''}, critical-path inflation ${r.criticalPathInflation ?? 'n/a'}`,
    `  happy path: ${r.totals.happyPathTransitions} step transitions, ~${r.totals.estimatedHistoryEvents} history events in total`,
  );
  for (const s of r.perStep) {
    const extras = [s.gate && 'gate', s.join && 'join', s.signal && 'signal'].filter(Boolean).join(', ');
    lines.push(
      `  [${s.stepId}] ${s.transitions} transitions, ${s.historyEvents} events${extras ? ` (${extras})` : ''}`,
    );
  }
  lines.push(`  substitutions: ${result.substitutions.join(', ')}`);
  if (out !== undefined) lines.push(`  written to ${out}/`);
  return lines.join('\n');
}

function parseArgs(argv: string[]): CompileArgs | string {
  const files: string[] = [];
  let out: string | undefined;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--json') json = true;
    else if (arg === '--out') {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) return '--out needs a directory';
      out = value;
      i += 1;
    } else if (arg.startsWith('--out=')) out = arg.slice('--out='.length);
    else if (arg.startsWith('-')) return `unknown option ${arg}`;
    else files.push(arg);
  }
  if (files.length !== 1) return files.length === 0 ? 'missing <plan>' : 'give exactly one plan';
  return { file: files[0] as string, json, out };
}

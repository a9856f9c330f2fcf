/** `plangate render <plan> --format text|mermaid|json|yaml`: the plan for people (or other tools). */
import { parsePlanFile } from '../plan/parse.ts';
import { formatProblem } from '../plan/problems.ts';
import { renderChecklist, renderJson, renderMermaid, renderYaml } from '../plan/render.ts';

export const usage = `Usage: plangate render <plan.md|plan.yaml|plan.json> [--format text|mermaid|json|yaml]

Prints the plan as seed 002's checklist (text, the default), a Mermaid "graph TD"
of the step dependencies, or the defaults-applied plan as JSON or YAML.
Rendering needs the plan to parse; run "plangate validate" for the full checks.

Exit codes: 0 rendered, 1 the plan does not parse, 2 usage error.`;

const FORMATS = ['text', 'mermaid', 'json', 'yaml'] as const;
type Format = (typeof FORMATS)[number];

export async function run(argv: string[]): Promise<number> {
  let format: Format = 'text';
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const inline = arg.startsWith('--format=') ? arg.slice('--format='.length) : undefined;
    if (arg === '--format' || inline !== undefined) {
      const value = inline ?? argv[++i];
      if (!FORMATS.includes(value as Format))
        return usageError(`--format must be one of ${FORMATS.join(', ')}`);
      format = value as Format;
    } else if (arg.startsWith('-')) return usageError(`unknown option "${arg}"`);
    else files.push(arg);
  }
  if (files.length !== 1)
    return usageError(files.length === 0 ? 'missing the plan file' : 'give exactly one plan file');
  const file = files[0]!;
  let parsed: Awaited<ReturnType<typeof parsePlanFile>>;
  try {
    parsed = await parsePlanFile(file);
  } catch (error) {
    process.stderr.write(
      `plangate render: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}\n`,
    );
    return 2;
  }
  if (!parsed.plan) {
    for (const problem of parsed.problems) process.stdout.write(`${formatProblem(problem)}\n`);
    return 1;
  }
  const render = { text: renderChecklist, mermaid: renderMermaid, json: renderJson, yaml: renderYaml }[
    format
  ];
  process.stdout.write(`${render(parsed.plan).trimEnd()}\n`);
  return 0;
}

function usageError(message: string): number {
  process.stderr.write(`plangate render: ${message}\n\n${usage}\n`);
  return 2;
}

/**
 * How long parsing + validating large and hostile plans takes (the issue asks for
 * "within a second"). Writes bench/results/plan-validate.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parsePlanText } from '../lib/plan/parse.ts';
import { validatePlan } from '../lib/plan/validate.ts';
import { chainPlanJson as chain } from '../tests/plan/chain-plan.ts';

/** `n` shell steps, each with its own command and command contract: 2n commands for the shell parser. */
function shellPlanJson(n: number): string {
  const steps = Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    description: `Step ${i}`,
    tool: 'shell',
    args: { command: `mkdir -p out/${i} && printf '%s\\n' ${i} > out/${i}/n.txt` },
    contract: {
      kind: 'command',
      command: `test "$(cat out/${i}/n.txt)" = ${i} && grep -q ${i} out/${i}/n.txt`,
    },
  }));
  return JSON.stringify({ id: 'shell', objective: 'o', sizePolicy: { maxSteps: n }, steps });
}

/** One step whose command opens thousands of here-documents: the parser gives up at its time budget. */
const hostileShell = JSON.stringify({
  id: 'hostile',
  objective: 'o',
  steps: ['a', 'b', 'c'].map((id) => ({
    id,
    description: id,
    tool: 'shell',
    args: { command: id === 'a' ? '<<X\n'.repeat(20_000) : 'true' },
    contract: { kind: 'command', command: 'true' },
  })),
});

/** A Markdown plan (seed 004) of `n` echo steps: frontmatter, fields, a yaml block and a list per step. */
function markdownPlan(n: number): string {
  const steps = Array.from(
    { length: n },
    (_, i) =>
      `### ${i + 1}. Step number ${i}\n\n**tool:** echo\n**args:**\n\`\`\`yaml\nmessage: step ${i}\n\`\`\`\n**outputs:**\n- out${i}\n**on_fail:** retry(1), then abort\n`,
  );
  return `---\nmax_steps: ${n}\n---\n\n# Many steps\n\n**Context:** a long plan\n\n## Steps\n\n${steps.join('\n')}`;
}

const cases: Array<[name: string, text: string, format: 'json' | 'yaml' | 'markdown']> = [
  ['chain-100k-json', chain(100_000, false), 'json'],
  ['cycle-10k-json', chain(10_000, true), 'json'],
  ['nested-100k-json', '['.repeat(100_000), 'json'],
  ['nested-100k-yaml', `${'- '.repeat(100_000)}x`, 'yaml'],
  ['oversized-10mb-yaml', `objective: ${'x'.repeat(10 * 1024 * 1024)}`, 'yaml'],
  ['shell-1k-steps-json', shellPlanJson(1_000), 'json'],
  ['shell-heredocs-json', hostileShell, 'json'],
  ['markdown-5k-steps', markdownPlan(5_000), 'markdown'],
];

const results = [];
for (const [name, text, format] of cases) {
  const start = performance.now();
  const parsed = parsePlanText(text, { filename: name, format });
  const problems = parsed.plan
    ? (await validatePlan(parsed.plan, { sourceMap: parsed.sourceMap, missingContract: 'off' })).problems
    : parsed.problems;
  const ms = performance.now() - start;
  results.push({ name, bytes: text.length, ms: Math.round(ms), problems: problems.map((p) => p.code) });
  console.log(
    `${name.padEnd(22)} ${String(Math.round(ms)).padStart(6)} ms  ${problems.map((p) => p.code).join(', ')}`,
  );
}
mkdirSync('bench/results', { recursive: true });
writeFileSync(
  'bench/results/plan-validate.json',
  `${JSON.stringify({ node: process.version, cpus: cpus().length, loadavg: loadavg(), date: new Date().toISOString(), results }, null, 2)}\n`,
);

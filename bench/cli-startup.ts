/**
 * CLI start-up: `plangate --help` and `plangate validate examples/local-demo.yaml` from the
 * built JavaScript (`node dist/bin/plangate.js`, what `npx plangate` and a global install run)
 * against the TypeScript through tsx (`npm run plangate`), alternating, in one run. Builds dist/
 * first so the figures are of this checkout. Writes bench/results/cli-startup.json.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = 15;
const GOAL_HELP_MS = 300;

execFileSync('npm', ['run', '--silent', 'build'], { cwd: REPO, stdio: 'inherit' });

const runners = {
  built: ['node', path.join(REPO, 'dist/bin/plangate.js')],
  tsx: [path.join(REPO, 'node_modules/.bin/tsx'), path.join(REPO, 'bin/plangate.ts')],
} as const;
const commands = {
  help: ['--help'],
  validate: ['validate', path.join(REPO, 'examples/local-demo.yaml')],
} as const;

function timeOnce(argv: readonly string[]): number {
  const started = performance.now();
  const result = spawnSync(argv[0] as string, argv.slice(1), { cwd: REPO, encoding: 'utf8' });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`${argv.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

const rows = Object.entries(commands).map(([command, args]) => {
  const samples: Record<keyof typeof runners, number[]> = { built: [], tsx: [] };
  timeOnce([...runners.built, ...args]);
  timeOnce([...runners.tsx, ...args]);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['built', 'tsx'] as const) : (['tsx', 'built'] as const);
    for (const runner of order) samples[runner].push(timeOnce([...runners[runner], ...args]));
  }
  const built = median(samples.built);
  const tsx = median(samples.tsx);
  return {
    command: `plangate ${command === 'help' ? '--help' : 'validate examples/local-demo.yaml'}`,
    builtMedianMs: Math.round(built),
    tsxMedianMs: Math.round(tsx),
    speedup: Math.round((tsx / built) * 100) / 100,
  };
});

const help = rows[0] as (typeof rows)[number];
const output = {
  description:
    'wall time of a whole CLI process (spawn to exit), median of alternating rounds: built JavaScript vs tsx',
  node: process.version,
  machine: { cpu: cpus()[0]?.model, cores: cpus().length },
  rounds: ROUNDS,
  goal: { helpMs: GOAL_HELP_MS, met: help.builtMedianMs < GOAL_HELP_MS },
  rows,
};
mkdirSync(path.join(REPO, 'bench/results'), { recursive: true });
writeFileSync(path.join(REPO, 'bench/results/cli-startup.json'), `${JSON.stringify(output, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);

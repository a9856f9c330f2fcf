/**
 * `npm run bench:injection`: the run-time injection corpus alone (bench/reliability/runtime-injection.ts,
 * also part of `npm run reliability`), written to bench/results/runtime-injection.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runtimeInjectionCorpus } from './reliability/runtime-injection.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const started = Date.now();
const loadAtStart = loadavg();
const result = await runtimeInjectionCorpus();
const goal =
  result.injected === 0 &&
  result.escapedUrls === 0 &&
  result.altered === 0 &&
  result.deliveredIntact >= 0.9 * result.uses;
const output = {
  description:
    'values from step outputs, context, secrets and people, carrying shell and URL attacks into every documented place, through the real CLI (plangate run --approve --rehearse-rollback, plangate complete)',
  node: process.version,
  machine: {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    loadAverage: { atStart: loadAtStart, atEnd: loadavg() },
  },
  minutes: Math.round((Date.now() - started) / 6000) / 10,
  goal: {
    'no injected code ran, no URL reached another endpoint, no value arrived altered, at least 90% arrived whole':
      goal,
  },
  ...result,
};
mkdirSync(path.join(REPO, 'bench/results'), { recursive: true });
writeFileSync(
  path.join(REPO, 'bench/results/runtime-injection.json'),
  `${JSON.stringify(output, null, 2)}\n`,
);
process.stdout.write(
  `${result.uses} uses: ${result.injected} injected, ${result.escapedUrls} URLs elsewhere, ${result.altered} altered, ${result.deliveredIntact} whole, ${result.notRun} not run\n`,
);
if (!goal) process.exitCode = 1;

/**
 * Plays the recorded-AWS conformance cases (tests/fixtures/conformance/cases, or --cases DIR) through the embedded
 * engine and prints per-category pass rates and every failing case with its first mismatch.
 *
 *   npm run conformance -- [--threshold 95] [--filter text] [--http] [--history] [--json out.json] [--cases DIR]
 *
 * In-process through the Engine API by default; with --http through the engine's Step Functions API
 * server via @aws-sdk/client-sfn. --history also lists cases whose history event types differ
 * from AWS's (informative). Exits 1 when the pass rate is below --threshold.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as sfn from '@aws-sdk/client-sfn';
import { SFNClient } from '@aws-sdk/client-sfn';
import { startEngineServer } from '../lib/engine/api/index.ts';
import { CONFORMANCE_CASES } from '../tests/conformance-dir.ts';
import {
  type CaseDriver,
  type ConformanceCase,
  caseEngine,
  playCases,
} from '../tests/support/conformance.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};
const casesDir = path.resolve(flag('--cases') ?? CONFORMANCE_CASES);
const compare = await import(pathToFileURL(path.join(casesDir, '..', 'compare.mjs')).href);
const threshold = Number(flag('--threshold') ?? 0);
const filter = flag('--filter');
const files = fs
  .readdirSync(casesDir)
  .filter((f) => f.endsWith('.json') && !f.startsWith('_'))
  .sort();
const cases = files
  .map((f) => JSON.parse(fs.readFileSync(path.join(casesDir, f), 'utf8')))
  .filter((c) => !filter || String(c.id).includes(filter));
/** One engine per case behind the Step Functions API server, driven by @aws-sdk/client-sfn. */
async function httpDriver(c: ConformanceCase): Promise<CaseDriver> {
  const engine = caseEngine(c);
  const server = await startEngineServer({ engine });
  const client = new SFNClient({
    endpoint: server.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    disableHostPrefix: true,
  });
  return {
    api: {
      createStateMachine: (input) => client.send(new sfn.CreateStateMachineCommand(input)),
      startExecution: (input) => client.send(new sfn.StartExecutionCommand(input)),
      describeExecution: (input) => client.send(new sfn.DescribeExecutionCommand(input)),
      getExecutionHistory: (input) => client.send(new sfn.GetExecutionHistoryCommand(input)),
    },
    awaitEnd: async (executionArn) => {
      while ((await client.send(new sfn.DescribeExecutionCommand({ executionArn }))).status === 'RUNNING') {
        await new Promise((r) => setTimeout(r, 2));
      }
    },
    close: async () => {
      client.destroy();
      await server.close();
      await engine.close();
    },
  };
}

const report = await playCases(
  cases,
  compare.compareResult,
  args.includes('--http') ? { driverFor: httpDriver } : {},
);
for (const [category, r] of Object.entries(report.categories).sort()) {
  console.log(
    `${category.padEnd(20)} ${String(r.passed).padStart(4)}/${String(r.total).padEnd(4)} ${((100 * r.passed) / r.total).toFixed(1)}%`,
  );
}
for (const f of report.failures) console.log(`FAIL ${f.id}\n     ${f.mismatch.slice(0, 400)}`);
if (args.includes('--history')) {
  for (const d of report.historyDifferences) console.log(`HISTORY ${d.id}\n     ${d.difference}`);
}
console.log(
  `history event types equal to AWS's in ${report.historyMatches}/${report.total} cases (informative)`,
);
const rate = (100 * report.passed) / Math.max(report.total, 1);
console.log(`TOTAL ${report.passed}/${report.total} = ${rate.toFixed(1)}% (${report.elapsedMs} ms)`);
const out = flag('--json');
if (out) fs.writeFileSync(out, JSON.stringify({ ...report, rate }, null, 2));
process.exit(rate + 1e-9 < threshold ? 1 : 0);

/**
 * What each of a local step's journal calls costs, one at a time, on the local data plane of
 * `plangate run` (dynalite on LevelDB in a temp store, the local bus with its archive): the
 * events table's conditional PutItem and the bus's PutEvents, shaped as the journal sends them,
 * and the same PutItem against a loopback server that answers `{}` at once (what the SDK and HTTP
 * cost by themselves). Wall and CPU ms per call. Writes bench/results/local-calls.json.
 *
 *   npx tsx bench/local-calls.ts [--calls N]   (default 2,000 calls per figure)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { LOCAL_CREDENTIALS } from '../lib/aws-local/clients.ts';
import { startLocalDataPlane } from '../lib/aws-local/data-plane.ts';
import { closeServer, listenOnLoopback } from '../lib/aws-local/listen.ts';
import { documentClient } from '../lib/runtime/journal/document-client.ts';
import { EVENT_SOURCE, formatSeq } from '../lib/runtime/journal/journal.ts';

const at = process.argv.indexOf('--calls');
const CALLS = at >= 0 ? Number(process.argv[at + 1]) : 2_000;
const WARM_UP = 200;

/** An events-table item as the journal stores a TASK_STARTED. */
function eventItem(seq: number) {
  return {
    executionId: 'arn:aws:states:us-east-1:123456789012:execution:plangate-bench:calls',
    sk: formatSeq(seq),
    seq,
    timestamp: new Date().toISOString(),
    event: 'TASK_STARTED',
    planId: 'bench-calls',
    planVersion: 1,
    planDigest: `sha256:${'d'.repeat(64)}`,
    task_id: `s${seq}`,
    task_name: `Echo s${seq}`,
    planTask: `bench-calls#s${seq}`,
    details: { attempt: 1, progress: `[Task ${seq}/${CALLS}] ▶ Echo s${seq}` },
    prevHash: `sha256:${'a'.repeat(64)}`,
    hash: `sha256:${'b'.repeat(64)}`,
  };
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** Runs `call` WARM_UP times, then CALLS times one after another: wall and CPU ms per call. */
async function perCall(call: (i: number) => Promise<unknown>) {
  for (let i = 0; i < WARM_UP; i++) await call(i);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = WARM_UP; i < WARM_UP + CALLS; i++) await call(i);
  const wallMs = (performance.now() - started) / CALLS;
  const used = process.cpuUsage(cpu);
  return { wallMs: round(wallMs), cpuMs: round((used.user + used.system) / 1000 / CALLS) };
}

async function main(): Promise<void> {
  const loadStart = loadavg();
  const dir = await mkdtemp(join(tmpdir(), 'plangate-calls-'));
  const plane = await startLocalDataPlane({ dataDir: dir });
  const results: Record<string, unknown> = {};
  try {
    results.putItem = await perCall((i) =>
      plane.clients.doc.send(
        new PutCommand({
          TableName: plane.tableNames.events,
          Item: eventItem(i + 1),
          ConditionExpression: 'attribute_not_exists(executionId)',
        }),
      ),
    );
    results.putEvents = await perCall((i) =>
      plane.clients.events.send(
        new PutEventsCommand({
          Entries: [
            {
              Source: EVENT_SOURCE,
              DetailType: 'TASK_STARTED',
              Detail: JSON.stringify(eventItem(i + 1)),
              EventBusName: 'default',
              Time: new Date(),
            },
          ],
        }),
      ),
    );
  } finally {
    await plane.close();
    await rm(dir, { recursive: true, force: true });
  }

  const answerAtOnce = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end('{}');
    });
  });
  const endpoint = await listenOnLoopback(answerAtOnce);
  const sdkOnly = new DynamoDBClient({ region: 'us-east-1', endpoint, credentials: LOCAL_CREDENTIALS });
  try {
    const doc = documentClient(sdkOnly);
    results.putItemSdkAndHttpOnly = await perCall((i) =>
      doc.send(
        new PutCommand({
          TableName: 'plangate-events',
          Item: eventItem(i + 1),
          ConditionExpression: 'attribute_not_exists(executionId)',
        }),
      ),
    );
  } finally {
    sdkOnly.destroy();
    await closeServer(answerAtOnce);
  }

  const output = {
    description:
      "one journal call at a time on plangate run's local data plane (dynalite on LevelDB, the local bus with its archive), and the same PutItem against a loopback server answering {} at once: what the SDK and HTTP cost alone",
    node: process.version,
    machine: { cpu: cpus()[0]?.model, cores: cpus().length },
    loadAverage: { start: loadStart.map(round), end: loadavg().map(round) },
    callsPerFigure: CALLS,
    ...results,
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(
    new URL('./results/local-calls.json', import.meta.url),
    `${JSON.stringify(output, null, 2)}\n`,
  );
  process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
}

await main();

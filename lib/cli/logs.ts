/**
 * `plangate logs <execution>`: what the harness Lambdas logged about one execution in the local
 * store (the same structured entries and metrics they write to CloudWatch Logs on AWS), in order.
 */
import { parseArgs } from 'node:util';
import { readEvents } from '../runtime/journal/journal.ts';
import { type HarnessLogEntry, harnessLogFile, readHarnessLog } from '../serve/harness-log.ts';
import { executionReadRequest, readRefusal, storeReadPolicy } from '../serve/read-policy.ts';
import { DEFAULT_STORE_DESCRIPTION, type StorePaths, storePaths } from '../serve/store-directory.ts';
import { openStoreReader, StoreNotFoundError, type StoreReader } from '../serve/store-reader.ts';

export const usage = `Usage: plangate logs <execution> [options]

Prints the harness Lambdas' log entries about one execution (its ARN, or its name) from the local
store's logs/harness.jsonl: each invocation's outcome, each journal event with its step and gate,
failures and errors, and the metrics they emitted. Every entry carries the correlation keys
execution, plan, step and gate. The handlers log at POWERTOOLS_LOG_LEVEL (INFO by default) of
the process that ran them. Exit 0 when there are entries, 1 when there are none.

Options:
  --step ID     only the entries about this step
  --json        the entries as JSON lines, as written
  --store DIR   the local store (default: ${DEFAULT_STORE_DESCRIPTION})
  -h, --help    show this help`;

/** Keys every entry has or that the line already shows. */
const SHOWN = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'handler',
  'execution',
  'plan',
  'planVersion',
  'step',
  'event',
  'sampling_rate',
  'xray_trace_id',
]);

export async function run(argv: string[]): Promise<number> {
  let parsed: { values: { json?: boolean; store?: string; step?: string }; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, store: { type: 'string' }, step: { type: 'string' } },
    });
  } catch (error) {
    process.stderr.write(`plangate logs: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  const [execution, ...extra] = parsed.positionals;
  if (!execution || extra.length > 0) {
    process.stderr.write(`plangate logs: give exactly one execution (see plangate status)\n\n${usage}\n`);
    return 2;
  }
  const paths = storePaths(parsed.values.store);
  const entries = await readHarnessLog(paths, {
    execution,
    step: parsed.values.step,
  });
  if (entries.length === 0) {
    const about = parsed.values.step !== undefined ? ` about step ${parsed.values.step}` : '';
    process.stderr.write(`plangate logs: no entries for ${execution}${about} in ${harnessLogFile(paths)}\n`);
    return 1;
  }
  const refused = await logsRefusal(paths, String(entries[0]?.execution ?? execution));
  if (refused) {
    process.stderr.write(`plangate logs: ${refused}\n`);
    return 1;
  }
  // `plangate logs … | head` closes the pipe early: that is the reader's choice, not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
  for (const entry of entries)
    process.stdout.write(`${parsed.values.json ? JSON.stringify(entry) : formatEntry(entry)}\n`);
  return 0;
}

/**
 * Why the store's policy refuses the reader this execution's logs (ReadExecution, as its events),
 * judged by its PLAN_CREATED; an execution whose journal cannot be read is refused too.
 */
async function logsRefusal(paths: StorePaths, executionArn: string): Promise<string | undefined> {
  let reader: StoreReader;
  try {
    reader = await openStoreReader(paths);
  } catch (error) {
    if (!(error instanceof StoreNotFoundError)) throw error;
    return `${error.message}: whose execution ${executionArn} is cannot be told, so its logs are not shown`;
  }
  try {
    const events = await readEvents(reader.doc, reader.eventsTable, executionArn);
    const created = events.find((e) => e.event === 'PLAN_CREATED');
    if (!created) return `no PLAN_CREATED stored for ${executionArn}: whose execution it is cannot be told`;
    return readRefusal(await storeReadPolicy(paths), executionReadRequest(created, 'events'));
  } finally {
    await reader.close();
  }
}

/** One entry as a line: time, level, handler, step, message, and the entry's other facts. */
export function formatEntry(entry: HarnessLogEntry): string {
  const metrics = emfMetrics(entry);
  if (metrics) {
    const at = new Date(metrics.timestamp).toISOString();
    return `${at}  METRIC ${String(entry.handler ?? '-').padEnd(15)} ${String(entry.step ?? '-')}  ${metrics.text}`;
  }
  const facts = Object.entries(entry)
    .filter(([key]) => !SHOWN.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return [
    `${String(entry.timestamp ?? '-')}  ${String(entry.level ?? '-').padEnd(6)} ${String(entry.handler ?? '-').padEnd(15)} ${String(entry.step ?? '-')}`,
    String(entry.message ?? ''),
    ...facts,
  ].join('  ');
}

/** An EMF document's metrics as `name=value unit (dimension=value, …)`, or undefined for a log entry. */
function emfMetrics(entry: HarnessLogEntry): { timestamp: number; text: string } | undefined {
  const aws = entry._aws as
    | {
        Timestamp?: number;
        CloudWatchMetrics?: { Dimensions?: string[][]; Metrics?: { Name: string; Unit?: string }[] }[];
      }
    | undefined;
  const directive = aws?.CloudWatchMetrics?.[0];
  if (!aws || !directive) return undefined;
  const dimensions = (directive.Dimensions?.[0] ?? [])
    .filter((name) => name !== 'service')
    .map((name) => `${name}=${String(entry[name])}`);
  const values = (directive.Metrics ?? []).map(
    (m) => `${m.Name}=${JSON.stringify(entry[m.Name])}${m.Unit && m.Unit !== 'Count' ? ` ${m.Unit}` : ''}`,
  );
  return {
    timestamp: aws.Timestamp ?? 0,
    text: `${values.join(' ')}${dimensions.length > 0 ? ` (${dimensions.join(', ')})` : ''}`,
  };
}

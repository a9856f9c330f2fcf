/**
 * `plangate events <execution>`: the execution's stored events from the local DynamoDB, in
 * order, with the hash chain verified (a gap, an edit or a reordering is reported, exit 1).
 */
import { parseArgs } from 'node:util';
import { verifyChain } from '../runtime/journal/chain.ts';
import { readEvents } from '../runtime/journal/journal.ts';
import { DEFAULT_STORE_DESCRIPTION, storePaths } from '../serve/store-directory.ts';
import { openStoreReader, StoreNotFoundError, type StoreReader } from '../serve/store-reader.ts';

export const usage = `Usage: plangate events <execution-arn> [options]

Prints the execution's events from the local events table, in sequence order, and verifies
their hash chain. Exit 0 when the chain is intact, 1 when it is broken or nothing is stored.

Options:
  --json        the stored records as JSON lines on stdout (the verdict on stderr)
  --store DIR   the local store (default: ${DEFAULT_STORE_DESCRIPTION})
  -h, --help    show this help`;

export async function run(argv: string[]): Promise<number> {
  let parsed: { values: { json?: boolean; store?: string }; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, store: { type: 'string' } },
    });
  } catch (error) {
    process.stderr.write(`plangate events: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  const [executionArn, ...extra] = parsed.positionals;
  if (!executionArn || extra.length > 0) {
    process.stderr.write(
      `plangate events: give exactly one execution ARN (see plangate status)\n\n${usage}\n`,
    );
    return 2;
  }
  let reader: StoreReader;
  try {
    reader = await openStoreReader(storePaths(parsed.values.store));
  } catch (error) {
    if (!(error instanceof StoreNotFoundError)) throw error;
    process.stderr.write(`plangate events: ${error.message}\n`);
    return 1;
  }
  try {
    const events = await readEvents(reader.doc, reader.eventsTable, executionArn);
    if (events.length === 0) {
      process.stderr.write(`plangate events: no events stored for ${executionArn}\n`);
      return 1;
    }
    for (const e of events) {
      if (parsed.values.json) process.stdout.write(`${JSON.stringify(e)}\n`);
      else
        process.stdout.write(
          `${String(e.seq).padStart(4)}  ${e.timestamp}  ${e.event.padEnd(24)} ${e.task_id ?? '-'}  ${JSON.stringify(e.details)}\n`,
        );
    }
    const verdict = verifyChain(events);
    const out = parsed.values.json ? process.stderr : process.stdout;
    if (verdict.ok) {
      out.write(`Hash chain intact: ${verdict.count} events, no gap, edit or reordering.\n`);
      return 0;
    }
    out.write(`Hash chain BROKEN (${verdict.problem}): ${verdict.message}\n`);
    return 1;
  } finally {
    await reader.close();
  }
}

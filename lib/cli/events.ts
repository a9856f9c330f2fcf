/**
 * `plangate events <execution>`: the execution's stored events from the local DynamoDB, in
 * order, with the hash chain verified (a gap, an edit or a reordering is reported, exit 1).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { verifyChain } from '../runtime/journal/chain.ts';
import { readEvents } from '../runtime/journal/journal.ts';
import {
  CallSchema,
  type CallValue,
  CallValueSchema,
  type JournalRecord,
  ShellRanSchema,
} from '../runtime/payloads/index.ts';
import { executionReadRequest, readRefusal, storeReadPolicy } from '../serve/read-policy.ts';
import { DEFAULT_STORE_DESCRIPTION, storePaths } from '../serve/store-directory.ts';
import { openStoreReader, StoreNotFoundError, type StoreReader } from '../serve/store-reader.ts';

export const usage = `Usage: plangate events <execution-arn> [options]

Prints the execution's events from the local events table, in sequence order, and verifies
their hash chain. A step's or rollback's call (what ran, with its values) and a contract's
command follow their event, indented. Exit 0 when the chain is intact, 1 when it is broken or nothing is stored.

Options:
  --json        the stored records as JSON lines on stdout (the verdict on stderr)
  --store DIR   the local store (default: ${DEFAULT_STORE_DESCRIPTION})
  -h, --help    show this help`;

/**
 * What an event says ran, readable: a call's tool, the text bash ran (or the args), the variables
 * it got and each value (TASK_STARTED, ROLLBACK_STARTED); a contract's command and values.
 */
export function ranLines(event: JournalRecord): string[] {
  const call = CallSchema.safeParse(event.details.call);
  const evidence = ContractEvidenceRanSchema.safeParse(event.details.evidence);
  const values = (list: readonly CallValue[]) =>
    list.map((v) => `  ${v.ref} = ${JSON.stringify(v.value)}${v.env ? ` (as $${v.env})` : ''}`);
  if (call.success) {
    const shell = ShellRanSchema.safeParse(call.data.ran);
    const ran =
      shell.success && call.data.tool === 'shell' ? shell.data.command : JSON.stringify(call.data.ran);
    return [
      `call: ${call.data.tool}`,
      ...indentLines('ran: ', ran),
      ...(shell.success && shell.data.env.length > 0 ? [`env: ${shell.data.env.join(', ')}`] : []),
      ...(call.data.values.length > 0 ? ['values:', ...values(call.data.values)] : []),
    ];
  }
  if (evidence.success && evidence.data.kind === 'command' && evidence.data.values)
    return [
      ...indentLines('contract ran: ', evidence.data.ran),
      ...(evidence.data.values.length > 0 ? ['values:', ...values(evidence.data.values)] : []),
    ];
  return [];
}

const ContractEvidenceRanSchema = z.object({
  kind: z.string(),
  ran: z.string(),
  values: z.array(CallValueSchema).optional(),
});

function indentLines(label: string, text: string): string[] {
  return text
    .split('\n')
    .map((line, i) => (i === 0 ? `${label}${line}` : `${' '.repeat(label.length)}${line}`));
}

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
    // The policy of the process holding the store decides who reads it (ReadExecution).
    const created = events.find((e) => e.event === 'PLAN_CREATED');
    const refused =
      created &&
      readRefusal(
        await storeReadPolicy(storePaths(parsed.values.store)),
        executionReadRequest(created, 'events'),
      );
    if (refused) {
      process.stderr.write(`plangate events: ${refused}\n`);
      return 1;
    }
    for (const e of events) {
      if (parsed.values.json) process.stdout.write(`${JSON.stringify(e)}\n`);
      else
        process.stdout.write(
          `${String(e.seq).padStart(4)}  ${e.timestamp}  ${e.event.padEnd(24)} ${e.task_id ?? '-'}  ${JSON.stringify(e.details)}\n${ranLines(
            e,
          )
            .map((line) => `${' '.repeat(8)}${line}\n`)
            .join('')}`,
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

/**
 * `plangate files <execution>`: seed 003's execution files regenerated from the stored events,
 * the same bytes `plangate run` wrote as the events arrived (a hand-edited file is replaced).
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { executionDirName } from '../files/execution-files.ts';
import { writeExecutionFiles } from '../files/writer.ts';
import { PlanSchema } from '../plan/schema.ts';
import { verifyChain } from '../runtime/journal/chain.ts';
import { readEvents } from '../runtime/journal/journal.ts';
import { DEFAULT_STORE_DESCRIPTION, planFile, storePaths } from '../serve/store-directory.ts';
import { openStoreReader, StoreNotFoundError, type StoreReader } from '../serve/store-reader.ts';

export const usage = `Usage: plangate files <execution-arn> [options]

Writes <plan-id>-execution/ (execution-state.md, tasks/NN/handoff.md, execution.log,
result.md, <plan-id>-execution-result.md) from the execution's stored events, replacing what
is there: the events are the truth, the files a view of them. Exit 1 when nothing is stored
or the hash chain is broken.

Options:
  --files-dir DIR   where <plan-id>-execution/ goes (default .)
  --store DIR       the local store (default: ${DEFAULT_STORE_DESCRIPTION})
  -h, --help        show this help`;

export async function run(argv: string[]): Promise<number> {
  let parsed: { values: { store?: string; 'files-dir'?: string }; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { store: { type: 'string' }, 'files-dir': { type: 'string' } },
    });
  } catch (error) {
    process.stderr.write(`plangate files: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  const [executionArn, ...extra] = parsed.positionals;
  if (!executionArn || extra.length > 0) {
    process.stderr.write(
      `plangate files: give exactly one execution ARN (see plangate status)\n\n${usage}\n`,
    );
    return 2;
  }
  const paths = storePaths(parsed.values.store);
  let reader: StoreReader;
  try {
    reader = await openStoreReader(paths);
  } catch (error) {
    if (!(error instanceof StoreNotFoundError)) throw error;
    process.stderr.write(`plangate files: ${error.message}\n`);
    return 1;
  }
  try {
    const events = await readEvents(reader.doc, reader.eventsTable, executionArn);
    const first = events[0];
    if (!first) {
      process.stderr.write(`plangate files: no events stored for ${executionArn}\n`);
      return 1;
    }
    const verdict = verifyChain(events);
    if (!verdict.ok) {
      process.stderr.write(
        `plangate files: the hash chain is broken (${verdict.problem}): ${verdict.message}\n`,
      );
      return 1;
    }
    const digestHex = first.planDigest.replace(/^sha256:/, '');
    let plan: ReturnType<typeof PlanSchema.parse>;
    try {
      plan = PlanSchema.parse(JSON.parse(await readFile(planFile(paths, digestHex), 'utf8')));
    } catch {
      process.stderr.write(`plangate files: the plan ${first.planDigest} is not in ${paths.root}/plans\n`);
      return 1;
    }
    const dir = join(parsed.values['files-dir'] ?? '.', executionDirName(plan.id));
    await writeExecutionFiles(dir, plan, events);
    process.stdout.write(`${resolve(dir)} (${events.length} events)\n`);
    return 0;
  } finally {
    await reader.close();
  }
}

/** `plangate status`: the executions in the local store, from their journals. */
import { parseArgs } from 'node:util';
import { executionReadRequest, localReader, readRefusal, storeReadPolicy } from '../serve/read-policy.ts';
import { DEFAULT_STORE_DESCRIPTION, storePaths } from '../serve/store-directory.ts';
import {
  listExecutions,
  openStoreReader,
  StoreNotFoundError,
  type StoreReader,
} from '../serve/store-reader.ts';

export const usage = `Usage: plangate status [options]

Lists the executions in the local store, newest first: plan, status, started, progress.
Status is SUCCEEDED, FAILED, WAITING (a gate or an escalation waits for a person), RUNNING
(a plangate run/resume is attached) or UNFINISHED (interrupted: plangate resume <execution>).

Options:
  --json        one JSON object per execution
  --store DIR   the local store (default: ${DEFAULT_STORE_DESCRIPTION})
  -h, --help    show this help`;

export async function run(argv: string[]): Promise<number> {
  let values: { json?: boolean; store?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { json: { type: 'boolean' }, store: { type: 'string' } },
    }));
  } catch (error) {
    process.stderr.write(`plangate status: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  const paths = storePaths(values.store);
  let reader: StoreReader | undefined;
  try {
    reader = await openStoreReader(paths);
  } catch (error) {
    // Nothing stored yet is an empty answer, like a store without executions.
    if (!(error instanceof StoreNotFoundError)) throw error;
  }
  try {
    // The policy of the process holding the store decides who reads which execution (ReadExecution).
    const policy = await storeReadPolicy(paths);
    let hidden = 0;
    const executions = reader
      ? await listExecutions(reader, (created) => {
          const refused = readRefusal(policy, executionReadRequest(created, 'status')) !== undefined;
          if (refused) hidden++;
          return !refused;
        })
      : [];
    if (hidden > 0)
      process.stderr.write(
        `plangate status: ${hidden} execution(s) not shown: the store's policy does not let ${localReader().name} read them (ReadExecution)\n`,
      );
    if (values.json) {
      for (const e of executions) process.stdout.write(`${JSON.stringify(e)}\n`);
      return 0;
    }
    if (executions.length === 0) {
      process.stdout.write('No executions in this store. Start one with: plangate run <plan>\n');
      return 0;
    }
    for (const e of executions) {
      process.stdout.write(
        `${e.status.padEnd(10)} ${e.planId} v${e.planVersion}  ${e.completed}/${e.total} tasks  started ${e.started}\n  ${e.executionArn}\n`,
      );
    }
    if (reader?.livePid !== undefined)
      process.stdout.write(`(a plangate session, pid ${reader.livePid}, holds this store)\n`);
    return 0;
  } finally {
    await reader?.close();
  }
}

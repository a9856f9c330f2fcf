/**
 * A process that appends events to one execution's journal on the local stack in `argv[2]`, one
 * after another, and prints each sequence number once the append was answered: a kill -9 test
 * kills it mid-stream and checks that every answered event is still there.
 */
import { startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { Journal } from '../../lib/runtime/journal/journal.ts';

const dir = process.argv[2] as string;
const plane = await startLocalDataPlane({ dataDir: dir });
const journal = new Journal({ dynamo: plane.clients.doc, eventsTable: plane.tableNames.events });
for (let i = 1; ; i++) {
  const { stored } = await journal.append({
    event: 'TASK_STARTED',
    planId: 'p',
    planVersion: 1,
    planDigest: 'sha256:1',
    executionId: 'exec-killed',
    task_id: `s${i}`,
    details: { attempt: 1, progress: `[Task ${i}] ▶ step ${i}` },
  });
  process.stdout.write(`${stored.seq}\n`);
}

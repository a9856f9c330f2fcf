/**
 * A process standing in for one Lambda container: once told "go" on stdin, it appends `count`
 * GATE_ANSWER_REFUSED events to one execution's journal through its own client, as fast as it
 * can, racing the other processes for sequence numbers. Prints `ok` or the error.
 *   contending-appender.ts <dynamo endpoint> <events table> <execution id> <writer> <count>
 */
import { createInterface } from 'node:readline';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { localClients } from '../../lib/aws-local/clients.ts';
import { Journal } from '../../lib/runtime/journal/journal.ts';

const [endpoint, table, executionId, writer, count] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const clients = localClients({ dynamoEndpoint: endpoint, eventsEndpoint: 'http://127.0.0.1:9' });
const journal = new Journal({ dynamo: clients.doc, eventsTable: table });
// One request first: the client's lazy setup is done before the race, which is then only appends.
await clients.doc.send(new GetCommand({ TableName: table, Key: { executionId, sk: '0' } }));
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line === 'go') break;
try {
  await Promise.all(
    Array.from({ length: Number(count) }, (_, i) =>
      journal.append({
        event: 'GATE_ANSWER_REFUSED',
        planId: 'p',
        planVersion: 1,
        planDigest: 'sha256:1',
        executionId,
        details: { gate: 'plan', reason: 'used', message: 'already answered', by: `${writer}-${i}` },
      }),
    ),
  );
  process.stdout.write('ok\n');
} catch (error) {
  process.stdout.write(`error ${(error as Error).message}\n`);
} finally {
  clients.destroy();
  lines.close();
}

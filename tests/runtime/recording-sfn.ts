/**
 * A tiny loopback endpoint standing in for Step Functions' task-token API: the real SFNClient
 * sends SendTaskSuccess/SendTaskFailure to it and the test reads what arrived.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SFNClient } from '@aws-sdk/client-sfn';
import { LOCAL_CREDENTIALS } from '../../lib/aws-local/clients.ts';

export interface RecordingSfn {
  readonly client: SFNClient;
  readonly successes: { taskToken: string; output: unknown }[];
  readonly failures: { taskToken: string; error: string; cause: string }[];
  close(): Promise<void>;
}

export async function startRecordingSfn(): Promise<RecordingSfn> {
  const successes: RecordingSfn['successes'] = [];
  const failures: RecordingSfn['failures'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        taskToken: string;
        output: string;
        error: string;
        cause: string;
      };
      const target = req.headers['x-amz-target'];
      if (target === 'AWSStepFunctions.SendTaskFailure') {
        failures.push({ taskToken: body.taskToken, error: body.error, cause: body.cause });
      } else if (target === 'AWSStepFunctions.SendTaskSuccess') {
        successes.push({ taskToken: body.taskToken, output: JSON.parse(body.output) });
      } else {
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
        res.end(JSON.stringify({ __type: 'UnknownOperationException', message: 'only SendTask*' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new SFNClient({
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  });
  return {
    client,
    successes,
    failures,
    async close() {
      client.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

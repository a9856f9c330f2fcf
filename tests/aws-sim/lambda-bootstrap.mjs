// The simulated Lambda runtime's bootstrap (what /var/runtime is to a function on Lambda): imports
// the function's bundle from the task directory it is given, then invokes its `handler` with each
// event the parent sends over IPC and sends back the result or the error.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const taskRoot = process.argv[2];
const { handler } = await import(pathToFileURL(join(taskRoot, 'index.mjs')).href);
process.on('message', async ({ id, event }) => {
  const context = { functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, awsRequestId: `sim-${id}` };
  try {
    process.send({ id, result: (await handler(event, context)) ?? null });
  } catch (error) {
    process.send({ id, error: { name: error?.name, message: error?.message } });
  }
});
process.send({ ready: true, node: process.version });

/**
 * Runs one Lambda module's `handler` in this process, as Lambda runs it: the event on stdin, the
 * result (or the error, as Lambda reports a function error) as JSON written to the file named by
 * the second argument (stdout is the function's log). The process's environment is the
 * function's: the test that starts it decides what it holds.
 *
 *   node --import tsx tests/support/lambda-child.ts <lambdas/x.ts> <result.json>
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [moduleFile, resultFile] = process.argv.slice(2);
if (!moduleFile || !resultFile) throw new Error('usage: lambda-child.ts <module> <result file>');
const event: unknown = JSON.parse(readFileSync(0, 'utf8'));
const mod = (await import(pathToFileURL(resolve(moduleFile)).href)) as {
  handler: (event: unknown, context: unknown) => Promise<unknown>;
};
const name = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'plangate-test';
const context = {
  functionName: name,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
  memoryLimitInMB: '1024',
  awsRequestId: `request-${process.pid}`,
  getRemainingTimeInMillis: () => 60_000,
};
try {
  writeFileSync(resultFile, JSON.stringify({ result: (await mod.handler(event, context)) ?? null }));
} catch (error) {
  const e = error instanceof Error ? error : new Error(String(error));
  writeFileSync(resultFile, JSON.stringify({ error: { errorType: e.name, errorMessage: e.message } }));
}

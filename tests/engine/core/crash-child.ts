/**
 * The engine process of the kill -9 test (crash.test.ts), killed at random moments:
 *
 *   node crash-child.cjs <storeDir> <workDir> <batch>
 *
 * Runs an engine (default durability) on the store, starts one execution of every crash
 * workload named after `<batch>`, resumes whatever earlier lives left running, and exits once
 * nothing runs. Every task call is appended to `<workDir>/calls.log` (one write(2), before the
 * call returns: the kill cannot undo it); callback tokens go to `tokens.log` and are answered
 * with SendTaskSuccess a moment later, and again by every later life (a worker retrying its answer).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createEngine } from '../../../lib/engine/engine.ts';
import { SfnServiceError, type TaskInvocation } from '../../../lib/engine/types.ts';
import { CRASH_WORKLOADS, callKey, WORK_FUNCTION, workResult } from './crash-workloads.ts';

const [storeDir, workDir, batch] = process.argv.slice(2) as [string, string, string];
const callsLog = path.join(workDir, 'calls.log');
const tokensLog = path.join(workDir, 'tokens.log');

const later = (ms: number) => new Promise((r) => setTimeout(r, ms));

function respond(token: string, output: string): void {
  setTimeout(
    () => {
      engine.sendTaskSuccess({ taskToken: token, output }).catch((error) => {
        // answered before (this or an earlier life): the task has its outcome
        if (error instanceof SfnServiceError && /TaskTimedOut|TaskDoesNotExist/.test(error.code)) return;
        process.stderr.write(`SendTaskSuccess: ${error}\n`);
        process.exit(3);
      });
    },
    Math.floor(Math.random() * 3),
  );
}

const engine = createEngine({
  storeDir,
  timeScale: 0.001,
  invokeResource: async (invocation: TaskInvocation) => {
    const key = callKey(invocation.stateName, invocation.parameters);
    const execution = invocation.executionArn.slice(invocation.executionArn.lastIndexOf(':') + 1);
    fs.appendFileSync(callsLog, `${execution}\t${key}\n`);
    if (invocation.taskToken) {
      const payload = (invocation.parameters as { Payload: unknown }).Payload;
      const output = JSON.stringify(workResult(payload));
      fs.appendFileSync(tokensLog, `${invocation.taskToken}\t${output}\n`);
      respond(invocation.taskToken, output);
      return { StatusCode: 200 };
    }
    if (invocation.resource !== WORK_FUNCTION) throw new Error(`unexpected resource ${invocation.resource}`);
    await later(Math.floor(Math.random() * 3));
    return workResult(invocation.parameters);
  },
});

const machines: string[] = [];
for (const w of CRASH_WORKLOADS) {
  const { stateMachineArn } = await engine.createStateMachine({
    name: w.name,
    definition: JSON.stringify(w.definition),
    roleArn: 'arn:aws:iam::123456789012:role/crash',
  });
  machines.push(String(stateMachineArn));
}
if (fs.existsSync(tokensLog)) {
  for (const line of fs.readFileSync(tokensLog, 'utf8').split('\n')) {
    const [token, output] = line.split('\t');
    if (token && output) respond(token, output);
  }
}
if (batch !== 'finish') {
  for (const [i, w] of CRASH_WORKLOADS.entries()) {
    await engine.startExecution({
      stateMachineArn: machines[i],
      name: `${batch}-${w.name}`,
      input: JSON.stringify(w.input),
    });
  }
}
process.stdout.write('READY\n');
for (;;) {
  const running = [];
  for (const stateMachineArn of machines) {
    let nextToken: string | undefined;
    do {
      const page = await engine.listExecutions({
        stateMachineArn,
        statusFilter: 'RUNNING',
        ...(nextToken ? { nextToken } : {}),
      });
      running.push(...(page.executions ?? []));
      nextToken = page.nextToken;
    } while (nextToken);
  }
  if (running.length === 0) break;
  await Promise.all(running.map((e) => engine.awaitExecution(String(e.executionArn))));
}
await engine.close();
process.stdout.write('DONE\n');
process.exit(0);

/**
 * A child process for the durability tests: runs an engine on a store directory so the test can
 * kill it with SIGKILL mid-execution and start it again on the same store.
 *
 *   tsx durable-child.ts <storeDir> <workDir> start <definitionFile>   → creates the machine, starts one execution
 *   tsx durable-child.ts <storeDir> <workDir> resume                     → restarts, answers the waiting token if any, prints the outcome
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createEngine } from '../../../lib/engine/engine.ts';
import type { TaskInvocation } from '../../../lib/engine/types.ts';

const [storeDir, workDir, phase, definitionFile] = process.argv.slice(2) as [string, string, string, string?];
const invocations = path.join(workDir, 'invocations.log');
const tokenFile = path.join(workDir, 'token.txt');

const engine = createEngine({
  storeDir,
  timeScale: 1,
  invokeResource: async (invocation: TaskInvocation) => {
    fs.appendFileSync(invocations, `${invocation.stateName}\n`);
    if (invocation.taskToken) fs.writeFileSync(tokenFile, invocation.taskToken);
    return { from: invocation.stateName };
  },
});

if (phase === 'start') {
  const { stateMachineArn } = await engine.createStateMachine({
    name: 'Durable',
    definition: fs.readFileSync(String(definitionFile), 'utf8'),
    roleArn: 'arn:aws:iam::123456789012:role/test',
  });
  const { executionArn } = await engine.startExecution({ stateMachineArn, name: 'run-1', input: '{"n":1}' });
  console.log(`started ${executionArn}`);
  setInterval(() => {}, 1000); // keep running until killed
} else {
  const executionArn = 'arn:aws:states:us-east-1:123456789012:execution:Durable:run-1';
  if (fs.existsSync(tokenFile)) {
    await engine.sendTaskSuccess({
      taskToken: fs.readFileSync(tokenFile, 'utf8'),
      output: '{"approved":true}',
    });
  }
  const described = await engine.awaitExecution(executionArn);
  const history = await engine.getExecutionHistory({ executionArn, maxResults: 1000 });
  console.log(JSON.stringify({ described, history: history.events }));
  await engine.close();
  process.exit(0);
}

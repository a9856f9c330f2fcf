/**
 * A shipped example plan run end to end as deployed: its state machine's definition taken from the
 * synthesized template (the compiler's, substitutions filled in), run by the embedded Step
 * Functions engine as its state machine role (each Lambda task's `lambda:InvokeFunction` put to
 * that role's policies as the template writes them), every task a synthesized bundle in Lambda
 * processes of its own (simulated-aws.ts: a new process per concurrent invocation, each with its
 * own /tmp, under the template's IAM, deny by default), and the EFS workspace a directory given
 * only to the plan-process function's processes, at its template mount path. The plan gate is
 * answered as an approver answers it (Approvals, as the approvals Lambda does); every step's
 * contract and the postcondition must pass on files other invocations wrote: the step runner and
 * the contract checker never share a /tmp, and the two parallel branches run in two plan-process
 * containers at once (docs/deploy.md, "Where steps run on AWS").
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SFNClient } from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluate } from '../../lib/aws-local/iam/evaluate.ts';
import { type EngineServer, startEngineServer } from '../../lib/engine/api/index.ts';
import { createEngine, type Engine } from '../../lib/engine/engine.ts';
import { createResourceInvoker, LambdaFunctionError } from '../../lib/engine/resources/index.ts';
import { type LambdaHandler, StatesError, type TaskInvocation } from '../../lib/engine/types.ts';
import { HARNESS_HANDLERS, type HarnessHandlerName } from '../../lib/runtime/catalog.ts';
import { approvalsFor } from '../../lib/runtime/gate/gate.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { workspaceDirectoryName } from '../../lib/runtime/shared/plan-process-function.ts';
import { sharedCdkOut } from '../support/cdk-synth.ts';
import { type SimulatedAws, startSimulatedAws } from './simulated-aws.ts';
import { readSimulatedTemplate, SIM_ACCOUNT, SIM_REGION, type SimulatedFunction } from './template.ts';

let aws: SimulatedAws;
let engine: Engine;
let server: EngineServer;
let sfn: SFNClient;
let work: string;
/** Each Lambda task the engine ran: the function, and whether its role's policies allowed it. */
const invokes: { stateMachine: string; function: string; allowed: boolean }[] = [];

const functionOf = (handler: HarnessHandlerName): SimulatedFunction => {
  const fn = aws.template.functions.find((f) => f.description === HARNESS_HANDLERS[handler].description);
  if (!fn) throw new Error(`no ${handler} function in the template`);
  return fn;
};

/** Step Functions' Lambda integration, as the state machine's role: denied unless its policies allow. */
function lambdaTasks() {
  const handlers: Record<string, LambdaHandler> = Object.fromEntries(
    aws.template.functions.map((fn): [string, LambdaHandler] => [
      fn.arn,
      async (event) => {
        const answer = await aws.invoke(fn, event);
        if ('error' in answer)
          throw new LambdaFunctionError({
            errorType: answer.error.name ?? 'Error',
            errorMessage: answer.error.message ?? '',
            trace: [],
          });
        return answer.result;
      },
    ]),
  );
  const inner = createResourceInvoker({
    lambdaHandlers: handlers,
    region: SIM_REGION,
    accountId: SIM_ACCOUNT,
  });
  return async (task: TaskInvocation): Promise<unknown> => {
    const machine = aws.template.stateMachines.find((m) => m.arn === task.stateMachineArn);
    const target = String((task.parameters as { FunctionName?: unknown }).FunctionName ?? '');
    if (!machine || !task.resource.includes(':lambda:invoke'))
      throw new StatesError('States.Runtime', `not simulated: ${task.resource} of ${task.stateMachineArn}`);
    const decision = evaluate(
      { principalArn: machine.roleArn, action: 'lambda:InvokeFunction', resource: target },
      { identity: aws.template.rolePolicies.get(machine.roleArn) ?? [] },
    );
    invokes.push({ stateMachine: machine.name, function: target, allowed: decision.effect === 'allow' });
    if (decision.effect !== 'allow')
      throw new StatesError('Lambda.AWSLambdaException', `${machine.roleArn} may not invoke ${target}`);
    return inner(task);
  };
}

beforeAll(async () => {
  const cdkOut = (await sharedCdkOut()).dir;
  work = mkdtempSync(join(tmpdir(), 'plangate-plans-e2e-'));
  // Two warm plan-process containers take its calls in turn: a step and its contract, two
  // branches, run with different /tmp.
  aws = await startSimulatedAws(readSimulatedTemplate(cdkOut), {
    warmContainers: new Map([[HARNESS_HANDLERS.planProcess.description, 2]]),
  });
  engine = createEngine({
    storeDir: undefined,
    invokeResource: lambdaTasks(),
    region: SIM_REGION,
    accountId: SIM_ACCOUNT,
  });
  for (const machine of aws.template.stateMachines)
    await engine.createStateMachine({
      name: machine.name,
      definition: machine.definition,
      roleArn: machine.roleArn,
    });
  server = await startEngineServer({ engine });
  sfn = new SFNClient({
    region: SIM_REGION,
    endpoint: server.url,
    credentials: { accessKeyId: 'approvals', secretAccessKey: 'approvals' },
  });
}, 250_000);

afterAll(async () => {
  sfn?.destroy();
  await server?.close();
  await engine?.close();
  await aws?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Starts the plan's machine, approves its plan gate as alice, and waits for the run to end. */
async function runApproved(
  planId: string,
): Promise<{ executionArn: string; status: string; events: JournalRecord[] }> {
  const machine = aws.template.stateMachines.find((m) => m.name === `plangate-${planId}`);
  if (!machine) throw new Error(`no state machine for ${planId}`);
  const started = await engine.startExecution({
    stateMachineArn: machine.arn,
    name: `${planId}-e2e`,
    input: '{}',
  });
  const executionArn = started.executionArn as string;
  const approvals = approvalsFor({
    dynamo: aws.admin.doc,
    tables: aws.tables,
    events: aws.admin.events,
    eventBusName: aws.busName,
    sfn,
    signingKey: 'plans-e2e-signing-key-of-at-least-32-bytes',
  });
  const deadline = Date.now() + 150_000;
  let approved = false;
  for (;;) {
    const { status } = await engine.describeExecution({ executionArn });
    if (status !== 'RUNNING') {
      const events = await readEvents(aws.admin.doc, aws.tables.events, executionArn);
      return { executionArn, status: String(status), events };
    }
    if (Date.now() > deadline) throw new Error(`${planId} still running after 150 s`);
    const [gate] = await approvals.pending(executionArn);
    if (gate && approved) {
      // Anything but the plan gate waits for a person (a failure's escalation): the run went wrong.
      await engine.stopExecution({ executionArn });
      const events = await readEvents(aws.admin.doc, aws.tables.events, executionArn);
      return { executionArn, status: `stopped at a ${gate.gate.kind} gate`, events };
    }
    if (!approved) {
      if (gate) {
        await approvals.answer(gate.linkId, {
          by: 'alice',
          digest: gate.gate.planDigest,
          decision: { decision: 'APPROVE' },
        });
        approved = true;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('examples/local-demo.yaml, deployed', () => {
  let run: Awaited<ReturnType<typeof runApproved>>;

  beforeAll(async () => {
    run = await runApproved('local-demo');
  }, 200_000);

  it('succeeds: every step completed by its passing contract, the postcondition held', () => {
    const failures = run.events
      .filter((e) => /FAILED|MISMATCH/.test(e.event))
      .map((e) => [e.event, e.task_id, e.details]);
    expect(failures).toEqual([]);
    expect(run.status).toBe('SUCCEEDED');
    const completed = run.events.filter((e) => e.event === 'TASK_COMPLETED').map((e) => e.task_id);
    expect(completed.sort()).toEqual([
      'announce',
      'longest',
      'numbers',
      'prepare',
      'report',
      'serve',
      'sum',
      'words',
    ]);
    for (const e of run.events.filter((x) => x.event === 'TASK_COMPLETED'))
      expect(e.details, String(e.task_id)).toMatchObject({ evidence: { passed: true } });
    expect(run.events.filter((e) => e.event === 'POSTCONDITION_CHECKED').map((e) => e.details)).toEqual([
      expect.objectContaining({ postcondition_id: 'report-complete', passed: true }),
    ]);
    expect(run.events.find((e) => e.event === 'EXECUTION_COMPLETE')?.details).toMatchObject({
      succeeded: true,
    });
  });

  it("ran every Lambda task as the machine's role allows it (the template's IAM)", () => {
    const ofDemo = invokes.filter((i) => i.stateMachine === 'plangate-local-demo');
    expect(ofDemo.length).toBeGreaterThan(8);
    expect(ofDemo.filter((i) => !i.allowed)).toEqual([]);
    expect(aws.front.decisions.filter((d) => d.action === 'lambda:InvokeFunction' && !d.allowed)).toEqual([]);
  });

  it("left the run's files in its workspace, which only the plan-process function mounts", () => {
    const planProcess = functionOf('planProcess');
    const [mount] = planProcess.mounts;
    if (!mount) throw new Error('the plan-process function mounts no file system');
    const workspace = join(
      aws.fileSystemDirOf(mount.accessPointArn),
      workspaceDirectoryName(run.executionArn),
    );
    expect(JSON.parse(readFileSync(join(workspace, 'plangate-demo/out/fetched.json'), 'utf8'))).toEqual({
      total: 5050,
      longest: 'epsilon',
    });
    expect(aws.template.functions.filter((f) => f.mounts.length > 0).map((f) => f.logicalId)).toEqual([
      planProcess.logicalId,
    ]);
    // Not vacuous: the step runner and the contract checker ran in processes of their own, and the
    // plan-process calls alternated between containers (no call found the last one's /tmp).
    expect(aws.processCountOf(functionOf('stepRunner'))).toBeGreaterThan(0);
    expect(aws.processCountOf(functionOf('contractChecker'))).toBeGreaterThan(0);
    const pids = aws.invocationPidsOf(planProcess);
    // Eight step commands, seven command contracts, one postcondition.
    expect(pids.length).toBe(16);
    expect(new Set(pids).size).toBe(2);
    // `prepare` made the directories in one container; its contract found them from the other.
    expect(pids[0]).not.toBe(pids[1]);
    for (const pid of new Set(pids)) expect(pids.filter((p) => p === pid).length).toBeGreaterThan(3);
    expect(existsSync(workspace) && readdirSync(workspace)).toEqual(['plangate-demo']);
  });
});

/**
 * Plan code on AWS runs in the plan-process function, never in the harness Lambda that journals:
 * the step-runner handler is driven as AWS runs it (its environment parsed from the catalog, its
 * clients made from that environment, the harness role's credentials in its process environment),
 * and its Lambda client's Invoke of the plan-process function reaches a local stand-in for the
 * Lambda service that runs lambdas/plan-process.ts in a child process of its own, with that
 * function's environment. A step that prints its environment and its parent's
 * (`/proc/$PPID/environ`) shows none of the harness's credentials, nor the Lambda runtime API's
 * address; a step that declares AWS gets the credentials of the plan AWS role, which the step
 * runner (never the plan-process function) assumed for its run with the session policy it
 * declared (the STS call goes to a local stand-in that records it and who signed it). Each
 * invocation runs in a process of its own, as a container of its own may take it: what a run's
 * step writes, its contract reads (they share the run's workspace); another run sees none of it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { sessionPolicy } from '../../lib/plan/aws-access.ts';
import { TABLE_NAME_ENV } from '../../lib/runtime/catalog.ts';
import { DEFAULT_TABLE_NAMES, type TableNames } from '../../lib/runtime/journal/tables.ts';
import { workspaceDirectoryName } from '../../lib/runtime/shared/plan-process-function.ts';

/** The harness role's credentials, as Lambda puts them in the step runner's environment. */
const HARNESS = {
  AWS_ACCESS_KEY_ID: 'harness-role-key-id-7f3a',
  AWS_SECRET_ACCESS_KEY: 'harness-role-secret-9c2e',
  AWS_SESSION_TOKEN: 'harness-role-session-token-41bd',
};
/** The plan-process function's own credentials (its role may only write its logs). */
const PLAN_PROCESS = {
  AWS_ACCESS_KEY_ID: 'plan-process-key-id-2b8c',
  AWS_SECRET_ACCESS_KEY: 'plan-process-secret-d05f',
  AWS_SESSION_TOKEN: 'plan-process-session-token-e61a',
};
/** What the local STS hands out for the plan AWS role. */
const PLAN_RUN = {
  AccessKeyId: 'plan-run-key-id-83aa',
  SecretAccessKey: 'plan-run-secret-5d1e',
  SessionToken: 'plan-run-session-token-c7f0',
};
const PLAN_AWS_ROLE = 'arn:aws:iam::123456789012:role/plangate-plan-aws';
const PLAN_PROCESS_FUNCTION = 'plangate-plan-process';
/** Where Lambda's runtime API listens: plan code could answer the invocation there. */
const RUNTIME_API = '127.0.0.1:9001';
const REPO = join(import.meta.dirname, '../..');
const CHILD = join(REPO, 'tests/support/lambda-child.ts');

let dir: string;
let plane: LocalDataPlane;
let lambdaService: Server;
let sts: Server;
const invocations: { name: string; event: unknown }[] = [];
/** Each AssumeRole's parameters and the access key that signed it. */
const assumed: Record<string, string>[] = [];

/** Runs a lambdas/ module's handler in a child process with exactly `env`, as Lambda would. */
async function inChild(module: string, env: Record<string, string>, event: unknown): Promise<unknown> {
  const resultFile = join(dir, `result-${Math.random().toString(36).slice(2)}.json`);
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, join(REPO, module), resultFile], {
    cwd: REPO,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdin.end(JSON.stringify(event));
  const code = await new Promise<number | null>((done) => child.on('close', done));
  const text = await readFile(resultFile, 'utf8').catch(() => '');
  if (!text) throw new Error(`${module} exited ${code} without a result: ${stderr}`);
  return JSON.parse(text) as unknown;
}

const body = (req: IncomingMessage): Promise<string> =>
  new Promise((done) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    req.on('end', () => done(text));
  });

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** The plan-process function's environment as CDK sets it, and its own role's credentials. */
let planProcessEnv: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-plan-process-'));
  plane = await startLocalDataPlane({ dataDir: dir });
  sts = createServer(async (req, res) => {
    const signer = /Credential=([^/]+)\//.exec(req.headers.authorization ?? '')?.[1] ?? '(unsigned)';
    assumed.push({ ...Object.fromEntries(new URLSearchParams(await body(req))), signer });
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>${PLAN_RUN.AccessKeyId}</AccessKeyId><SecretAccessKey>${PLAN_RUN.SecretAccessKey}</SecretAccessKey><SessionToken>${PLAN_RUN.SessionToken}</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials><AssumedRoleUser><Arn>${PLAN_AWS_ROLE}/run</Arn><AssumedRoleId>AROAPLANRUNTIME:run</AssumedRoleId></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata></AssumeRoleResponse>`,
    );
  });
  const stsEndpoint = await listen(sts);
  planProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    AWS_REGION: 'us-east-1',
    AWS_LAMBDA_FUNCTION_NAME: PLAN_PROCESS_FUNCTION,
    AWS_LAMBDA_RUNTIME_API: RUNTIME_API,
    ...PLAN_PROCESS,
    AWS_ENDPOINT_URL_STS: stsEndpoint,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // Lambda has no bubblewrap.
    PLANGATE_SANDBOX: 'off',
    POWERTOOLS_SERVICE_NAME: 'plangate',
    POWERTOOLS_METRICS_NAMESPACE: 'plangate',
    PLANGATE_WORKDIR: dir,
    // The workspace file system's mount (EFS on AWS): every child, like every container, sees it.
    PLANGATE_WORKSPACE_ROOT: join(dir, 'workspaces'),
    PLANGATE_TEST_PROCESS: 'plan-process-function',
  };
  // The Lambda service: Invoke runs the named function's module in a child process of its own.
  lambdaService = createServer(async (req, res) => {
    const name = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(req.url ?? '')?.[1];
    // Anything but an Invoke of the plan-process function (another process probing loopback ports, too).
    if (req.method !== 'POST' || decodeURIComponent(name ?? '') !== PLAN_PROCESS_FUNCTION) {
      res.writeHead(404, { 'x-amzn-errortype': 'ResourceNotFoundException' });
      res.end(JSON.stringify({ message: `Function not found: ${req.url}` }));
      return;
    }
    const event: unknown = JSON.parse(await body(req));
    invocations.push({ name: PLAN_PROCESS_FUNCTION, event });
    const outcome = (await inChild('lambdas/plan-process.ts', planProcessEnv, event)) as {
      result?: unknown;
      error?: unknown;
    };
    res.writeHead(200, outcome.error ? { 'x-amz-function-error': 'Unhandled' } : {});
    res.end(JSON.stringify(outcome.error ?? outcome.result));
  });
  harnessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...plane.env,
    ...Object.fromEntries(
      Object.entries(TABLE_NAME_ENV).map(([id, env]) => [env, DEFAULT_TABLE_NAMES[id as keyof TableNames]]),
    ),
    PLANGATE_EVENT_BUS: 'default',
    POWERTOOLS_SERVICE_NAME: 'plangate',
    POWERTOOLS_METRICS_NAMESPACE: 'plangate',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    AWS_LAMBDA_FUNCTION_NAME: 'plangate-step-runner',
    ...HARNESS,
    AWS_ENDPOINT_URL_LAMBDA: await listen(lambdaService),
    PLANGATE_SANDBOX: 'off',
    PLANGATE_PLAN_PROCESS_FUNCTION: PLAN_PROCESS_FUNCTION,
    PLANGATE_PLAN_AWS_ROLE_ARN: PLAN_AWS_ROLE,
    AWS_ENDPOINT_URL_STS: stsEndpoint,
    PLANGATE_TEST_PROCESS: 'step-runner',
  };
}, 60_000);

let harnessEnv: Record<string, string>;

afterAll(async () => {
  lambdaService?.close();
  sts?.close();
  await plane?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A step that hands back its environment and its parent's, hex-encoded (so no redaction hides a value). */
const PRINT_ENVIRONMENTS = [
  'hex() { od -An -v -tx1 | tr -d " \\n"; }',
  'echo "own=$(env | hex)" >> "$PLANGATE_OUTPUT"',
  'echo "parent=$(tr "\\0" "\\n" < /proc/$PPID/environ | hex)" >> "$PLANGATE_OUTPUT"',
].join('\n');

const request = (executionId: string, over: Record<string, unknown> = {}) => ({
  plan: { id: 'demo', version: 1, digest: 'sha256:feed' },
  executionId,
  stepId: 'look',
  index: 1,
  total: 1,
  description: 'Look around',
  tool: 'shell',
  args: { command: PRINT_ENVIRONMENTS },
  argOverrides: {},
  inputs: {},
  skip: false,
  attempt: 1,
  outputs: ['own', 'parent'],
  timeoutSeconds: 60,
  inlineOutputLimitBytes: 1_000_000,
  ...over,
});

const unhex = (hex: unknown): string => Buffer.from(String(hex), 'hex').toString('utf8');

/** Runs the step through the step-runner handler, as on AWS; its two environments, decoded. */
async function runOnAws(executionId: string, over: Record<string, unknown> = {}) {
  const outcome = (await inChild('lambdas/step-runner.ts', harnessEnv, request(executionId, over))) as {
    result?: { status: string; output?: Record<string, unknown> };
    error?: unknown;
  };
  expect(outcome.error).toBeUndefined();
  expect(outcome.result?.status).toBe('succeeded');
  return { own: unhex(outcome.result?.output?.own), parent: unhex(outcome.result?.output?.parent) };
}

const harnessValues = Object.values(HARNESS);

describe('plan code on AWS (the plan-process function)', () => {
  it('a shell step holds none of the harness role’s credentials, in its environment or its parent’s', async () => {
    const { own, parent } = await runOnAws(
      'arn:aws:states:us-east-1:123456789012:execution:plangate-demo:env-1',
    );
    for (const value of harnessValues) {
      expect(own).not.toContain(value);
      expect(parent).not.toContain(value);
    }
    // Not vacuous: the parent's environment was read, and it is the plan-process function's.
    expect(parent).toContain('PLANGATE_TEST_PROCESS=plan-process-function');
    expect(parent).not.toContain('PLANGATE_TEST_PROCESS=step-runner');
    // A step that declares no AWS gets no credentials at all, nor the runtime API's address.
    expect(own).not.toMatch(/^AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN)=/m);
    expect(own).not.toMatch(/^AWS_LAMBDA_|^_X_AMZN/m);
    expect(parent).toContain(`AWS_LAMBDA_RUNTIME_API=${RUNTIME_API}`);
    // The plan-process function is not told the plan AWS role: it has nothing to assume it with.
    expect(parent).not.toContain(PLAN_AWS_ROLE);
    expect(invocations.at(-1)).toMatchObject({ name: PLAN_PROCESS_FUNCTION });
  }, 60_000);

  it('a step that declares AWS gets the plan AWS role, assumed for its run with the session policy it declared', async () => {
    const aws = { allow: [{ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::reports/*'] }] };
    const { own, parent } = await runOnAws(
      'arn:aws:states:us-east-1:123456789012:execution:plangate-demo:env-2',
      { aws },
    );
    expect(own).toMatch(new RegExp(`^AWS_ACCESS_KEY_ID=${PLAN_RUN.AccessKeyId}$`, 'm'));
    expect(own).toMatch(new RegExp(`^AWS_SECRET_ACCESS_KEY=${PLAN_RUN.SecretAccessKey}$`, 'm'));
    expect(own).toMatch(new RegExp(`^AWS_SESSION_TOKEN=${PLAN_RUN.SessionToken}$`, 'm'));
    for (const value of [...harnessValues, ...Object.values(PLAN_PROCESS)]) expect(own).not.toContain(value);
    for (const value of harnessValues) expect(parent).not.toContain(value);
    // The step runner assumed it, once, with its own (the harness role's) credentials.
    expect(assumed).toEqual([
      expect.objectContaining({
        Action: 'AssumeRole',
        RoleArn: PLAN_AWS_ROLE,
        RoleSessionName: 'plangate-env-2',
        Policy: sessionPolicy(aws),
        signer: HARNESS.AWS_ACCESS_KEY_ID,
      }),
    ]);
    // What the plan-process function was handed: the session's credentials, never a role to assume.
    expect(invocations.at(-1)?.event).toMatchObject({
      awsCredentials: { accessKeyId: PLAN_RUN.AccessKeyId, sessionToken: PLAN_RUN.SessionToken },
    });
    expect(JSON.stringify(invocations.at(-1)?.event)).not.toContain(PLAN_AWS_ROLE);
  }, 60_000);

  it("a step and its contract share the run's workspace, in separate invocations; another run has its own", async () => {
    const run = 'arn:aws:states:us-east-1:123456789012:execution:plangate-demo:shared-1';
    const other = 'arn:aws:states:us-east-1:123456789012:execution:plangate-demo:shared-2';
    const wrote = (await inChild(
      'lambdas/step-runner.ts',
      harnessEnv,
      request(run, { args: { command: 'mkdir -p out && echo built > out/report.txt && pwd' }, outputs: [] }),
    )) as { result?: { status: string; output?: { stdout?: string } } };
    expect(wrote.result?.status).toBe('succeeded');
    // It ran in the run's directory of the workspace root, not in a container's /tmp.
    expect(wrote.result?.output?.stdout?.trim()).toBe(join(dir, 'workspaces', workspaceDirectoryName(run)));
    const check = async (executionId: string) =>
      (await inChild('lambdas/contract-checker.ts', harnessEnv, {
        plan: { id: 'demo', version: 1, digest: 'sha256:feed' },
        executionId,
        stepId: 'look',
        index: 1,
        total: 1,
        description: 'Look around',
        attempt: 1,
        run: { stepId: 'look', status: 'succeeded', attempt: 1, durationMs: 1, output: {} },
        contract: { kind: 'command', command: 'grep -qx built out/report.txt', timeoutSeconds: 30 },
      })) as { result?: { evidence?: { passed?: boolean } }; error?: unknown };
    expect((await check(run)).result?.evidence?.passed).toBe(true);
    // The other run's contract finds no report: the step is not completed.
    const failed = await check(other);
    expect(failed.result?.evidence?.passed).not.toBe(true);
    expect(JSON.stringify(failed.error)).toMatch(/ContractFailed/);
  }, 60_000);

  it('a command contract, run by the contract-checker handler, holds none of them either', async () => {
    const before = invocations.length;
    // Passes only where neither the contract's environment nor its parent's holds a harness credential.
    const command = [
      `! env | grep -q -e ${harnessValues.join(' -e ')}`,
      `! tr '\\0' '\\n' < /proc/$PPID/environ | grep -q -e ${harnessValues.join(' -e ')}`,
      "tr '\\0' '\\n' < /proc/$PPID/environ | grep -q PLANGATE_TEST_PROCESS=",
    ].join(' && ');
    const executionId = 'arn:aws:states:us-east-1:123456789012:execution:plangate-demo:env-3';
    const outcome = (await inChild('lambdas/contract-checker.ts', harnessEnv, {
      plan: { id: 'demo', version: 1, digest: 'sha256:feed' },
      executionId,
      stepId: 'look',
      index: 1,
      total: 1,
      description: 'Look around',
      attempt: 1,
      run: { stepId: 'look', status: 'succeeded', attempt: 1, durationMs: 1, output: {} },
      contract: { kind: 'command', command, expectExitCode: 0, timeoutSeconds: 30 },
    })) as { result?: { passed?: boolean; evidence?: { summary?: string } }; error?: unknown };
    expect(outcome.error).toBeUndefined();
    expect(outcome.result?.evidence?.summary).toMatch(/exit 0/);
    expect(invocations.length).toBe(before + 1);
  }, 60_000);
});

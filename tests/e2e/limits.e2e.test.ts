/**
 * Limits are answered where they bite (issue 21): a valid plan that Step Functions cannot take (a
 * definition over 1 MiB after splitting, a state payload over 256 KiB) is refused by `plangate
 * validate` and `plangate compile` with located problems, and by `POST /plans` with 400 and the
 * same problems; a body over the Plans API's limit gets 413 naming the limit. Never 500.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalPrincipal } from '../../lib/aws-local/api-gateway/sigv4.ts';
import { ApiClient } from '../support/api-client.ts';
import { echoChainPlan } from '../support/echo-plan.ts';
import { PLANGATE_NODE_ARGS } from '../support/plangate-cli.ts';
import { REPO, workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

const exec = promisify(execFile);

/** Three echo steps; the middle one echoes `bytes` bytes (its contract stays small). */
function planWithBigStep(id: string, bytes: number) {
  const plan = echoChainPlan(id, ['first', 'big', 'last']);
  (plan.steps[1] as { args: { message: string } }).args.message = 'x'.repeat(bytes);
  return plan;
}

/** ~1.2 MB in one step: no split can fit it in a 1 MiB definition, and its request is over 256 KiB. */
const UNDEPLOYABLE = planWithBigStep('undeployable', 1_200_000);
/** ~300 KB in one step: the definition fits, the step's request does not. */
const HEAVY_REQUEST = planWithBigStep('heavy-request', 300_000);
/** 2,000 steps: more than one run's PLAN_CREATED can record (about 1,600 such steps fit). */
const TOO_MANY_STEPS = echoChainPlan(
  'too-many-steps',
  Array.from({ length: 2_000 }, (_, i) => `s${i + 1}`),
);

async function plangate(cwd: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await exec(process.execPath, [...PLANGATE_NODE_ARGS, ...args], {
      cwd: REPO,
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr, cwd };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr, cwd };
  }
}

let dir: string;
const files: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-limits-'));
  for (const [name, plan] of Object.entries({ UNDEPLOYABLE, HEAVY_REQUEST, TOO_MANY_STEPS })) {
    files[name] = join(dir, `${plan.id}.json`);
    await writeFile(files[name], JSON.stringify(plan, null, 2));
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('plangate validate and compile', () => {
  it('validate reports a definition over 1 MiB and a payload over 256 KiB, located in the file', async () => {
    const { code, stdout } = await plangate(dir, 'validate', files.UNDEPLOYABLE as string);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /undeployable\.json:\d+:\d+ error definition-too-large .*1048576 bytes.* \[\/steps\/1\/args\/message\]/,
    );
    expect(stdout).toMatch(/error payload-too-large .*262144 bytes.* \[\/steps\/1\/args\/message\]/);
    expect(stdout).not.toContain('✓');
  }, 60_000);

  it('validate --json lists the problems and says the plan is not valid', async () => {
    const { code, stdout } = await plangate(dir, 'validate', files.HEAVY_REQUEST as string, '--json');
    expect(code).toBe(1);
    const result = JSON.parse(stdout) as {
      valid: boolean;
      problems: { code: string; location: { line?: number; pointer?: string } }[];
    };
    expect(result.valid).toBe(false);
    expect(result.problems.map((p) => p.code)).toEqual(['payload-too-large']);
    expect(result.problems[0]?.location.pointer).toBe('/steps/1/args/message');
    expect(result.problems[0]?.location.line).toBeGreaterThan(1);
  }, 60_000);

  it('validate refuses a plan with more steps than one run can record, as POST /plans does, naming the limit', async () => {
    const { code, stdout } = await plangate(dir, 'validate', files.TOO_MANY_STEPS as string);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /too-many-steps\.json:\d+:\d+ error too-many-steps the plan's 2000 steps are too many for one run: .*408576 bytes.* \[\/steps\]/,
    );
    expect(stdout).not.toContain('✓');
  }, 60_000);

  it('compile refuses the plan with the same problems and writes nothing', async () => {
    const out = join(dir, 'out');
    const { code, stderr } = await plangate(dir, 'compile', files.UNDEPLOYABLE as string, '--out', out);
    expect(code).toBe(1);
    expect(stderr).toMatch(/error definition-too-large/);
    expect(stderr).toMatch(/error payload-too-large/);
    await expect(readdir(out)).rejects.toThrow();
  }, 60_000);
});

describe('POST /plans on plangate serve', () => {
  let serve: ServeProcess;
  /** Every response is checked against the served OpenAPI document as it arrives. */
  let api: ApiClient;
  let principal: LocalPrincipal;
  let store: string;

  beforeAll(async () => {
    store = await mkdtemp(join(tmpdir(), 'plangate-limits-store-'));
    serve = startServe(['--store', store], await workDir());
    api = new ApiClient(await serve.line(() => true));
    [principal] = JSON.parse(await readFile(join(store, 'credentials.json'), 'utf8')) as [LocalPrincipal];
  }, 90_000);

  afterAll(async () => {
    await serve?.stop();
    await rm(store, { recursive: true, force: true });
  });

  const post = (body: string) =>
    api.request('POST', '/plans', {
      signWith: principal,
      body,
      headers: { 'content-type': 'application/json' },
    });

  it('answers 400 with located problems for a plan Step Functions cannot take', async () => {
    const response = await post(JSON.stringify(UNDEPLOYABLE, null, 2));
    expect(response.status).toBe(400);
    const body = response.json() as {
      error: string;
      problems: { code: string; location: { line?: number; pointer?: string } }[];
    };
    expect(body.error).toBe('invalid plan');
    expect(body.problems.map((p) => p.code).sort()).toEqual(['definition-too-large', 'payload-too-large']);
    for (const problem of body.problems) {
      expect(problem.location.pointer).toBe('/steps/1/args/message');
      expect(problem.location.line).toBeGreaterThan(1);
    }
  }, 60_000);

  it('answers 413 naming the limit for a body over it', async () => {
    const response = await post(JSON.stringify(planWithBigStep('too-big', 9 * 1024 * 1024)));
    expect(response.status).toBe(413);
    const body = response.json() as { error: string; message?: string };
    expect(body.message).toMatch(/\d+ bytes/);
  }, 60_000);

  it("answers 413 from the gateway itself for a body over API Gateway's 10 MB quota", async () => {
    const response = await post('x'.repeat(11 * 1024 * 1024));
    expect(response.status).toBe(413);
    expect(response.json()).toEqual({ message: 'Request Entity Too Large' });
  }, 60_000);
});

/**
 * The step runner asks the platform's policy about the call it is about to make, with its args
 * resolved (values from earlier steps included, secret values redacted): a denial is journaled and
 * fails the step as a permission failure; a rollback denied stops the rollbacks. On the local data
 * plane (dynalite, the local bus), with the runner's own handler module.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as makeRunner } from '../../lambdas/step-runner.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { PolicySet } from '../../lib/policy/policy-set.ts';
import { type HarnessDeps, journalFor } from '../../lib/runtime/deps.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { RunnerRequest } from '../../lib/runtime/payloads/index.ts';
import { builtinRegistry } from '../../lib/runtime/tools/builtins.ts';

let dir: string;
let plane: LocalDataPlane;
let deps: HarnessDeps;
const plan = { id: 'policed', version: 1, digest: 'sha256:cafe' };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-run-policy-'));
  plane = await startLocalDataPlane({ dataDir: join(dir, 'data') });
  const policies = join(dir, 'policies');
  await mkdir(policies);
  await writeFile(
    join(policies, 'org.cedar'),
    `permit (principal, action, resource);
@id("no-quarantined-hosts")
forbid (principal, action == Action::"RunStep", resource)
when { resource.hosts.contains("quarantine.example.net") };
@id("secret-seen")
forbid (principal, action == Action::"RunStep", resource)
when { resource.hasTag("command") && resource.getTag("command") like "*tok-very-secret-123*" };
@id("no-shell-undo")
forbid (principal, action == Action::"RunStep", resource)
when { context.rollback && resource.tool == "shell" && resource.hasTag("command") && resource.getTag("command") like "*undo*" };
`,
  );
  deps = {
    dynamo: plane.clients.doc,
    tables: plane.tableNames,
    events: plane.clients.events,
    tools: builtinRegistry(),
    cwd: dir,
    env: { PATH: process.env.PATH, API_TOKEN: 'tok-very-secret-123' },
    policy: await PolicySet.load(policies),
  };
});
afterAll(async () => {
  await plane.close();
  await rm(dir, { recursive: true, force: true });
});

const request = (executionId: string, over: Partial<RunnerRequest>): RunnerRequest => ({
  plan,
  executionId,
  stepId: 'fetch',
  index: 2,
  total: 2,
  description: 'Fetch the status page',
  tool: 'shell',
  subscriptions: [],
  args: { command: 'true' },
  argOverrides: {},
  secrets: [{ name: 'apiToken', source: 'env', ref: 'API_TOKEN' }],
  inputs: {},
  dependsOn: [],
  skip: false,
  attempt: 1,
  outputs: [],
  timeoutSeconds: 30,
  inlineOutputLimitBytes: 8192,
  dispatch: false,
  ...over,
});

const events = (executionId: string) => readEvents(plane.clients.doc, plane.tableNames.events, executionId);

describe('policy where a step runs', () => {
  it('denies a call whose args, filled from an earlier step, reach a forbidden host: a permission failure, journaled', async () => {
    const runner = makeRunner(deps);
    const failed = await runner(
      request('exec-host', {
        args: { command: 'curl -sS https://${steps.pick.host}/status > fetched.txt' },
        dependsOn: ['pick'],
        inputs: { pick: { status: 'completed', output: { host: 'quarantine.example.net' } } },
      }),
    ).catch((error: unknown) => error as Error);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).name).toBe('Plangate.Permission');
    expect((await events('exec-host')).map((e) => e.event)).toEqual([
      'TASK_STARTED',
      'POLICY_DECISION',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
    ]);
    const [decision] = (await events('exec-host')).filter((e) => e.event === 'POLICY_DECISION');
    expect(decision?.details).toMatchObject({
      action: 'RunStep',
      decision: 'deny',
      policies: ['no-quarantined-hosts'],
      outcome: 'the step did not run',
    });
    expect((await events('exec-host')).at(-1)?.details).toMatchObject({ failure_type: 'permission' });
    // The tool never ran.
    expect(await readdir(dir)).not.toContain('fetched.txt');
  });

  it("an approver's modification is judged as the call that will be made", async () => {
    const failed = await makeRunner(deps)(
      request('exec-override', {
        args: { command: 'echo fine' },
        argOverrides: { command: 'curl https://QUARANTINE.example.net:8443/' },
      }),
    ).catch((error: unknown) => error as Error);
    expect((failed as Error).name).toBe('Plangate.Permission');
  });

  it("never shows policy a secret's value: the resolved args are redacted first", async () => {
    const ran = await makeRunner(deps)(
      request('exec-secret', { args: { command: 'echo ${secrets.apiToken} > /dev/null' } }),
    );
    expect(ran).toMatchObject({ status: 'succeeded' });
    const stored = JSON.stringify(await events('exec-secret'));
    expect(stored).not.toContain('tok-very-secret-123');
  });

  it('a rollback the policy denies does not run and stops the rollbacks', async () => {
    const executionId = 'exec-undo';
    await journalFor(deps).append({
      executionId,
      planId: plan.id,
      planVersion: plan.version,
      planDigest: plan.digest,
      task_id: 'make',
      event: 'TASK_COMPLETED',
      details: {
        result: {},
        evidence: { kind: 'none', passed: true, summary: 'ran', checkedAt: new Date().toISOString() },
        progress: '[Task 1/1] ✓ make',
      },
    });
    const result = await makeRunner(deps)({
      kind: 'rollback',
      plan,
      executionId,
      procedures: {
        make: {
          description: 'Make it',
          tool: 'shell',
          args: { command: 'echo undo > undone.txt' },
          timeoutSeconds: 30,
        },
      },
      secrets: [],
      rehearsal: false,
    });
    expect(result).toMatchObject({ status: 'failed', stepId: 'make' });
    const stored = await events(executionId);
    expect(stored.map((e) => e.event)).toEqual([
      'TASK_COMPLETED',
      'ROLLBACK_STARTED',
      'POLICY_DECISION',
      'ROLLBACK_FAILED',
    ]);
    expect(stored[2]?.details).toMatchObject({
      policies: ['no-shell-undo'],
      outcome: 'the rollback did not run',
    });
    expect(await readdir(dir)).not.toContain('undone.txt');
  });
});

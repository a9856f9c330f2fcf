/**
 * The step runner asks the platform's policy about the call it is about to make, with its args
 * resolved (values from earlier steps included, secret values redacted): a denial is journaled and
 * fails the step as a permission failure; a rollback denied stops the rollbacks. On the local data
 * plane (dynalite, the local bus), with the runner's own handler module.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { makeHandler as makeRunner } from '../../lambdas/step-runner.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { PolicySet } from '../../lib/policy/policy-set.ts';
import { type HarnessDeps, journalFor } from '../../lib/runtime/deps.ts';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import type { EVENT_DETAILS, RunnerRequest } from '../../lib/runtime/payloads/index.ts';
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
@id("two-sre-for-destructive")
forbid (principal, action == Action::"CompleteGate", resource)
when { resource.destructive }
unless { resource.hasTag("sre") && resource.getTag("sre") >= 2 };
`,
  );
  await writeFile(join(policies, 'groups.json'), JSON.stringify({ sre: ['sam', 'sue'] }));
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

  it("judges a shell call with the step's env values in place of their variables", async () => {
    const failed = await makeRunner(deps)(
      request('exec-env-host', {
        args: {
          command: 'curl -sS "https://$HOST/status" > fetched.txt',
          env: { HOST: '${steps.pick.host}' },
        },
        dependsOn: ['pick'],
        inputs: { pick: { status: 'completed', output: { host: 'quarantine.example.net' } } },
      }),
    ).catch((error: unknown) => error as Error);
    expect((failed as Error).name).toBe('Plangate.Permission');
    const [decision] = (await events('exec-env-host')).filter((e) => e.event === 'POLICY_DECISION');
    expect(decision?.details).toMatchObject({ policies: ['no-quarantined-hosts'] });
    expect(await readdir(dir)).not.toContain('fetched.txt');
  });
});

describe("a run-time value that makes a gated call do more re-opens its gate's completion", () => {
  /** A plan gate approved by `approvers`, then the step `find <dir> $OPT` with OPT = -delete from an earlier step. */
  async function runApprovedBy(
    executionId: string,
    approved: Omit<z.input<(typeof EVENT_DETAILS)['GATE_APPROVED']>, 'gate'>,
    opt = '${steps.pick.opt}',
  ) {
    const scratch = join(dir, executionId);
    await mkdir(join(scratch, 'inner'), { recursive: true });
    await journalFor(deps).append({
      executionId,
      planId: plan.id,
      planVersion: plan.version,
      planDigest: plan.digest,
      event: 'GATE_APPROVED',
      details: { gate: 'plan', digest: plan.digest, ...approved },
    });
    const outcome = await makeRunner(deps)(
      request(executionId, {
        args: { command: `find ${executionId} $OPT`, env: { OPT: opt } },
        dependsOn: ['pick'],
        inputs: { pick: { status: 'completed', output: { opt: '-delete' } } },
      }),
    ).catch((error: unknown) => error as Error);
    return { outcome, deleted: !existsSync(join(scratch, 'inner')) };
  }

  it('one approver from outside sre: the step does not run, a permission failure naming the rule', async () => {
    const { outcome, deleted } = await runApprovedBy('exec-one-friend', {
      approver: 'friend',
      approvers: ['friend'],
    });
    expect((outcome as Error).name).toBe('Plangate.Permission');
    expect(deleted).toBe(false);
    const stored = await events('exec-one-friend');
    expect(stored.map((e) => e.event)).toEqual([
      'GATE_APPROVED',
      'TASK_STARTED',
      'POLICY_DECISION',
      'TASK_FAILED',
      'FAILURE_DETECTED',
      'FAILURE_CLASSIFIED',
    ]);
    expect(stored[2]?.details).toMatchObject({
      action: 'RunStep',
      principal: 'friend',
      decision: 'deny',
      policies: ['two-sre-for-destructive'],
      outcome: 'the step did not run',
      call: { tool: 'shell', args: { command: 'find exec-one-friend -delete' } },
    });
    expect(stored.at(-1)?.details).toMatchObject({ failure_type: 'permission' });
  });

  it('a literal env value counts as a run-time one: the gate judged the command with $OPT unread', async () => {
    const { outcome, deleted } = await runApprovedBy('exec-literal', { approvers: ['friend'] }, '-delete');
    expect((outcome as Error).name).toBe('Plangate.Permission');
    expect(deleted).toBe(false);
  });

  it('two sre approvers (from the groups file, or proved by their tokens): the step runs', async () => {
    const byFile = await runApprovedBy('exec-two-sre', { approver: 'sam, sue', approvers: ['sam', 'sue'] });
    expect(byFile.outcome).toMatchObject({ status: 'succeeded' });
    expect(byFile.deleted).toBe(true);
    const byToken = await runApprovedBy('exec-two-tokens', {
      approvers: ['ann', 'bob'],
      approver_groups: [
        { approver: 'ann', groups: ['sre'] },
        { approver: 'bob', groups: ['sre'] },
      ],
    });
    expect(byToken.outcome).toMatchObject({ status: 'succeeded' });
    const oneToken = await runApprovedBy('exec-one-token', {
      approvers: ['ann', 'bob'],
      approver_groups: [{ approver: 'ann', groups: ['sre'] }],
    });
    expect((oneToken.outcome as Error).name).toBe('Plangate.Permission');
  });
});

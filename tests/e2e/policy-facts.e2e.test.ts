/**
 * An organisation's policy sees every fact a plan controls, through `plangate run --policy DIR`
 * (issue 31): a host in any spelling (a trailing dot, no scheme, a proxy, handed on by an earlier
 * step through the step's env), a program however it is quoted, Lambda by any route, the whole
 * escalation ladder. Refused at submission with one line naming the policy; refused at run time
 * with POLICY_DECISION, the step never run.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPlan, storedEvents, workDir } from './cli.ts';

const ORG = `permit (principal, action, resource);

@id("no-quarantined-hosts")
forbid (principal, action == Action::"RunStep", resource)
when { resource.hosts.contains("quarantine.example.net") || resource.destinationUnknown };

@id("no-quarantined-plans")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.hosts.contains("quarantine.example.net") };

@id("no-quarantined-proxies")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.hosts.contains("proxy.quarantine.example.net") };

@id("kubectl-is-for-sre")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.programs.contains("kubectl") }
unless { principal in Group::"sre" };

@id("helm-is-for-sre")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.programs.contains("helm") }
unless { principal in Group::"sre" };

@id("lambda-is-for-deployers")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.awsServices.contains("lambda") }
unless { principal in Group::"deployers" };

@id("gates-wait-a-day-at-most")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.approval.longestWaitSeconds > 86400 };
`;

async function orgPolicy(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-facts-policy-'));
  await writeFile(join(dir, 'org.cedar'), ORG);
  return dir;
}

const step = (
  id: string,
  tool: string,
  args: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) => ({
  id,
  description: `Run ${id}`,
  tool,
  args,
  onFail: { retries: 0, escalation: 'abort' },
  contract: { kind: 'assert', expression: 'true' },
  ...extra,
});

const plan = (id: string, steps: unknown[], extra: Record<string, unknown> = {}) => ({
  id,
  objective: 'Check one thing the policy judges',
  sizePolicy: { minSteps: 1 },
  steps,
  ...extra,
});

async function planFile(cwd: string, content: unknown): Promise<string> {
  const file = join(cwd, 'plan.json');
  await writeFile(file, JSON.stringify(content));
  return file;
}

/** One fact per step, each seen by its own policy: the refusal names every one of them. */
const EVERY_FACT = plan(
  'facts-every-one',
  [
    step('get', 'http', { method: 'GET', url: 'https://quarantine%2Eexample.net./x' }),
    step('proxied', 'shell', { command: "c''url -sS -x PROXY.quarantine.example.net.:3128 ok.example.com" }),
    step('pods', 'shell', { command: 'k\\ubectl get pods' }),
    step('charts', 'shell', { command: '"$TOOL" list', env: { TOOL: 'helm' } }, { requiresApproval: true }),
    step(
      'warm',
      'shell',
      { command: 'aws lambda invoke --function-name warm out.json' },
      { requiresApproval: true },
    ),
  ],
  { approval: { timeoutSeconds: 86_400, escalateTo: [{ approvers: ['a'] }, { approvers: ['b'] }] } },
);

describe.concurrent('the policy sees every fact a plan controls, in plangate run', {
  timeout: 90_000,
}, () => {
  it('refused at submission: a host spelled otherwise, a proxy, quoting, the env, the aws CLI, the ladder', async () => {
    const cwd = await workDir();
    const run = runPlan(await planFile(cwd, EVERY_FACT), cwd, [
      '--approve',
      '--policy',
      await orgPolicy(),
      '--as',
      'mallory',
    ]);
    expect(await run.exited, run.stderr).toBe(1);
    const line =
      run.stderr.split('\n').find((l) => l.includes('policy denies mallory SubmitPlan')) ?? run.stderr;
    for (const policy of [
      'no-quarantined-plans',
      'no-quarantined-proxies',
      'kubectl-is-for-sre',
      'helm-is-for-sre',
      'lambda-is-for-deployers',
      'gates-wait-a-day-at-most',
    ])
      expect(line).toContain(policy);
    expect(run.stderr).not.toContain('Execution:');
  });

  it('refused at run time: a host handed on by an earlier step through the env, with a trailing dot', async () => {
    const cwd = await workDir();
    const content = plan('facts-handed-on', [
      step(
        'pick',
        'echo',
        { message: 'Quarantine.Example.Net.' },
        {
          outputs: ['message'],
          contract: { kind: 'assert', expression: '$exists(output.message)' },
        },
      ),
      step(
        'fetch',
        'shell',
        {
          command: 'curl -sS --max-time 2 "https://$TARGET/status" > got.txt',
          env: { TARGET: '${steps.pick.message}' },
        },
        { dependsOn: ['pick'], contract: { kind: 'command', command: 'test -f got.txt' } },
      ),
    ]);
    const run = runPlan(await planFile(cwd, content), cwd, ['--approve', '--policy', await orgPolicy()]);
    expect(await run.exited, run.stderr).toBe(1);
    const events = await storedEvents(cwd, run.executionArn);
    const decision = events.find((e) => e.event === 'POLICY_DECISION' && e.task_id === 'fetch');
    expect(decision?.details).toMatchObject({
      action: 'RunStep',
      decision: 'deny',
      policies: ['no-quarantined-hosts'],
      call: { tool: 'shell', args: { env: { TARGET: 'Quarantine.Example.Net.' } } },
    });
    expect(events.some((e) => e.task_id === 'fetch' && e.event === 'TASK_COMPLETED')).toBe(false);
  });
});

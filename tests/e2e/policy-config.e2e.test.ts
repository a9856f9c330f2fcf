/**
 * Policy configuration applies or fails loudly (docs/policy.md, "Deploying a policy set"): the
 * directory PLANGATE_POLICY_DIR names decides in `plangate run` and `serve` as `--policy` does
 * (a store's readers decide by its holder's policy: read-policy.e2e.test.ts), and a directory
 * holding a file that is not a policy file (a .cedar in a subfolder, another extension) stops
 * the command with where it is, instead of leaving that policy out.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPlan, workDir } from './cli.ts';
import { startServe } from './serve-process.ts';

const HARMLESS = {
  id: 'policy-config',
  version: 1,
  objective: 'Echo one value and prove it was echoed',
  sizePolicy: { minSteps: 1 },
  steps: [
    {
      id: 'say',
      description: 'Echo hello',
      tool: 'echo',
      args: { message: 'hello' },
      contract: { kind: 'assert', expression: 'output.message = "hello"' },
    },
  ],
};

/** An organisation's set: echo is reserved. */
async function orgPolicies(extra: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-policy-config-'));
  const files: Record<string, string> = {
    'org.cedar': `permit (principal, action, resource);
@id("echo-is-reserved")
forbid (principal, action == Action::"SubmitPlan", resource)
when { resource.tools.contains("echo") };
`,
    ...extra,
  };
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

async function planFile(cwd: string): Promise<string> {
  const file = join(cwd, 'plan.json');
  await writeFile(file, JSON.stringify(HARMLESS));
  return file;
}

describe.concurrent('policy configuration, through the CLI', { timeout: 90_000 }, () => {
  it('PLANGATE_POLICY_DIR decides plangate run as --policy does', async () => {
    const cwd = await workDir();
    const run = runPlan(await planFile(cwd), cwd, ['--approve', '--as', 'mallory'], {
      PLANGATE_POLICY_DIR: await orgPolicies(),
    });
    expect(await run.exited).toBe(1);
    expect(run.stderr).toContain('(forbidden by echo-is-reserved): not run.');
  });

  it('PLANGATE_POLICY_DIR decides plangate serve', async () => {
    const policies = await orgPolicies();
    const store = await mkdtemp(join(tmpdir(), 'plangate-policy-config-serve-'));
    const serve = startServe(['--identity', 'header', '--store', store], await workDir(), {
      PLANGATE_POLICY_DIR: policies,
    });
    try {
      const url = await serve.line(() => true);
      expect(await serve.line((l) => l.startsWith('policy: '))).toBe(`policy: 2 policies of ${policies}`);
      const res = await fetch(`${url}/plans`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-plangate-user': 'mallory' },
        body: JSON.stringify(HARMLESS),
      });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ policies: ['echo-is-reserved'] });
    } finally {
      await serve.stop();
    }
  });

  it('a .cedar file in a subfolder stops plangate run with where it is (other names: tests/policy/policy-files.test.ts)', async () => {
    const cwd = await workDir();
    const policies = await orgPolicies({ 'more/lambda.cedar': 'forbid (principal, action, resource);\n' });
    const run = runPlan(await planFile(cwd), cwd, ['--policy', policies]);
    expect(await run.exited).toBe(2);
    expect(run.stderr).toContain(
      `${join(policies, 'more')} error policy-dir a policy directory has no subfolders`,
    );
  });
});

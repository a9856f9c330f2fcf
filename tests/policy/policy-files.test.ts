import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultPolicyDir, PolicySet, policyDirOf } from '../../lib/policy/policy-set.ts';
import { REPO } from '../e2e/cli.ts';

const PERMIT = '@id("baseline-permit")\npermit (principal, action, resource);\n';

async function policyDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-policy-files-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

const errorsOf = async (dir: string) =>
  (await PolicySet.check(dir)).problems
    .filter((p) => p.severity === 'error')
    .map((p) => ({ file: p.location.file.slice(dir.length + 1), message: p.message }));

describe('every file of a policy directory is loaded or refused, located', () => {
  it('refuses a .cedar file in a subfolder, another extension, another case, a stray file', async () => {
    for (const stray of [
      'more/org.cedar',
      'org.cedar.txt',
      'ORG.CEDAR',
      'org.cedar~',
      'notes.txt',
      '.hidden',
    ]) {
      const dir = await policyDir({ 'baseline.cedar': PERMIT, [stray]: PERMIT });
      const errors = await errorsOf(dir);
      expect(errors, stray).toHaveLength(1);
      expect(errors[0]?.file, stray).toBe(stray.split('/')[0]);
      expect(errors[0]?.message, stray).toMatch(/no subfolders|not a policy file/);
      await expect(PolicySet.load(dir), stray).rejects.toThrow(/do not load/);
    }
  });

  it('takes a README.md, groups.json, case files and the plans they name; not a plan they do not name', async () => {
    const dir = await policyDir({
      'baseline.cedar': PERMIT,
      'README.md': '# our policies\n',
      'groups.json': '{"sre": ["sam@example.com"]}',
      'org.cases.yaml':
        'plans:\n  cleanup: cleanup.yaml\ncases:\n  - {name: x, principal: a, action: SubmitPlan, plan: cleanup, expect: allow}\n  - {name: y, principal: a, action: SubmitPlan, plan: other.yaml, expect: allow}\n',
      'cleanup.yaml': 'id: cleanup\n',
      'other.yaml': 'id: other\n',
    });
    expect(await errorsOf(dir)).toEqual([]);
    await writeFile(join(dir, 'stray.yaml'), 'id: stray\n');
    expect(await errorsOf(dir)).toEqual([
      { file: 'stray.yaml', message: expect.stringContaining('not a policy file') },
    ]);
  });

  it('the shipped set and the worked example load as they are', async () => {
    expect(await errorsOf(defaultPolicyDir())).toEqual([]);
    expect(await errorsOf(join(REPO, 'examples/policies/org'))).toEqual([]);
  });
});

describe('policyDirOf: one answer for every process', () => {
  it('--policy, else PLANGATE_POLICY_DIR (relative to the Lambda code or the working directory), else the shipped set', () => {
    expect(policyDirOf('given', { PLANGATE_POLICY_DIR: '/env' })).toBe(join(process.cwd(), 'given'));
    expect(policyDirOf(undefined, { PLANGATE_POLICY_DIR: 'org' })).toBe(join(process.cwd(), 'org'));
    expect(policyDirOf(undefined, { PLANGATE_POLICY_DIR: 'policies', LAMBDA_TASK_ROOT: '/var/task' })).toBe(
      '/var/task/policies',
    );
    expect(policyDirOf(undefined, {})).toBe(defaultPolicyDir());
  });
});

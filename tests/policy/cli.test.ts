/**
 * `plangate policy validate|test|explain` through the CLI's own entry point: the tools a policy
 * author uses on the shipped set and on the worked example of docs/policy.md.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../plan/cli-harness.ts';

const REPO = join(import.meta.dirname, '../..');
const ORG = join(REPO, 'examples/policies/org');

describe('plangate policy', () => {
  it('validate: the shipped set and the worked example are valid; a broken set is located, exit 1', async () => {
    const shipped = await runCli(['policy', 'validate']);
    expect(shipped.code, shipped.stderr).toBe(0);
    expect(shipped.stdout).toMatch(/policies valid against plangate's schema/);
    expect((await runCli(['policy', 'validate', ORG])).code).toBe(0);

    const dir = await mkdtemp(join(tmpdir(), 'plangate-policy-cli-'));
    await writeFile(
      join(dir, 'org.cedar'),
      'permit (principal, action, resource);\n\nforbid (principal, action == Action::"RunStep", resource)\nwhen { resource.host == "x" };\n',
    );
    const broken = await runCli(['policy', 'validate', dir]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(`${join(dir, 'org.cedar')}:4:8 error cedar-validation`);
    expect(broken.stderr).toMatch(/host/);
  });

  it('test: runs the table of cases, and a case that does not hold fails with what was decided', async () => {
    const passing = await runCli(['policy', 'test', ORG]);
    expect(passing.code, passing.stdout + passing.stderr).toBe(0);
    expect(passing.stdout).toMatch(/17 passed, 0 failed/);

    const cases = join(await mkdtemp(join(tmpdir(), 'plangate-policy-cases-')), 'wrong.cases.yaml');
    await writeFile(
      cases,
      `plans: { cleanup: ${join(ORG, 'cleanup.yaml')} }
cases:
  - name: the friend completes the gate alone
    principal: friend
    action: CompleteGate
    plan: cleanup
    expect: allow
`,
    );
    const failing = await runCli(['policy', 'test', ORG, cases]);
    expect(failing.code).toBe(1);
    expect(failing.stdout).toContain(
      `✗ the friend completes the gate alone (${cases}: cases[0] "the friend completes the gate alone"): expected allow, got deny by two-sre-for-destructive [hard-mandatory]`,
    );

    // A revision or resolved values of a step the plan does not have: located, the case fails.
    await writeFile(
      cases,
      `plans: { cleanup: ${join(ORG, 'cleanup.yaml')} }
cases:
  - name: a revision of no step
    principal: friend
    action: CompleteGate
    plan: cleanup
    revision: { constructor: { command: ls } }
    expect: allow
`,
    );
    const unknownStep = await runCli(['policy', 'test', ORG, cases]);
    expect(unknownStep.code).toBe(1);
    expect(unknownStep.stderr).toContain(
      `✗ ${cases}: cases[0] "a revision of no step": revision: step "constructor" is not a step of cleanup`,
    );
  });

  it('explain: what one person may do with a plan, and which policies decide', async () => {
    const explained = await runCli([
      'policy',
      'explain',
      join(ORG, 'cleanup.yaml'),
      '--as',
      'friend',
      '--submitted-by',
      'carol',
      '--policy',
      ORG,
    ]);
    expect(explained.code, explained.stderr).toBe(0);
    expect(explained.stdout).toContain('friend (no groups) and plan cleanup v1, submitted by carol');
    expect(explained.stdout).toMatch(
      /✗ CompleteGate +Gate "cleanup@v1#plan": deny by two-sre-for-destructive/,
    );
    expect(explained.stdout).toMatch(/✓ ApprovePlanGate +Plan "cleanup@v1": allow by baseline-permit/);
    const own = await runCli([
      'policy',
      'explain',
      join(ORG, 'cleanup.yaml'),
      '--as',
      'carol',
      '--submitted-by',
      'carol',
    ]);
    // The plan's own block refuses it first (it names only friend), as the gate does; policy alone would too.
    expect(own.stdout).toMatch(
      /✗ ApprovePlanGate +Plan "cleanup@v1": refused by the plan's approval block: carol is not one of this plan's approvers \(policy alone: deny by no-self-approval \[hard-mandatory\]\)/,
    );
  });
});

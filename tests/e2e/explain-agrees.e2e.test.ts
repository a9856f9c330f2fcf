/**
 * `plangate policy explain` agrees with `plangate serve` (docs/policy.md, "Tools for policy
 * authors"): the same answers, given to a served plan's gate and asked of explain about the same
 * plan, are refused or let through alike, the plan's own approval block included (named
 * approvers, forbiddenApprovers, no self-approval, allowAutoApprove).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliRun, workDir } from './cli.ts';
import { startServe } from './serve-process.ts';

const PLAN = {
  id: 'explain-agrees',
  version: 1,
  objective: 'Echo one value once a named approver approved',
  sizePolicy: { minSteps: 1 },
  approval: {
    approvers: ['alice@example.com', 'carol', 'mallory@example.com'],
    forbiddenApprovers: ['MALLORY@example.com'],
    allowAutoApprove: false,
  },
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

/** Who answers, in order (the last one's approval decides the gate). */
const ANSWERERS = ['dave', 'mallory@EXAMPLE.com', 'carol', 'ALICE@example.com'];

async function explained(file: string, cwd: string, as: string): Promise<string> {
  const run = new CliRun(['policy', 'explain', file, '--as', as, '--submitted-by', 'carol'], cwd);
  expect(await run.exited, run.stderr).toBe(0);
  return run.stdout;
}

describe('policy explain and serve, the same cases', { timeout: 90_000 }, () => {
  it("refuse and allow the same answers, the plan's approval block included", async () => {
    const cwd = await workDir();
    const file = join(cwd, 'plan.json');
    await writeFile(file, JSON.stringify(PLAN));
    const store = await mkdtemp(join(tmpdir(), 'plangate-explain-agrees-'));
    const serve = startServe(['--identity', 'header', '--store', store], cwd);
    try {
      const [url, ...explanations] = await Promise.all([
        serve.line(() => true),
        ...ANSWERERS.map((as) => explained(file, cwd, as)),
      ]);
      const submitted = await fetch(`${url}/plans`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-plangate-user': 'carol' },
        body: JSON.stringify(PLAN),
      });
      expect(submitted.status).toBe(201);
      const line = await serve.line((l) => l.startsWith('gate plan of explain-agrees v1 waits: '));
      const link = `${url}/approvals/${line.split('/approvals/')[1]}`;
      const { planDigest } = (await (
        await fetch(link, { headers: { accept: 'application/json' } })
      ).json()) as {
        planDigest: string;
      };
      const served: boolean[] = [];
      for (const as of ANSWERERS) {
        const res = await fetch(link, {
          method: 'POST',
          headers: { accept: 'application/json', 'content-type': 'application/json', 'x-plangate-user': as },
          body: JSON.stringify({ digest: planDigest, decision: 'APPROVE' }),
        });
        served.push(res.status === 200);
      }
      const approves = explanations.map((out) => /^ {2}✓ ApprovePlanGate /m.test(out ?? ''));
      expect(approves).toEqual(served);
      expect(served).toEqual([false, false, false, true]);
      expect(explanations[0]).toContain(
        "refused by the plan's approval block: dave is not one of this plan's approvers",
      );
      expect(explanations[1]).toContain('mallory@example.com may not answer this gate');
      expect(explanations[2]).toContain('carol submitted this plan and may not approve it');
      for (const out of explanations) expect(out).toContain('allowAutoApprove: false');
    } finally {
      await serve.stop();
    }
  });
});

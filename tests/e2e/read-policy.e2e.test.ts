/**
 * Who reads a local store's journal is decided by the policy of the process holding it
 * (docs/policy.md, "Reading the journal"): `plangate status`, `events`, `logs` and `audit` ask the
 * policy `plangate serve --policy DIR` recorded in its store, while it runs and after it stopped,
 * and the reader cannot pick another (`audit --policy` is refused, PLANGATE_POLICY_DIR is not asked).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultPolicyDir } from '../../lib/policy/policy-set.ts';
import { CliRun, workDir } from './cli.ts';
import { startServe } from './serve-process.ts';

const PLAN = {
  id: 'read-policy',
  version: 1,
  objective: 'Echo one value once approved',
  sizePolicy: { minSteps: 1 },
  approval: { allowAutoApprove: false },
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

async function readers(store: string, cwd: string, executionArn: string, env: Record<string, string> = {}) {
  const read = async (...args: string[]): Promise<Read> => {
    const run = new CliRun([...args, '--store', store], cwd, env);
    return { code: await run.exited, stderr: run.stderr, stdout: run.stdout };
  };
  // One after another: a store nobody holds is opened by its reader, and one process at a time
  // may hold its database.
  const results = [];
  for (const args of [['status'], ['events', executionArn], ['logs', executionArn], ['audit', 'query']])
    results.push(await read(...args));
  return results as [Read, Read, Read, Read];
}

interface Read {
  readonly code: number | null;
  readonly stderr: string;
  readonly stdout: string;
}

describe("a store's readers, under its holder's policy", { timeout: 90_000 }, () => {
  it('status, events, logs and audit are refused as the serve holding the store decides, and after it stopped', async () => {
    const cwd = await workDir();
    const policies = await mkdtemp(join(tmpdir(), 'plangate-read-policy-'));
    await writeFile(
      join(policies, 'org.cedar'),
      `permit (principal, action, resource);
@id("only-auditors-read")
forbid (principal, action in [Action::"ReadAudit", Action::"ReadExecution"], resource)
unless { principal == User::"the-auditor" };
`,
    );
    const store = await mkdtemp(join(tmpdir(), 'plangate-read-policy-store-'));
    const serve = startServe(['--identity', 'header', '--store', store, '--policy', policies], cwd);
    let executionArn: string;
    try {
      const url = await serve.line(() => true);
      const res = await fetch(`${url}/plans`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-plangate-user': 'carol' },
        body: JSON.stringify(PLAN),
      });
      expect(res.status).toBe(201);
      executionArn = ((await res.json()) as { executionArn: string }).executionArn;
      await serve.line((l) => l.startsWith('gate plan of read-policy v1 waits: '));
      // The reader's own choice of policy counts for nothing: the shipped set would let them read.
      const held = await readers(store, cwd, executionArn, { PLANGATE_POLICY_DIR: defaultPolicyDir() });
      const [status, events, logs, audit] = held;
      expect(status.stdout).not.toContain('read-policy');
      expect(status.stderr).toContain('1 execution(s) not shown');
      for (const refused of [events, logs, audit]) {
        expect(refused.code, refused.stderr).toBe(1);
        expect(refused.stderr).toContain('only-auditors-read');
      }
      const picked = new CliRun(['audit', 'query', '--store', store, '--policy', defaultPolicyDir()], cwd);
      expect(await picked.exited).toBe(2);
      expect(picked.stderr).toContain("--policy is not the reader's to choose");
    } finally {
      await serve.stop();
    }
    // Not held any more: the store's recorded policy still decides.
    const [, events, , audit] = await readers(store, cwd, executionArn);
    for (const refused of [events, audit]) {
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toContain('only-auditors-read');
    }
  });
});

/**
 * Issue 29: a history forged in the store's DynamoDB (fields rewritten and re-chained with the
 * documented hash, a dropped tail, an inserted event) is reported by `plangate audit verify`
 * against the signed anchors the run left, through the real CLI; the untouched run verifies.
 */
import { appendFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readExecutionItems } from '../../lib/audit/verify.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { signAnchor } from '../../lib/runtime/journal/anchor-digest.ts';
import { fromItem } from '../../lib/runtime/journal/journal.ts';
import { loadAnchorKey } from '../../lib/serve/anchor-key.ts';
import { digestLogFile } from '../../lib/serve/digest-log.ts';
import { defaultStoreDir, storePaths } from '../../lib/serve/store-directory.ts';
import { forgeries, type Item, replaceExecution } from '../support/journal-forgery.ts';
import { writeMarkerPlan } from '../support/marker-plan.ts';
import { CliRun, runPlan, workDir } from './cli.ts';

let cwd: string;
let store: string;
let env: Record<string, string>;
let executionArn: string;
let original: Item[];

async function withPlane<T>(work: (plane: LocalDataPlane) => Promise<T>): Promise<T> {
  const plane = await startLocalDataPlane({ dataDir: store });
  try {
    return await work(plane);
  } finally {
    await plane.close();
  }
}

async function verifyAll(
  ...extra: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = new CliRun(['audit', 'verify', '--all', '--store', store, ...extra], cwd, env);
  const code = await cli.exited;
  return { code, stdout: cli.stdout, stderr: cli.stderr };
}

beforeAll(async () => {
  cwd = await workDir();
  store = defaultStoreDir(cwd);
  // The anchor key lives outside the store (and outside the workspace).
  env = { PLANGATE_ANCHOR_KEY_DIR: join(await mkdtemp(join(tmpdir(), 'plangate-anchor-key-')), 'keys') };
  const run = runPlan(
    await writeMarkerPlan(cwd, 'anchored', { approvers: ['alice'] }),
    cwd,
    ['--as', 'alice', '--solo'],
    env,
  );
  await run.untilEvent('GATE_APPROVAL_REQUESTED');
  run.answer('approve');
  expect(await run.exited).toBe(0);
  executionArn = run.executionArn;
  original = await withPlane((plane) =>
    readExecutionItems(plane.clients.doc, plane.tableNames.events, executionArn),
  );
}, 120_000);

afterAll(async () => {
  if (original)
    await withPlane((p) => replaceExecution(p.clients.doc, p.tableNames.events, executionArn, original));
});

describe.sequential('plangate audit verify against the signed anchors', { timeout: 60_000 }, () => {
  it('an untouched run verifies, anchored to its last event', async () => {
    const out = await verifyAll();
    expect(out.stderr).toContain('all intact');
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(`ok       ${executionArn}`);
    expect(out.stdout).toContain(`anchored to seq ${original.length}`);
    expect(out.stdout).not.toContain('not yet anchored');
    const digests = await readFile(digestLogFile(storePaths(store)), 'utf8');
    // Batched: fewer anchors than events, the last one at the run's end.
    expect(digests.trim().split('\n').length).toBeLessThan(original.length);
  });

  for (const forgery of forgeries('alice')) {
    it(`reports ${forgery.name}`, async () => {
      await withPlane(async (p) =>
        replaceExecution(
          p.clients.doc,
          p.tableNames.events,
          executionArn,
          forgery.forge(original.map(fromItem)),
        ),
      );
      try {
        const out = await verifyAll();
        expect(out.code).toBe(1);
        expect(out.stderr).toContain('1 with problems');
        expect(out.stdout).toContain(`BROKEN   ${executionArn}`);
        expect(out.stdout).toMatch(new RegExp(`\\d+\\s+${forgery.expected}\\s+seq \\d+: `));
      } finally {
        await withPlane((p) => replaceExecution(p.clients.doc, p.tableNames.events, executionArn, original));
      }
    });
  }

  it('reports an anchor signed with another key, and still the divergence', async () => {
    const [rewrite] = forgeries('alice');
    const forged = rewrite?.forge(original.map(fromItem)) ?? [];
    await withPlane((p) => replaceExecution(p.clients.doc, p.tableNames.events, executionArn, forged));
    const file = digestLogFile(storePaths(store));
    const before = await readFile(file, 'utf8');
    try {
      // The attacker's own key, and an anchor of the forged head.
      const attacker = await loadAnchorKey(await mkdtemp(join(tmpdir(), 'plangate-attacker-')), store);
      const last = forged.at(-1) as Item;
      const digest = await signAnchor(
        attacker.signer,
        { executionId: executionArn, seq: Number(last.seq), hash: String(last.hash) },
        new Date(),
      );
      await appendFile(file, `${JSON.stringify(digest)}\n`);
      const out = await verifyAll();
      expect(out.code).toBe(1);
      expect(out.stdout).toContain('bad-signature');
      expect(out.stdout).toContain('diverged');
    } finally {
      await writeFile(file, before);
      await withPlane((p) => replaceExecution(p.clients.doc, p.tableNames.events, executionArn, original));
    }
  });

  it('says which events are not yet anchored, without calling that a problem', async () => {
    const file = digestLogFile(storePaths(store));
    const before = await readFile(file, 'utf8');
    const lines = before.trim().split('\n');
    // As if the process had stopped before its last batch: the last anchor gone.
    await writeFile(file, `${lines.slice(0, -1).join('\n')}\n`);
    try {
      const out = await verifyAll();
      expect(out.code).toBe(0);
      expect(out.stdout).toMatch(/\d+ event\(s\) not yet anchored/);
      expect(out.stderr).toContain('1 execution(s) with events not yet anchored');
    } finally {
      await writeFile(file, before);
    }
  });
});

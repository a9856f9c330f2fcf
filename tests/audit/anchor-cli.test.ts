/**
 * `plangate audit verify` with anchors, in process on a real store: runs journaled with the
 * local stack's anchorer (Journal + Anchorer + the store's digest log, the key outside the store),
 * the key to trust chosen by `--anchor-key` or the key directory, and the options' usage errors.
 */
import { appendFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { run } from '../../lib/cli/audit.ts';
import { Anchorer } from '../../lib/runtime/journal/anchorer.ts';
import { Journal } from '../../lib/runtime/journal/journal.ts';
import { ANCHOR_KEY_DIR_ENV, loadAnchorKey } from '../../lib/serve/anchor-key.ts';
import { openDigestLog } from '../../lib/serve/digest-log.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { EXEC, runEvents } from './seed.ts';

let store: string;
let keyDir: string;
const savedKeyDir = process.env[ANCHOR_KEY_DIR_ENV];

beforeAll(async () => {
  store = join(await mkdtemp(join(tmpdir(), 'plangate-anchor-cli-')), '.plangate');
  keyDir = join(await mkdtemp(join(tmpdir(), 'plangate-anchor-cli-key-')), 'keys');
  process.env[ANCHOR_KEY_DIR_ENV] = keyDir;
  const key = await loadAnchorKey(keyDir, store);
  const plane = await startLocalDataPlane({ dataDir: store });
  const anchorer = new Anchorer({
    signer: key.signer,
    sink: await openDigestLog(storePaths(store), key.publicKeyPem),
  });
  const journal = new Journal({
    dynamo: plane.clients.doc,
    eventsTable: plane.tableNames.events,
    anchor: anchorer,
  });
  for (const event of runEvents(EXEC.deploy1, 'deploy', 'ana@example.com', 0)) await journal.append(event);
  await anchorer.flush();
  await plane.close();
});
afterAll(() => {
  if (savedKeyDir === undefined) delete process.env[ANCHOR_KEY_DIR_ENV];
  else process.env[ANCHOR_KEY_DIR_ENV] = savedKeyDir;
});

async function audit(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    return { code: await run(argv), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

describe('plangate audit verify: anchors', () => {
  it("checks the chain against the anchors with the key directory's public key", async () => {
    const out = await audit('verify', '--all', '--store', store);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^ok {7}.*anchored to seq \d+/m);
    expect(out.stderr).toContain(`the local anchor key's public half (${keyDir})`);
    const json = JSON.parse((await audit('verify', '--all', '--store', store, '--json')).stdout.trim());
    expect(json.anchors).toMatchObject({ problems: [], unanchored: 0 });
    expect(json.anchors.anchoredSeq).toBe(json.count);
  });

  it('reports every anchor as bad-signature under another trusted key (--anchor-key)', async () => {
    const other = await loadAnchorKey(join(await mkdtemp(join(tmpdir(), 'plangate-other-')), 'k'), store);
    const file = join(other.dir, 'other.pub');
    await writeFile(file, other.publicKeyPem);
    const out = await audit('verify', '--all', '--store', store, '--anchor-key', file);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain('bad-signature');
    expect(out.stderr).toContain(`the public key in ${file}`);
  });

  it('reports a digest log line that is not a digest, with its line number', async () => {
    const log = join(storePaths(store).anchors, 'digests.jsonl');
    const before = await readFile(log, 'utf8');
    await appendFile(log, '{"v":1,"seq":"x"}\n');
    try {
      const out = await audit('verify', '--all', '--store', store);
      expect(out.code).toBe(1);
      const line = before.trim().split('\n').length + 1;
      expect(out.stdout).toContain(`digests.jsonl:${line}: unreadable-digest:`);
    } finally {
      await writeFile(log, before);
    }
  });

  it('--anchor-bucket goes with --aws (exit 2)', async () => {
    const out = await audit('verify', '--all', '--store', store, '--anchor-bucket', 'b');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--anchor-bucket goes with --aws');
  });
});

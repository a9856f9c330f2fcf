/**
 * Forgery corpus: one real `plangate run` of a small plan (its anchors signed with a key outside
 * the store), then its history forged in the store's DynamoDB as someone with write access to the
 * table (and to the store's digest log) would: the named forgeries of issue 29 (who approved
 * rewritten in every event and re-chained with the documented hash, dropped tails, an inserted,
 * removed or swapped event, re-chained) checked by the real `plangate audit verify --all`, then
 * seeded random re-chained edits (any field of any event up to the last anchor) and forged digests
 * (signed with the forger's own key) checked by the same verification code. Every forgery must be
 * reported; the untouched history must verify.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { localAnchorSource, verifyAnchors } from '../../lib/audit/anchor-source.ts';
import { readExecutionItems, verifyExecution } from '../../lib/audit/verify.ts';
import { type LocalDataPlane, startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { signAnchor } from '../../lib/runtime/journal/anchor-digest.ts';
import { fromItem } from '../../lib/runtime/journal/journal.ts';
import type { JournalRecord } from '../../lib/runtime/payloads/index.ts';
import { ANCHOR_KEY_DIR_ENV, loadAnchorKey } from '../../lib/serve/anchor-key.ts';
import { digestLogFile } from '../../lib/serve/digest-log.ts';
import { defaultStoreDir, storePaths } from '../../lib/serve/store-directory.ts';
import { CliRun, runPlan } from '../../tests/e2e/cli.ts';
import { forgeries, type Item, rechain, replaceExecution } from '../../tests/support/journal-forgery.ts';
import { writeMarkerPlan } from '../../tests/support/marker-plan.ts';

export interface ForgeryResult {
  readonly forgeries: number;
  readonly undetected: number;
  readonly undetectedNames: string[];
  readonly byKind: Record<string, { forgeries: number; detected: number }>;
  /** The untouched history verified (exit 0) through the CLI. */
  readonly untouchedVerifies: boolean;
  readonly events: number;
  readonly anchors: number;
}

const RANDOM_EDITS = 80;

export async function forgeryCorpus(seed: number): Promise<ForgeryResult> {
  const cwd = await mkdtemp(join(tmpdir(), 'plangate-forgery-'));
  const store = defaultStoreDir(cwd);
  const env = { [ANCHOR_KEY_DIR_ENV]: join(await mkdtemp(join(tmpdir(), 'plangate-forgery-key-')), 'keys') };
  const run = runPlan(
    await writeMarkerPlan(cwd, 'forgery', { approvers: ['alice'] }),
    cwd,
    ['--as', 'alice', '--solo'],
    env,
  );
  await run.untilEvent('GATE_APPROVAL_REQUESTED');
  run.answer('approve');
  if ((await run.exited) !== 0) throw new Error(`the run failed:\n${run.stderr.slice(-2000)}`);
  const execution = run.executionArn;
  const withPlane = async <T>(work: (p: LocalDataPlane) => Promise<T>): Promise<T> => {
    const plane = await startLocalDataPlane({ dataDir: store });
    try {
      return await work(plane);
    } finally {
      await plane.close();
    }
  };
  const original = await withPlane((p) => readExecutionItems(p.clients.doc, p.tableNames.events, execution));
  const records = original.map(fromItem);
  const logFile = digestLogFile(storePaths(store));
  const log = await readFile(logFile, 'utf8');
  const byKind: ForgeryResult['byKind'] = {};
  const undetectedNames: string[] = [];
  const tally = (kind: string, name: string, detected: boolean) => {
    byKind[kind] ??= { forgeries: 0, detected: 0 };
    byKind[kind].forgeries++;
    if (detected) byKind[kind].detected++;
    else undetectedNames.push(name);
  };
  const cliVerify = async () => {
    const cli = new CliRun(['audit', 'verify', '--all', '--store', store], cwd, env);
    return { code: await cli.exited, stdout: cli.stdout };
  };

  const untouched = await cliVerify();
  const untouchedVerifies = untouched.code === 0;

  // The named forgeries, each through the real CLI.
  for (const forgery of forgeries('alice')) {
    await withPlane((p) =>
      replaceExecution(p.clients.doc, p.tableNames.events, execution, forgery.forge(records)),
    );
    const out = await cliVerify();
    tally('named (CLI)', forgery.name, out.code === 1 && out.stdout.includes(forgery.expected));
  }

  // Seeded random re-chained edits, and forged digests, through the same verification code.
  const lastAnchored = Math.max(
    ...log
      .trim()
      .split('\n')
      .map((line) => Number(JSON.parse(line).seq)),
  );
  const edits = fc.sample(
    fc.record({
      at: fc.integer({ min: 0, max: lastAnchored - 1 }),
      field: fc.constantFrom('timestamp', 'task_name', 'details', 'event', 'planVersion'),
      value: fc.string({ minLength: 1, maxLength: 12 }),
    }),
    { numRuns: RANDOM_EDITS, seed },
  );
  const attacker = await loadAnchorKey(await mkdtemp(join(tmpdir(), 'plangate-forger-')), store);
  await withPlane(async (p) => {
    const check = async (forged: Item[]) => {
      await replaceExecution(p.clients.doc, p.tableNames.events, execution, forged);
      const anchors = await localAnchorSource({ store, env });
      const chain = await verifyExecution(p.clients.doc, p.tableNames.events, execution);
      const anchor = await verifyAnchors(p.clients.doc, p.tableNames.events, execution, anchors);
      return chain.problems.length + anchor.problems.length > 0;
    };
    for (const { at, field, value } of edits) {
      const edited = records.map((r, i): JournalRecord => {
        if (i !== at) return r;
        if (field === 'details') return { ...r, details: { ...r.details, forged: value } };
        if (field === 'planVersion') return { ...r, planVersion: r.planVersion + 1 + value.length };
        if (field === 'event')
          return { ...r, event: r.event === 'TASK_STARTED' ? 'TASK_SKIPPED' : 'TASK_STARTED' };
        return { ...r, [field]: `${String(r[field as 'timestamp'] ?? '')}${value}` };
      });
      tally('random re-chained edit', `seq ${at + 1} ${field}`, await check(rechain(edited)));
    }
    // The forger also anchors the forged head, with a key of their own, in the store's digest log.
    for (const forgery of forgeries('alice')) {
      const forged = forgery.forge(records);
      const last = forged.at(-1) as Item;
      const digest = await signAnchor(
        attacker.signer,
        { executionId: execution, seq: Number(last.seq), hash: String(last.hash) },
        new Date(),
      );
      await writeFile(logFile, `${log}${JSON.stringify(digest)}\n`);
      tally("forged and re-anchored with the forger's key", forgery.name, await check(forged));
    }
    await writeFile(logFile, log);
    await replaceExecution(p.clients.doc, p.tableNames.events, execution, original);
  });
  const forged = Object.values(byKind).reduce((n, k) => n + k.forgeries, 0);
  return {
    forgeries: forged,
    undetected: undetectedNames.length,
    undetectedNames,
    byKind,
    untouchedVerifies,
    events: original.length,
    anchors: log.trim().split('\n').length,
  };
}

/**
 * `plangate audit` as a user runs it, on a real local store: dynalite opened on the store's data
 * (no session) or reached through a running session's endpoint; output captured, exit codes checked.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../bin/plangate.ts';
import { startLocalDataPlane } from '../../lib/aws-local/data-plane.ts';
import { run } from '../../lib/cli/audit.ts';
import { formatSeq } from '../../lib/runtime/journal/journal.ts';
import { releaseSession, storePaths, writeSession } from '../../lib/serve/store-directory.ts';
import { EXEC, HOSTILE_TASK_NAME, seedRuns } from './seed.ts';

let dir: string;
let store: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-audit-cli-'));
  store = join(dir, '.plangate');
  const plane = await startLocalDataPlane({ dataDir: store });
  await seedRuns(plane.clients.doc, plane.tableNames.events);
  await plane.close();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
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

/** Changes the store's table directly, then lets it go (the store is single-process). */
async function tamper(change: (plane: Awaited<ReturnType<typeof startLocalDataPlane>>) => Promise<unknown>) {
  const plane = await startLocalDataPlane({ dataDir: store });
  try {
    await change(plane);
  } finally {
    await plane.close();
  }
}

describe('plangate audit', () => {
  it('usage: help exits 0, mistakes exit 2 with the problem named', async () => {
    expect((await audit('--help')).stdout).toContain('plangate audit <query|export|verify>');
    const help = await audit('query', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Query on index byTask');
    expect(help.stdout).toContain('Only with none of the five given is the table scanned');
    expect((await audit()).code).toBe(2);
    expect((await audit('drop')).stderr).toContain('unknown subcommand "drop"');
    const bad = await audit('query', '--store', store, '--task', 'build', '--since', 'noon');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--task: expected <planId>#<taskId>');
    expect(bad.stderr).toContain('--since: expected an ISO 8601');
    expect((await audit('query', '--limit', '0')).stderr).toContain('--limit');
    expect((await audit('query', '--aws')).stderr).toContain('--aws needs --table');
    expect((await audit('export', '--store', store)).stderr).toContain('--out FILE is required');
    expect((await audit('verify', '--store', store)).code).toBe(2);
  });

  it('the dispatcher lists and loads the command', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await main(['audit', 'verify', '--help'])).toBe(0);
      expect(String(out.mock.calls[0]?.[0])).toMatch(/^Usage: plangate audit verify/);
      expect(await main(['--help'])).toBe(0);
      expect(out.mock.calls.map((c) => String(c[0])).join('')).toContain('audit ');
    } finally {
      out.mockRestore();
    }
  });

  it('a missing store is an error (exit 1) and is not created', async () => {
    const missing = join(dir, 'nowhere');
    const result = await audit('query', '--store', missing);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no plangate store at ${missing}`);
    await expect(import('node:fs/promises').then((fs) => fs.access(missing))).rejects.toThrow();
  });

  it('query: JSON lines from the chosen index, the access explained on stderr', async () => {
    const result = await audit(
      'query',
      '--store',
      store,
      '--plan',
      'deploy',
      '--type',
      'TASK_STARTED',
      '--json',
    );
    expect(result.code).toBe(0);
    const records = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records.map((r) => r.executionId)).toEqual([EXEC.deploy1, EXEC.deploy2]);
    expect(result.stderr).toContain(
      'Query of plangate-events index byPlan (planId = "deploy"), filtered on event',
    );
  });

  it('query: one table row per event, hostile text escaped for the terminal', async () => {
    const result = await audit('query', '--store', store, '--task', 'deploy#build', '--limit', '3');
    expect(result.code).toBe(0);
    const rows = result.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(3);
    expect(result.stdout).not.toContain('\u202e');
    expect(result.stdout).not.toContain('\r');
    expect(result.stderr).toContain('3 events');
    expect(HOSTILE_TASK_NAME).toContain('\n');
  });

  it('export then verify --export: digest and chains check out; verify --all passes', async () => {
    for (const format of ['jsonl', 'csv']) {
      const out = join(dir, `all.${format}`);
      const exported = await audit('export', '--store', store, '--out', out, '--format', format);
      expect(exported.code).toBe(0);
      expect(exported.stdout).toMatch(/Exported 18 events .* sha256 [0-9a-f]{64}/);
      const checked = await audit('verify', '--export', out);
      expect(checked.code).toBe(0);
      expect(checked.stdout.match(/^ok /gm)).toHaveLength(3);
    }
    const all = await audit('verify', '--store', store, '--all');
    expect(all.code).toBe(0);
    expect(all.stderr).toContain('3 executions verified: all intact');
  });

  it('verify --export: an edit hidden behind a recomputed digest is still found by the chains', async () => {
    const file = join(dir, 'all.jsonl');
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
    const trailer = JSON.parse(lines.pop()!) as { manifest: { sha256: string } };
    const edited = lines.map((l) =>
      l.replace('"approver":"bo@example.com"', '"approver":"mallory@example.com"'),
    );
    expect(edited).not.toEqual(lines);
    const content = edited.map((l) => `${l}\n`).join('');
    trailer.manifest.sha256 = createHash('sha256').update(content).digest('hex');
    const forged = join(dir, 'forged.jsonl');
    await writeFile(forged, `${content}${JSON.stringify(trailer)}\n`);
    const result = await audit('verify', '--export', forged);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`BROKEN   ${EXEC.billing}`);
    expect(result.stdout).toMatch(/^\s+3 {2}edited\s+seq 3: GATE_APPROVED/m);
    expect(result.stderr).toContain('3 whole chain(s) checked, 1 with problems');
  });

  it('verify: a tampered store exits 1 with each problem located; an unknown execution is reported', async () => {
    await tamper(async (plane) => {
      const table = plane.tableNames.events;
      await plane.clients.doc.send(
        new DeleteCommand({ TableName: table, Key: { executionId: EXEC.billing, sk: formatSeq(4) } }),
      );
    });
    const all = await audit('verify', '--store', store, '--all');
    expect(all.code).toBe(1);
    expect(all.stdout).toContain(`BROKEN   ${EXEC.billing}: 5 events, 1 problem(s)`);
    expect(all.stdout).toMatch(/^\s+4 {2}gap {12}seq 4: missing \(the next stored event is seq 5\)$/m);
    expect(all.stdout).toContain(`ok       ${EXEC.deploy1}`);
    const one = await audit('verify', '--store', store, '--execution', EXEC.deploy1, '--json');
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ executionId: EXEC.deploy1, count: 6, problems: [] });
    const unknown = await audit('verify', '--store', store, '--execution', 'arn:nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toContain('MISSING  arn:nope');
  });

  it('--aws: the default credential chain and endpoint resolution (pointed at dynalite by the environment)', async () => {
    const plane = await startLocalDataPlane();
    const saved = { ...process.env };
    try {
      await seedRuns(plane.clients.doc, plane.tableNames.events);
      // The SDK's own environment settings, as on a workstation or in a Lambda; the CLI passes no endpoint.
      Object.assign(process.env, plane.env);
      const result = await audit(
        'query',
        '--aws',
        '--table',
        plane.tableNames.events,
        '--type',
        'GATE_APPROVED',
      );
      expect(result.code).toBe(0);
      expect(result.stdout.trimEnd().split('\n')).toHaveLength(3);
      expect(result.stderr).toContain('index byEventType');
      const verified = await audit('verify', '--aws', '--table', plane.tableNames.events, '--all');
      expect(verified.code).toBe(0);
      const missing = await audit('query', '--aws', '--table', 'no-such-table');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('aws table no-such-table');
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
      await plane.close();
    }
  });

  it('while a session holds the store, reads through its endpoint', async () => {
    const plane = await startLocalDataPlane({ dataDir: store });
    const paths = storePaths(store);
    try {
      await plane.clients.doc.send(
        new PutCommand({
          TableName: plane.tableNames.events,
          Item: { executionId: 'live-only', sk: formatSeq(1), note: 'not a record' },
        }),
      );
      await writeSession(paths, {
        pid: process.pid,
        startedAt: new Date().toISOString(),
        dynamoEndpoint: plane.dynamo.endpoint,
        eventsEndpoint: plane.dynamo.endpoint,
        sfnEndpoint: 'http://127.0.0.1:1',
        approvalUrl: 'http://127.0.0.1:1',
      });
      const result = await audit('verify', '--store', store, '--execution', 'live-only');
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('malformed');
    } finally {
      await releaseSession(paths);
      await plane.close();
    }
  });
});

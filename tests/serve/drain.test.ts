/**
 * A stop is never a loss: `LocalPlatform.close()` right after a burst of accepted submissions
 * (every one answered 201) lets the calls in flight end and parks the rest, so a platform
 * reopened on the same store asks every gate and runs every plan once approved; and a close
 * while a gate handler is in flight ends cleanly, without a crash on the closed data plane.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { readEvents } from '../../lib/runtime/journal/journal.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { type StorePaths, storePaths } from '../../lib/serve/store-directory.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const SUBMITTER = { 'x-plangate-user': 'carol' };
const APPROVER = { 'x-plangate-user': 'dana' };

const dirs: string[] = [];
const open: LocalPlatform[] = [];

afterEach(async () => {
  for (const platform of open.splice(0)) await platform.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function store(): Promise<{ dir: string; paths: StorePaths }> {
  const dir = await mkdtemp(join(tmpdir(), 'plangate-drain-'));
  dirs.push(dir);
  return { dir, paths: storePaths(join(dir, 'store')) };
}

function start(dir: string, paths: StorePaths, onGate: () => void = () => {}): Promise<LocalPlatform> {
  return LocalPlatform.start({ paths, cwd: dir, identity: { mode: 'header' }, onGate });
}

function plan(i: number) {
  return echoChainPlan(`drain-${i}`, ['only'], {
    approval: { approvers: ['dana'], quorum: 1, allowAutoApprove: false, timeoutSeconds: 3600 },
  });
}

async function submit(url: string, i: number): Promise<string> {
  const response = await fetch(`${url}/plans`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...SUBMITTER },
    body: JSON.stringify(plan(i)),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { executionArn: string }).executionArn;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Approves every gate as dana, with the digest each gate's view shows. */
async function approveAll(url: string, approvalIds: readonly string[]): Promise<void> {
  await Promise.all(
    approvalIds.map(async (approvalId) => {
      const page = `${url}/approvals/${encodeURIComponent(approvalId)}`;
      const view = (await (
        await fetch(page, { headers: { accept: 'application/json', ...APPROVER } })
      ).json()) as { planDigest: string };
      const answered = await fetch(page, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...APPROVER },
        body: JSON.stringify({ decision: 'APPROVE', digest: view.planDigest }),
      });
      expect(answered.status, await answered.clone().text()).toBe(200);
    }),
  );
}

/** The link id of each execution's plan gate, once its GATE_APPROVAL_REQUESTED is journaled. */
function gatesOf(platform: LocalPlatform, arns: readonly string[]): Promise<string[]> {
  const { dynamo, tables } = platform.stack.journalDeps();
  return Promise.all(
    arns.map((arn) =>
      until(`the gate of ${arn}`, async () => {
        const events = await readEvents(dynamo, tables.events, arn);
        const requested = events.find((e) => e.event === 'GATE_APPROVAL_REQUESTED');
        return (requested?.details.opened as { link_id?: string } | undefined)?.link_id;
      }),
    ),
  );
}

it('a close right after a burst of 201s loses none: reopened, every gate is asked, approved and run', async () => {
  const { dir, paths } = await store();
  const first = await start(dir, paths);
  const arns = await Promise.all(Array.from({ length: 16 }, (_, i) => submit(first.url, i)));
  await first.close();

  const second = await start(dir, paths);
  open.push(second);
  const approvalIds = await gatesOf(second, arns);
  for (const arn of arns) {
    const described = await second.stack.engine.describeExecution({ executionArn: arn });
    expect(described.status, arn).toBe('RUNNING');
  }
  await approveAll(second.url, approvalIds);
  const ended = await Promise.all(arns.map((arn) => second.stack.engine.awaitExecution(arn)));
  expect(ended.map((e) => e.status)).toEqual(arns.map(() => 'SUCCEEDED'));
}, 60_000);

it('a close while a gate handler is in flight neither throws nor leaves an error behind; the gate waits after the restart', async () => {
  const { dir, paths } = await store();
  // vitest lets a closed LevelDB's refusals through (vitest.config.ts): this test does not.
  const stray: unknown[] = [];
  const record = (error: unknown) => stray.push(error);
  process.on('unhandledRejection', record);
  process.on('uncaughtException', record);
  try {
    let closing: Promise<void> | undefined;
    let first: LocalPlatform | undefined;
    // Told inside the gate handler, before it journals the gate and returns: it is in flight.
    first = await start(dir, paths, () => {
      closing ??= first?.close();
    });
    const [arn] = [await submit(first.url, 0)];
    await until('the gate handler', async () => (closing ? true : undefined));
    await closing;
    await new Promise((r) => setTimeout(r, 200));
    expect(stray).toEqual([]);

    const second = await start(dir, paths);
    open.push(second);
    const approvalIds = await gatesOf(second, [arn as string]);
    expect((await second.stack.engine.describeExecution({ executionArn: arn })).status).toBe('RUNNING');
    await approveAll(second.url, approvalIds);
    expect((await second.stack.engine.awaitExecution(arn as string)).status).toBe('SUCCEEDED');
  } finally {
    process.off('unhandledRejection', record);
    process.off('uncaughtException', record);
  }
}, 60_000);

it('a gate whose opening a stop cut off (no drain, as kill -9 does) is opened again after the restart', async () => {
  const { dir, paths } = await store();
  let closing: Promise<void> | undefined;
  let first: LocalPlatform | undefined;
  // No drain: the gate handler in flight is cut off, its attempt found interrupted on restart.
  first = await start(dir, paths, () => {
    closing ??= first?.close({ drainMs: 0 });
  });
  const arn = await submit(first.url, 0);
  await until('the gate handler', async () => (closing ? true : undefined));
  await closing;

  const second = await start(dir, paths);
  open.push(second);
  const { dynamo, tables } = second.stack.journalDeps();
  // The retried opening asks again, with a link of its own (the latest is the one that waits).
  const linkId = await until('the gate opened again', async () => {
    const asked = (await readEvents(dynamo, tables.events, arn)).filter(
      (e) => e.event === 'GATE_APPROVAL_REQUESTED',
    );
    return asked.length >= 2
      ? (asked.at(-1)?.details.opened as { link_id?: string } | undefined)?.link_id
      : undefined;
  });
  expect((await second.stack.engine.describeExecution({ executionArn: arn })).status).toBe('RUNNING');
  await approveAll(second.url, [linkId]);
  expect((await second.stack.engine.awaitExecution(arn)).status).toBe('SUCCEEDED');
}, 60_000);

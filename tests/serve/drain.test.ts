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

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('a close right after a burst of 201s loses none: reopened, every gate is asked, approved and run', async () => {
  const { dir, paths } = await store();
  const first = await start(dir, paths);
  const arns = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(first.url, i)));
  await first.close();

  const second = await start(dir, paths);
  open.push(second);
  const { dynamo, tables } = second.stack.journalDeps();
  const approvalIds = await Promise.all(
    arns.map((arn) =>
      until(`the gate of ${arn}`, async () => {
        const events = await readEvents(dynamo, tables.events, arn);
        const requested = events.find((e) => e.event === 'GATE_APPROVAL_REQUESTED');
        return (requested?.details.opened as { link_id?: string } | undefined)?.link_id;
      }),
    ),
  );
  for (const arn of arns) {
    const described = await second.stack.engine.describeExecution({ executionArn: arn });
    expect(described.status, arn).toBe('RUNNING');
  }
  await Promise.all(
    approvalIds.map(async (approvalId) => {
      const page = `${second.url}/approvals/${encodeURIComponent(approvalId)}`;
      const view = (await (
        await fetch(page, { headers: { accept: 'application/json', ...APPROVER } })
      ).json()) as {
        planDigest: string;
      };
      const answered = await fetch(page, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...APPROVER },
        body: JSON.stringify({ decision: 'APPROVE', digest: view.planDigest }),
      });
      expect(answered.status, await answered.clone().text()).toBe(200);
    }),
  );
  const ended = await Promise.all(arns.map((arn) => second.stack.engine.awaitExecution(arn)));
  expect(ended.map((e) => e.status)).toEqual(arns.map(() => 'SUCCEEDED'));
}, 60_000);

it('a close while a gate handler is in flight ends cleanly, and the gate is asked after the restart', async () => {
  const { dir, paths } = await store();
  let gated = 0;
  const first = await start(dir, paths, () => {
    gated++;
  });
  const arn = await submit(first.url, 0);
  // The 201 answers once the start is durable; the gate Lambda is then under way.
  expect(gated).toBe(0);
  await first.close();

  const second = await start(dir, paths);
  open.push(second);
  const { dynamo, tables } = second.stack.journalDeps();
  await until('the gate', async () =>
    (await readEvents(dynamo, tables.events, arn)).find((e) => e.event === 'GATE_APPROVAL_REQUESTED'),
  );
  expect((await second.stack.engine.describeExecution({ executionArn: arn })).status).toBe('RUNNING');
}, 60_000);

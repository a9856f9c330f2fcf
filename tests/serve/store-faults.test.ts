/**
 * `plangate serve`'s platform on a store that stops taking writes (the disk fills: ENOSPC injected
 * where the engine's write-ahead log writes): new work is answered 503 with the cause, the fix and
 * Retry-After, the process goes on, and once writes succeed again new work is taken.
 */
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { WriteSync } from '../../lib/engine/persistence/byte-writer.ts';
import type { StoreFault } from '../../lib/engine/persistence/store-faults.ts';
import { PlanSchema } from '../../lib/plan/schema.ts';
import type { ApprovalNotice } from '../../lib/runtime/payloads/index.ts';
import { invokeWhileWritable } from '../../lib/serve/local-stack.ts';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { ApiClient } from '../support/api-client.ts';

const ALICE = {
  accessKeyId: 'AKIDALICESTOREFAULTS',
  secretAccessKey: 'alice-store-faults-secret-01',
  arn: 'arn:aws:iam::123456789012:user/alice',
};

const planOf = (id: string) =>
  PlanSchema.parse({
    id,
    version: 1,
    objective: 'Say hello once approved',
    sizePolicy: { minSteps: 1 },
    approval: { approvers: ['dana@example.test'], allowAutoApprove: false },
    steps: [
      {
        id: 'hello',
        description: 'Say hello',
        tool: 'echo',
        args: { message: 'hello' },
        contract: { kind: 'assert', expression: 'output.message = "hello"' },
      },
    ],
  });

let dir: string;
let platform: LocalPlatform;
let api: ApiClient;
let refusing: string | undefined;
const told: (StoreFault | undefined)[] = [];
const notices: ApprovalNotice[] = [];

const writeSync: WriteSync = (fd, buffer, offset, length, position) => {
  if (refusing) throw Object.assign(new Error(`${refusing}: refused by the test, write`), { code: refusing });
  return fs.writeSync(fd, buffer, offset, length, position);
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plangate-serve-faults-'));
  platform = await LocalPlatform.start({
    paths: storePaths(join(dir, 'store')),
    cwd: dir,
    identity: { mode: 'aws', principals: [ALICE] },
    onGate: (notice) => notices.push(notice),
    onStoreFault: (fault) => told.push(fault),
    storeWriteSync: writeSync,
  });
  api = new ApiClient(platform.url);
}, 60_000);

afterAll(async () => {
  await platform?.close();
  await rm(dir, { recursive: true, force: true });
});

const submit = (id: string) =>
  api.request('POST', '/plans', {
    signWith: ALICE,
    body: JSON.stringify(planOf(id)),
    headers: { 'content-type': 'application/json' },
  });

it('answers new work 503 with the cause while the store cannot be written, and takes it again once it can', async () => {
  const accepted = await submit('before-the-fault');
  expect(accepted.status).toBe(201);
  const executionArn = String(accepted.json().executionArn);
  for (let i = 0; i < 200 && notices.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  expect(notices).toHaveLength(1);

  refusing = 'ENOSPC';
  for (const id of ['during-the-fault', 'still-during-the-fault']) {
    const refused = await submit(id);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(String(refused.json().message)).toMatch(
      /ENOSPC: no space left on the file system: free space on it/,
    );
  }
  expect(told).toEqual([expect.objectContaining({ code: 'ENOSPC', transient: true })]);

  refusing = undefined;
  for (let i = 0; i < 100 && told.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  expect(told.at(-1)).toBeUndefined();
  expect((await submit('after-the-fault')).status).toBe(201);
  // the plan accepted before the fault still waits at its gate
  const status = await api.request('GET', `/plans/${encodeURIComponent(executionArn)}`, { signWith: ALICE });
  expect(status.status).toBe(200);
  expect(status.json()).toMatchObject({ status: 'RUNNING' });
}, 60_000);

it('makes a harness call that failed on a store that cannot be written again once it can, and fails a call whose store is fine', async () => {
  const fault = { error: new Error('ENOSPC'), code: 'ENOSPC', since: '', transient: true, advice: 'ENOSPC' };
  const invocation = { signal: new AbortController().signal } as Parameters<typeof invokeWhileWritable>[1];
  let calls = 0;
  const flaky = async () => {
    calls++;
    if (calls === 1) throw new Error('the journal write was refused');
    return 'done';
  };
  let full = 3; // the probe finds the disk full three times, then freed
  const probe = () => (full-- > 0 ? fault : undefined);
  expect(await invokeWhileWritable(flaky, invocation, dir, probe, 1)).toBe('done');
  expect(calls).toBe(2);
  calls = 0;
  await expect(invokeWhileWritable(flaky, invocation, dir, () => undefined, 1)).rejects.toThrow('refused');
  expect(calls).toBe(1);
});

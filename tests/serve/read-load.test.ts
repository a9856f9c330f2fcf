/**
 * Steady reads hold no memory: every `GET /plans/{id}` queries the local DynamoDB (dynalite over
 * LevelDB), and each query's LevelDB iterator must be closed once read, or the database keeps it
 * (and the snapshot it pins) for as long as the server runs. Counted by the database's own
 * resource registry, not by time or RSS.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AbstractLevel } from 'abstract-level';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LocalPlatform } from '../../lib/serve/platform.ts';
import { storePaths } from '../../lib/serve/store-directory.ts';
import { echoChainPlan } from '../support/echo-plan.ts';

const READS = 400;
const SUBMITTER = { 'x-plangate-user': 'carol' };

/** LevelDB resources (iterators, snapshots) attached and not yet detached, in every database of this process. */
let open = 0;
const proto = AbstractLevel.prototype;
const attach = proto.attachResource;
const detach = proto.detachResource;
const attached = new WeakSet<object>();

let dir: string;
let platform: LocalPlatform;

beforeAll(async () => {
  proto.attachResource = function (this: AbstractLevel<unknown>, resource) {
    if (!attached.has(resource)) open++;
    attached.add(resource);
    return attach.call(this, resource);
  };
  proto.detachResource = function (this: AbstractLevel<unknown>, resource) {
    if (attached.delete(resource)) open--;
    return detach.call(this, resource);
  };
  dir = await mkdtemp(join(tmpdir(), 'plangate-read-load-'));
  platform = await LocalPlatform.start({
    paths: storePaths(join(dir, 'store')),
    cwd: dir,
    identity: { mode: 'header' },
    onGate: () => {},
  });
});

afterAll(async () => {
  await platform?.close();
  proto.attachResource = attach;
  proto.detachResource = detach;
  await rm(dir, { recursive: true, force: true });
});

it(`${READS} reads of one plan's status leave no LevelDB iterator open`, async () => {
  const submitted = await fetch(`${platform.url}/plans`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...SUBMITTER },
    body: JSON.stringify(
      echoChainPlan('read-load', ['only'], {
        approval: { approvers: ['dana'], quorum: 1, allowAutoApprove: false, timeoutSeconds: 3600 },
      }),
    ),
  });
  expect(submitted.status, await submitted.clone().text()).toBe(201);
  const { executionArn } = (await submitted.json()) as { executionArn: string };
  const id = executionArn.split(':').pop() as string;
  const read = async () => {
    const response = await fetch(`${platform.url}/plans/${id}`, { headers: SUBMITTER });
    expect(response.status, await response.clone().text()).toBe(200);
    await response.arrayBuffer();
  };
  await read();
  const before = open;
  for (let i = 0; i < READS; i += 10) await Promise.all(Array.from({ length: 10 }, read));
  // A few may be open at any instant (the platform's own timers query too); none piles up.
  expect(open - before).toBeLessThan(20);
}, 60_000);

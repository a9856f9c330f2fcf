/**
 * `plangate serve` stopped by SIGTERM right after a burst of accepted submissions: it drains
 * (what is under way ends, nothing is cut short), exits 0, and a restart on the same store has
 * every accepted plan waiting at its gate, none FAILED.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { StatusResponseSchema } from '../../lib/launch/plans-api-schemas.ts';
import { echoChainPlan } from '../support/echo-plan.ts';
import { workDir } from './cli.ts';
import { startServe } from './serve-process.ts';

const SUBMITTER = { 'x-plangate-user': 'carol' };
const PLANS = 20;

it('SIGTERM after a burst of 201s exits 0, and the restarted server has every plan at its gate', async () => {
  const store = await mkdtemp(join(tmpdir(), 'plangate-serve-drain-'));
  const cwd = await workDir();
  try {
    const first = startServe(['--identity', 'header', '--store', store], cwd);
    const url = await first.line(() => true);
    const arns = await Promise.all(
      Array.from({ length: PLANS }, async (_, i) => {
        const plan = echoChainPlan(`burst-${i}`, ['only'], {
          approval: { approvers: ['dana'], quorum: 1, allowAutoApprove: false, timeoutSeconds: 3600 },
        });
        const response = await fetch(`${url}/plans`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...SUBMITTER },
          body: JSON.stringify(plan),
        });
        expect(response.status, await response.clone().text()).toBe(201);
        return ((await response.json()) as { executionArn: string }).executionArn;
      }),
    );
    expect(await first.stop()).toBe(0);

    const second = startServe(['--identity', 'header', '--store', store], cwd);
    try {
      const again = await second.line(() => true);
      const deadline = Date.now() + 30_000;
      for (const arn of arns) {
        for (;;) {
          const response = await fetch(`${again}/plans/${encodeURIComponent(arn)}`, { headers: SUBMITTER });
          const status = StatusResponseSchema.parse(await response.json());
          expect(status.status, arn).toBe('RUNNING');
          if (status.gates.length === 1) break;
          expect(Date.now(), `the gate of ${arn}`).toBeLessThan(deadline);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    } finally {
      expect(await second.stop()).toBe(0);
    }
  } finally {
    await rm(store, { recursive: true, force: true });
  }
}, 90_000);

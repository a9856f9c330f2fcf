/**
 * Crash consistency of a decision, through the real `plangate serve` process: the vote that
 * completes a quorum of 2 is killed (SIGKILL, as kill -9) at each named crash point of the
 * decision path (lib/runtime/shared/crash-points.ts), the server is started again on the same
 * store, and the invariants hold: the gate ends decided, the journal holds each vote and the
 * decision exactly once and says the decision was finished after the crash
 * (GATE_DECISION_RECOVERED), the step runs once, and the chain verifies.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DECISION_CRASH_POINTS } from '../../lib/runtime/shared/crash-points.ts';
import { echoChainPlan } from '../support/echo-plan.ts';
import { verifyChain, workDir } from './cli.ts';
import { as, journalWhenComplete, killedAtItsPoint } from './crash-harness.ts';
import { startServe } from './serve-process.ts';

type Event = { event: string; details: Record<string, unknown> };

describe.concurrent('a decision cut short by kill -9 is finished after the restart', {
  timeout: 120_000,
}, () => {
  for (const point of DECISION_CRASH_POINTS)
    it(`killed at ${point}`, async () => {
      const store = await mkdtemp(join(tmpdir(), `plangate-crash-${point}-`));
      const cwd = await workDir();
      const id = `crash-${point}`;
      const first = startServe(['--identity', 'header', '--store', store], cwd, { PLANGATE_CRASH_AT: point });
      const url = await first.line(() => true);
      const plan = echoChainPlan(id, ['only'], {
        approval: { approvers: ['alice', 'bob'], quorum: 2, allowAutoApprove: false },
      });
      const submitted = await fetch(`${url}/plans`, as('carol', plan));
      expect(submitted.status).toBe(201);
      const { executionArn } = (await submitted.json()) as { executionArn: string };
      const link = (await first.line((l) => l.startsWith(`gate plan of ${id} v1 waits: `))).split(
        ' waits: ',
      )[1];
      const approvalPath = new URL(link as string).pathname;
      // The digest the approvers answer for: the plan's, as its journal names it.
      const [created] = (
        (await (
          await fetch(`${url}/executions/${encodeURIComponent(executionArn)}/events`, as('carol'))
        ).json()) as {
          events: { planDigest: string }[];
        }
      ).events;
      const approve = { digest: created?.planDigest, decision: 'APPROVE' };
      expect(await (await fetch(`${url}${approvalPath}`, as('alice', approve))).json()).toMatchObject({
        status: 'pending',
      });
      // The completing vote: the server dies at the crash point, before it answers.
      await expect(fetch(`${url}${approvalPath}`, as('bob', approve))).rejects.toThrow();
      await killedAtItsPoint(first);

      const second = startServe(['--identity', 'header', '--store', store], cwd);
      try {
        const again = await second.line(() => true);
        const journal = await journalWhenComplete<Event>(again, executionArn, 'carol');
        const named = (type: string) => journal.filter((e) => e.event === type);
        expect(named('EXECUTION_COMPLETE').map((e) => e.details.succeeded)).toEqual([true]);
        expect(named('GATE_VOTE').map((e) => e.details.voter)).toEqual(['alice', 'bob']);
        expect(named('GATE_APPROVED')).toHaveLength(1);
        expect(named('GATE_DECISION_RECOVERED')).toHaveLength(1);
        expect(named('TASK_COMPLETED')).toHaveLength(1);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
        // A late answer is told the gate was decided, and changes nothing.
        const late = await fetch(`${again}${approvalPath}`, as('dana', approve));
        expect(late.status).toBe(409);
      } finally {
        await second.stop();
      }
    });
});

/**
 * Crash consistency of a submission, through the real `plangate serve` process: `POST /plans` is
 * killed (SIGKILL, as kill -9) at each named crash point of the submit path
 * (lib/runtime/shared/crash-points.ts: PLAN_CREATED journaled and the execution not started; the
 * execution started and the submitter not answered), the server is started again on the same
 * store, and the invariants hold: the plan is not lost half-launched but waits at its gate (its
 * link printed, `GET /plans/{id}` RUNNING with the gate waiting, never FAILED), a start the crash
 * cut short is made and journaled once (PLAN_START_RECOVERED), the approved plan runs its step
 * once and succeeds, and the chain verifies.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SUBMIT_CRASH_POINTS } from '../../lib/runtime/shared/crash-points.ts';
import { echoChainPlan } from '../support/echo-plan.ts';
import { verifyChain, workDir } from './cli.ts';
import { as, journalWhenComplete, killedAtItsPoint } from './crash-harness.ts';
import { seedOrderProblems } from './seed-order.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

type Event = { event: string; details: Record<string, unknown> };

/** The line `test` accepts, or a failure naming what the server printed after `ms`. */
async function lineWithin(serve: ServeProcess, test: (line: string) => boolean, ms: number) {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      serve.line(test),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no such line in ${ms} ms; serve printed:\n${serve.lines.join('\n')}`)),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe.concurrent('a submission cut short by kill -9 waits at its gate after the restart', {
  timeout: 120_000,
}, () => {
  for (const point of SUBMIT_CRASH_POINTS)
    it(`killed at ${point}`, async () => {
      const store = await mkdtemp(join(tmpdir(), `plangate-crash-${point}-`));
      const cwd = await workDir();
      const id = `crash-${point}`;
      const plan = echoChainPlan(id, ['only'], {
        approval: { approvers: ['alice'], quorum: 1, allowAutoApprove: false },
      });
      const first = startServe(['--identity', 'header', '--store', store], cwd, { PLANGATE_CRASH_AT: point });
      const url = await first.line(() => true);
      // The server dies at the crash point, before it answers the submitter.
      await expect(fetch(`${url}/plans`, as('carol', plan))).rejects.toThrow();
      await killedAtItsPoint(first);

      const second = startServe(['--identity', 'header', '--store', store], cwd);
      try {
        const again = await second.line(() => true);
        // The gate is asked after the restart: nothing the submission promised was lost.
        const link = (
          await lineWithin(second, (l) => l.startsWith(`gate plan of ${id} v1 waits: `), 60_000)
        ).split(' waits: ')[1];
        const approvalPath = new URL(link as string).pathname;
        const gate = (await (await fetch(`${again}${approvalPath}`, as('alice'))).json()) as {
          executionId: string;
          planDigest: string;
        };
        const executionArn = gate.executionId;
        const status = (await (
          await fetch(`${again}/plans/${encodeURIComponent(executionArn)}`, as('carol'))
        ).json()) as { status: string; gates: unknown[] };
        expect(status.status).toBe('RUNNING');
        expect(status.gates).toHaveLength(1);

        const approved = await fetch(
          `${again}${approvalPath}`,
          as('alice', { digest: gate.planDigest, decision: 'APPROVE' }),
        );
        expect(approved.status, await approved.clone().text()).toBe(200);
        const journal = await journalWhenComplete<Event>(again, executionArn, 'carol');
        const named = (type: string) => journal.filter((e) => e.event === type);
        expect(named('EXECUTION_COMPLETE').map((e) => e.details.succeeded)).toEqual([true]);
        expect(named('PLAN_CREATED')).toHaveLength(1);
        // Only a start the crash cut short is made again, and said so once.
        expect(named('PLAN_START_RECOVERED')).toHaveLength(point === 'plan-journaled' ? 1 : 0);
        expect(named('GATE_APPROVAL_REQUESTED')).toHaveLength(1);
        expect(named('GATE_APPROVED')).toHaveLength(1);
        expect(named('TASK_COMPLETED')).toHaveLength(1);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
        expect(seedOrderProblems(journal as never)).toEqual([]);
        const done = (await (
          await fetch(`${again}/plans/${encodeURIComponent(executionArn)}`, as('carol'))
        ).json()) as { status: string };
        expect(done.status).toBe('SUCCEEDED');
      } finally {
        await second.stop();
      }
    });
});

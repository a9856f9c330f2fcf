/**
 * Crash consistency of a gate's opening, through the real `plangate serve` process: the server is
 * killed (SIGKILL, as kill -9) once the gate is stored and before its opening is journaled or told
 * (lib/runtime/shared/crash-points.ts), and started again on the same store. The engine invokes
 * the gate again with the same task token; the same gate is then journaled and told once, with a
 * link the approver can open (the server's own URL, though the engine resumes the gate before the
 * API listens), and the plan runs once approved.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GATE_CRASH_POINTS } from '../../lib/runtime/shared/crash-points.ts';
import { echoChainPlan } from '../support/echo-plan.ts';
import { verifyChain, workDir } from './cli.ts';
import { as, journalWhenComplete, killedAtItsPoint } from './crash-harness.ts';
import { startServe } from './serve-process.ts';

type Event = { event: string; planDigest?: string; details: Record<string, unknown> };

const PLANS = 6;
const APPROVAL = { approvers: ['alice'], quorum: 1, allowAutoApprove: false };

describe.concurrent('a gate whose opening kill -9 cut short is opened once after the restart', {
  timeout: 120_000,
}, () => {
  for (const point of GATE_CRASH_POINTS)
    it(`killed at ${point}`, async () => {
      const store = await mkdtemp(join(tmpdir(), `plangate-crash-${point}-`));
      const cwd = await workDir();
      const first = startServe(['--identity', 'header', '--store', store], cwd, { PLANGATE_CRASH_AT: point });
      const url = await first.line(() => true);
      // Several plans at once: the first gate stored kills the server with the others on their way.
      const submissions = await Promise.all(
        Array.from({ length: PLANS }, (_, i) => `crash-${point}-${i}`).map((id) =>
          fetch(`${url}/plans`, as('carol', echoChainPlan(id, ['only'], { approval: APPROVAL }))).then(
            async (r) =>
              r.status === 201 ? { id, ...((await r.json()) as { executionArn: string }) } : undefined,
            () => undefined,
          ),
        ),
      );
      await killedAtItsPoint(first);
      const acknowledged = submissions.filter((s) => s !== undefined);
      expect(acknowledged.length).toBeGreaterThan(0);

      const second = startServe(['--identity', 'header', '--store', store], cwd);
      try {
        const again = await second.line(() => true);
        for (const { id, executionArn } of acknowledged) {
          const test = (l: string) => l.startsWith(`gate plan of ${id} v1 waits: `);
          const toldBefore = first.lines.find(test);
          const line = toldBefore ?? (await second.line(test));
          expect([...first.lines, ...second.lines].filter(test), `${id} is told once`).toHaveLength(1);
          const link = line.split(' waits: ')[1] as string;
          // The link names the server that told it: an approver opens it as printed.
          expect(link.startsWith(`${toldBefore ? url : again}/approvals/`), link).toBe(true);
          const events = async (): Promise<Event[]> =>
            (
              (await (
                await fetch(`${again}/executions/${encodeURIComponent(executionArn)}/events`, as('carol'))
              ).json()) as { events: Event[] }
            ).events;
          const digest = (await events())[0]?.planDigest;
          const answered = await fetch(
            `${again}${new URL(link).pathname}`,
            as('alice', { digest, decision: 'APPROVE' }),
          );
          expect(answered.status, await answered.clone().text()).toBe(200);
          const journal = await journalWhenComplete<Event>(again, executionArn, 'carol');
          const named = (type: string) => journal.filter((e) => e.event === type);
          expect(named('EXECUTION_COMPLETE').map((e) => e.details.succeeded)).toEqual([true]);
          expect(named('GATE_APPROVAL_REQUESTED')).toHaveLength(1);
          expect(named('GATE_APPROVED')).toHaveLength(1);
          expect(named('TASK_COMPLETED')).toHaveLength(1);
          expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
        }
      } finally {
        await second.stop();
      }
    });
});

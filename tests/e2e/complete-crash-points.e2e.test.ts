// biome-ignore-all lint/suspicious/noTemplateCurlyInString: plan references are written as ${...}
/**
 * A human step completes once across a crash, through the real `plangate serve` process: the
 * person's answer (DONE with a value, as `plangate complete` or the step's page sends it) is
 * killed (SIGKILL, as kill -9) at each named crash point of the complete path
 * (lib/runtime/shared/crash-points.ts: the answer recorded on the gate and journaled, the engine
 * not told; the step's TASK_COMPLETED journaled, the checker not answered), the server is started
 * again on the same store, and the invariants hold: the step completes once with the person's
 * value, the person is not asked again, the next step reads the value, the run succeeds and the
 * chain verifies.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMPLETE_CRASH_POINTS } from '../../lib/runtime/shared/crash-points.ts';
import { verifyChain, workDir } from './cli.ts';
import { as, journalWhenComplete, killedAtItsPoint } from './crash-harness.ts';
import { seedOrderProblems } from './seed-order.ts';
import { startServe } from './serve-process.ts';

type Event = { event: string; task_id?: string; details: Record<string, unknown> };

describe.concurrent('a human step cut short by kill -9 completes once after the restart', {
  timeout: 120_000,
}, () => {
  for (const point of COMPLETE_CRASH_POINTS)
    it(`killed at ${point}`, async () => {
      const store = await mkdtemp(join(tmpdir(), `plangate-crash-${point}-`));
      const cwd = await workDir();
      const id = `crash-${point}`;
      const plan = {
        id,
        version: 1,
        objective: 'Choose the next version by hand and announce it',
        sizePolicy: { minSteps: 1, maxSteps: 10 },
        approval: { approvers: ['alice'], quorum: 1, allowAutoApprove: false },
        steps: [
          {
            id: 'pick',
            description: 'Choose the next version',
            requiresHuman: true,
            outputs: ['version'],
            contract: { kind: 'assert', expression: 'output.version = "1.2.0"' },
          },
          {
            id: 'announce',
            description: 'Announce the version',
            dependsOn: ['pick'],
            tool: 'echo',
            args: { message: 'next: ${steps.pick.version}' },
            contract: { kind: 'assert', expression: 'output.message = "next: 1.2.0"' },
          },
        ],
      };
      const first = startServe(['--identity', 'header', '--store', store], cwd, { PLANGATE_CRASH_AT: point });
      const url = await first.line(() => true);
      const submitted = await fetch(`${url}/plans`, as('carol', plan));
      expect(submitted.status, await submitted.clone().text()).toBe(201);
      const { executionArn } = (await submitted.json()) as { executionArn: string };
      const linkOf = (line: string) => new URL(line.split(' waits: ')[1] as string).pathname;
      const planGate = linkOf(await first.line((l) => l.startsWith(`gate plan of ${id} v1 waits: `)));
      const [created] = (
        (await (
          await fetch(`${url}/executions/${encodeURIComponent(executionArn)}/events`, as('carol'))
        ).json()) as { events: { planDigest: string }[] }
      ).events;
      const digest = created?.planDigest;
      const approved = await fetch(`${url}${planGate}`, as('alice', { digest, decision: 'APPROVE' }));
      expect(approved.status).toBe(200);
      const humanLine = `gate human pick of ${id} v1 waits: `;
      const humanGate = linkOf(await first.line((l) => l.startsWith(humanLine)));
      const answer = fetch(
        `${url}${humanGate}`,
        as('alice', { digest, decision: 'DONE', outputs: { version: '1.2.0' } }),
      );
      // The server dies at the crash point: before it answers the person, or (the step's
      // completion is the engine's next task) after it told them their answer was recorded.
      if (point === 'human-answered') await expect(answer).rejects.toThrow();
      else expect((await answer).status).toBe(200);
      await killedAtItsPoint(first);

      const second = startServe(['--identity', 'header', '--store', store], cwd);
      try {
        const again = await second.line(() => true);
        const journal = await journalWhenComplete<Event>(again, executionArn, 'carol');
        const named = (type: string, step?: string) =>
          journal.filter((e) => e.event === type && (step === undefined || e.task_id === step));
        expect(
          named('EXECUTION_COMPLETE').map((e) => e.details.succeeded),
          journal.map((e) => `${e.event} ${e.task_id ?? ''}`).join('\n'),
        ).toEqual([true]);
        // Asked once, answered once, completed once with the person's value.
        expect(named('TASK_STARTED', 'pick')).toHaveLength(1);
        expect(second.lines.filter((l) => l.startsWith(humanLine))).toEqual([]);
        expect(named('HUMAN_TASK_ANSWERED', 'pick').map((e) => e.details.answered_by)).toEqual(['alice']);
        expect(named('TASK_COMPLETED', 'pick').map((e) => e.details.result)).toEqual([{ version: '1.2.0' }]);
        expect(named('TASK_COMPLETED', 'announce').map((e) => e.details.result)).toEqual([
          { message: 'next: 1.2.0' },
        ]);
        // Nothing of the step after its completion: a completed step did not fail.
        const completedAt = journal.findIndex((e) => e.event === 'TASK_COMPLETED' && e.task_id === 'pick');
        expect(journal.slice(completedAt + 1).filter((e) => e.task_id === 'pick')).toEqual([]);
        expect(named('GATE_DECISION_RECOVERED')).toHaveLength(point === 'human-answered' ? 1 : 0);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
        expect(seedOrderProblems(journal as never)).toEqual([]);
        // A late answer is told the step was answered, and changes nothing.
        const late = await fetch(
          `${again}${humanGate}`,
          as('alice', { digest, decision: 'DONE', outputs: { version: '9.9.9' } }),
        );
        expect(late.status).toBe(409);
      } finally {
        await second.stop();
      }
    });
});

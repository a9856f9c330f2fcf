/**
 * A step runs once across a crash, through the real `plangate serve` process: the server is
 * killed (SIGKILL, as kill -9) at each named crash point of the step path
 * (lib/runtime/shared/crash-points.ts: after the command returned and its result was stored,
 * after TASK_COMPLETED was journaled), started again on the same store, and the invariants hold:
 * the step's command ran once (it appends to a counter file), TASK_COMPLETED is journaled once,
 * the run succeeds and the chain verifies. The handlers' side: tests/runtime/step-once.test.ts.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STEP_CRASH_POINTS } from '../../lib/runtime/shared/crash-points.ts';
import { verifyChain, workDir } from './cli.ts';
import { as, journalWhenComplete, killedAtItsPoint } from './crash-harness.ts';
import { startServe } from './serve-process.ts';

type Event = { event: string; task_id?: string; details: Record<string, unknown> };

describe.concurrent('a step cut short by kill -9 runs once after the restart', { timeout: 60_000 }, () => {
  for (const point of STEP_CRASH_POINTS)
    it(`killed at ${point}`, async () => {
      const store = await mkdtemp(join(tmpdir(), `plangate-crash-${point}-`));
      const cwd = await workDir();
      const id = `crash-${point}`;
      const plan = {
        id,
        version: 1,
        objective: 'Count the runs of one step in a file, proven by the file',
        sizePolicy: { minSteps: 1, maxSteps: 10 },
        approval: { approvers: ['alice'], quorum: 1, allowAutoApprove: false },
        steps: [
          {
            id: 'count',
            description: 'Append a line to ran.txt',
            tool: 'shell',
            args: { command: 'echo ran >> ran.txt; echo counted' },
            contract: { kind: 'command', command: 'test -s ran.txt' },
          },
        ],
      };
      const first = startServe(['--identity', 'header', '--store', store], cwd, { PLANGATE_CRASH_AT: point });
      const url = await first.line(() => true);
      const submitted = await fetch(`${url}/plans`, as('carol', plan));
      expect(submitted.status, await submitted.clone().text()).toBe(201);
      const { executionArn } = (await submitted.json()) as { executionArn: string };
      const link = (await first.line((l) => l.startsWith(`gate plan of ${id} v1 waits: `))).split(
        ' waits: ',
      )[1];
      const [created] = (
        (await (
          await fetch(`${url}/executions/${encodeURIComponent(executionArn)}/events`, as('carol'))
        ).json()) as { events: { planDigest: string }[] }
      ).events;
      // The approval starts the step; the server dies at the crash point while it runs.
      const approved = await fetch(
        `${url}${new URL(link as string).pathname}`,
        as('alice', { digest: created?.planDigest, decision: 'APPROVE' }),
      );
      expect(approved.status).toBe(200);
      await killedAtItsPoint(first);

      const second = startServe(['--identity', 'header', '--store', store], cwd);
      try {
        const again = await second.line(() => true);
        const journal = await journalWhenComplete<Event>(again, executionArn, 'carol');
        const named = (type: string) => journal.filter((e) => e.event === type);
        expect(named('EXECUTION_COMPLETE').map((e) => e.details.succeeded)).toEqual([true]);
        expect((await readFile(join(cwd, 'ran.txt'), 'utf8')).split('\n').filter(Boolean)).toEqual(['ran']);
        expect(named('TASK_STARTED')).toHaveLength(1);
        expect(named('TASK_COMPLETED')).toHaveLength(1);
        // Nothing of the step after its completion: a completed step did not fail.
        const completedAt = journal.findIndex((e) => e.event === 'TASK_COMPLETED');
        expect(journal.slice(completedAt + 1).filter((e) => e.task_id === 'count')).toEqual([]);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
      } finally {
        await second.stop();
      }
    });
});

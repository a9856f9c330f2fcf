/**
 * Wall-clock jumps through the real `plangate serve` process, its clock moved on the fly by
 * libfaketime (FAKETIME_TIMESTAMP_FILE, re-read on every call): the wall clock steps as NTP steps
 * it, CLOCK_MONOTONIC does not (FAKETIME_DONT_FAKE_MONOTONIC=1), so the engine's timers keep
 * real time. Moved back 2 h and then forward 26 h, a pending gate stays answerable until the
 * engine times it out (its link is checked on the process's own clock, not the stepped one); a
 * restart after the jump times the gate out at once (GATE_REJECTED `timed out`, its link refused);
 * `plangate complete`, started after the jump, still finds its human step; a gate's own timeout is
 * neither deferred by a step back nor brought forward. In every chain no event is stamped earlier
 * than the one before it, and the chain verifies.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { echoChainPlan } from '../support/echo-plan.ts';
import { CliRun, verifyChain, workDir } from './cli.ts';
import { type ServeProcess, startServe } from './serve-process.ts';

const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
  '/usr/local/lib/faketime/libfaketime.so.1',
].find((path) => existsSync(path));
if (!LIBFAKETIME)
  process.stdout.write('clock-jump tests skipped: no libfaketime.so.1 (apt-get install faketime)\n');

type Event = { event: string; timestamp: string; planDigest: string; details: Record<string, unknown> };

const as = (who: string, body?: unknown) => ({
  method: body === undefined ? 'GET' : 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json', 'x-plangate-user': who },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

/** What libfaketime needs to give a process `offsetFile`'s wall clock, its monotonic clock untouched. */
function fakedClock(offsetFile: string): Record<string, string> {
  return {
    LD_PRELOAD: LIBFAKETIME as string,
    FAKETIME_TIMESTAMP_FILE: offsetFile,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}

/** `plangate serve` on `store` whose wall clock is `offsetFile`'s offset ("+0", "-2h", "+26h") from real time. */
function serveWithClock(store: string, cwd: string, offsetFile: string): ServeProcess {
  return startServe(['--identity', 'header', '--store', store], cwd, fakedClock(offsetFile));
}

async function eventsOf(url: string, executionArn: string): Promise<Event[]> {
  const response = await fetch(`${url}/executions/${encodeURIComponent(executionArn)}/events`, as('carol'));
  return ((await response.json()) as { events: Event[] }).events;
}

async function untilComplete(url: string, executionArn: string): Promise<Event[]> {
  for (let i = 0; i < 600; i++) {
    const journal = await eventsOf(url, executionArn);
    if (journal.some((e) => e.event === 'EXECUTION_COMPLETE')) return journal;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${executionArn} did not end within 60 s`);
}

/** Each event's timestamp against its predecessor's: none earlier. */
function backwards(journal: readonly Event[]): string[] {
  return journal.flatMap((e, i) => {
    const before = journal[i - 1];
    return before && e.timestamp < before.timestamp
      ? [`${e.event} ${e.timestamp} < ${before.event} ${before.timestamp}`]
      : [];
  });
}

async function submit(url: string, plan: unknown): Promise<{ executionArn: string }> {
  const submitted = await fetch(`${url}/plans`, as('carol', plan));
  expect(submitted.status, await submitted.clone().text()).toBe(201);
  return (await submitted.json()) as { executionArn: string };
}

describe.skipIf(!LIBFAKETIME)(
  'wall-clock jumps under plangate serve (libfaketime)',
  { timeout: 120_000 },
  () => {
    it('-2 h then +26 h: the pending gate can still be answered, the run ends, no event goes back in time', async () => {
      const store = await mkdtemp(join(tmpdir(), 'plangate-clock-'));
      const cwd = await workDir();
      const offset = join(store, 'faketime-offset');
      await writeFile(offset, '+0\n');
      const serve = serveWithClock(store, cwd, offset);
      try {
        const url = await serve.line(() => true);
        const id = 'clock-jumps';
        const { executionArn } = await submit(
          url,
          echoChainPlan(id, ['first', 'second'], {
            approval: {
              approvers: ['alice', 'bob'],
              quorum: 2,
              allowAutoApprove: false,
              timeoutSeconds: 3600,
            },
          }),
        );
        const link = (await serve.line((l) => l.startsWith(`gate plan of ${id} v1 waits: `))).split(
          ' waits: ',
        )[1];
        const approvalPath = new URL(link as string).pathname;
        const digest = (await eventsOf(url, executionArn))[0]?.planDigest;
        const approve = { digest, decision: 'APPROVE' };

        // Set back 2 h: alice's vote is stamped before the gate opened, by the stepped clock.
        await writeFile(offset, '-2h\n');
        const first = await fetch(`${url}${approvalPath}`, as('alice', approve));
        expect(first.status, await first.clone().text()).toBe(200);
        expect(await first.json()).toMatchObject({ status: 'pending' });

        // Then 26 h forward: past the link's 1 h by the stepped clock, while the engine's timer
        // (monotonic) has 1 h to go. The gate is still there to answer, and bob's vote decides it.
        await writeFile(offset, '+26h\n');
        const second = await fetch(`${url}${approvalPath}`, as('bob', approve));
        expect(second.status, await second.clone().text()).toBe(200);
        expect(await second.json()).toMatchObject({ status: 'decided' });

        const journal = await untilComplete(url, executionArn);
        const named = (type: string) => journal.filter((e) => e.event === type);
        expect(named('GATE_APPROVED')).toHaveLength(1);
        expect(named('TASK_COMPLETED')).toHaveLength(2);
        expect(named('EXECUTION_COMPLETE').map((e) => e.details.succeeded)).toEqual([true]);
        expect(backwards(journal)).toEqual([]);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
      } finally {
        await serve.stop();
      }
    });

    it('+26 h and a restart: the gate times out at once, journaled, and its link is refused', async () => {
      const store = await mkdtemp(join(tmpdir(), 'plangate-clock-restart-'));
      const cwd = await workDir();
      const offset = join(store, 'faketime-offset');
      await writeFile(offset, '+0\n');
      const first = serveWithClock(store, cwd, offset);
      const id = 'clock-restart';
      let executionArn: string;
      let approvalPath: string;
      try {
        const url = await first.line(() => true);
        ({ executionArn } = await submit(
          url,
          echoChainPlan(id, ['only'], {
            approval: { approvers: ['dana'], quorum: 1, allowAutoApprove: false, timeoutSeconds: 3600 },
          }),
        ));
        const link = (await first.line((l) => l.startsWith(`gate plan of ${id} v1 waits: `))).split(
          ' waits: ',
        )[1];
        approvalPath = new URL(link as string).pathname;
      } finally {
        expect(await first.stop()).toBe(0);
      }

      // Started again 26 h later: the gate's 1 h has passed by the clock the restart reads.
      await writeFile(offset, '+26h\n');
      const second = serveWithClock(store, cwd, offset);
      try {
        const url = await second.line(() => true);
        const journal = await untilComplete(url, executionArn);
        const rejected = journal.filter((e) => e.event === 'GATE_REJECTED');
        expect(rejected.map((e) => e.details.reason)).toEqual(['timed out']);
        expect(
          journal.filter((e) => e.event === 'EXECUTION_COMPLETE').map((e) => e.details.succeeded),
        ).toEqual([false]);
        expect(backwards(journal)).toEqual([]);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
        const events = await eventsOf(url, executionArn);
        const late = await fetch(
          `${url}${approvalPath}`,
          as('dana', { digest: events[0]?.planDigest, decision: 'APPROVE' }),
        );
        expect([409, 410]).toContain(late.status);
      } finally {
        await second.stop();
      }
    });

    it('+26 h: plangate complete, a process started after the step, still finds the waiting human step', async () => {
      const store = await mkdtemp(join(tmpdir(), 'plangate-clock-human-'));
      const cwd = await workDir();
      const offset = join(store, 'faketime-offset');
      await writeFile(offset, '+0\n');
      const serve = serveWithClock(store, cwd, offset);
      try {
        const url = await serve.line(() => true);
        const id = 'clock-human';
        const { executionArn } = await submit(url, {
          id,
          version: 1,
          objective: 'Choose the next version by hand, then echo it back',
          sizePolicy: { minSteps: 1 },
          // `plangate complete` answers as the OS user
          approval: { approvers: ['alice', userInfo().username], quorum: 1, allowAutoApprove: false },
          steps: [
            {
              id: 'pick',
              description: 'Choose the next version',
              requiresHuman: true,
              timeoutSeconds: 3600,
              outputs: ['version'],
              contract: { kind: 'assert', expression: 'true' },
            },
          ],
        });
        const link = (await serve.line((l) => l.startsWith(`gate plan of ${id} v1 waits: `))).split(
          ' waits: ',
        )[1];
        const digest = (await eventsOf(url, executionArn))[0]?.planDigest;
        const approved = await fetch(
          `${url}${new URL(link as string).pathname}`,
          as('alice', { digest, decision: 'APPROVE' }),
        );
        expect(approved.status, await approved.clone().text()).toBe(200);
        await serve.line((l) => l.startsWith(`gate human pick of ${id} v1 waits: `));

        // The machine's clock steps 26 h forward; `plangate complete` starts after it and reads it.
        await writeFile(offset, '+26h\n');
        const complete = new CliRun(
          ['complete', executionArn, 'pick', '--value', 'version=1.2.0', '--store', store],
          cwd,
          fakedClock(offset),
        );
        expect(await complete.exited, complete.stderr).toBe(0);
        const journal = await untilComplete(url, executionArn);
        expect(
          journal.filter((e) => e.event === 'EXECUTION_COMPLETE').map((e) => e.details.succeeded),
        ).toEqual([true]);
        expect(backwards(journal)).toEqual([]);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
      } finally {
        await serve.stop();
      }
    });
    it('-2 h while a gate of 4 s waits: the engine still times it out 4 s on, not 2 h later', async () => {
      const store = await mkdtemp(join(tmpdir(), 'plangate-clock-timeout-'));
      const cwd = await workDir();
      const offset = join(store, 'faketime-offset');
      await writeFile(offset, '+0\n');
      const serve = serveWithClock(store, cwd, offset);
      try {
        const url = await serve.line(() => true);
        const id = 'clock-timeout';
        const { executionArn } = await submit(
          url,
          echoChainPlan(id, ['only'], {
            approval: { approvers: ['dana'], quorum: 1, allowAutoApprove: false, timeoutSeconds: 4 },
          }),
        );
        const link = (await serve.line((l) => l.startsWith(`gate plan of ${id} v1 waits: `))).split(
          ' waits: ',
        )[1];
        const opened = performance.now();
        await writeFile(offset, '-2h\n');
        const journal = await untilComplete(url, executionArn);
        expect(performance.now() - opened).toBeGreaterThan(3_000);
        expect(journal.filter((e) => e.event === 'GATE_REJECTED').map((e) => e.details.reason)).toEqual([
          'timed out',
        ]);
        expect(backwards(journal)).toEqual([]);
        expect(verifyChain(journal as never)).toEqual({ ok: true, count: journal.length });
        const late = await fetch(
          `${url}${new URL(link as string).pathname}`,
          as('dana', { digest: journal[0]?.planDigest, decision: 'APPROVE' }),
        );
        expect([409, 410]).toContain(late.status);
      } finally {
        await serve.stop();
      }
    });
  },
);

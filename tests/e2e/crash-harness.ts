/** What the crash-point tests share: requests as a named person, the server's death at its point, the journal at the end. */
import { expect } from 'vitest';
import type { ServeProcess } from './serve-process.ts';

/** A JSON request as `who` (`plangate serve --identity header`): GET without a body, else POST. */
export const as = (who: string, body?: unknown): RequestInit => ({
  method: body === undefined ? 'GET' : 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json', 'x-plangate-user': who },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

/** Waits for the server to end, and checks it was killed (SIGKILL, at its crash point) rather than exiting. */
export async function killedAtItsPoint(serve: ServeProcess): Promise<void> {
  await new Promise<void>((resolve) => {
    if (serve.child.exitCode !== null || serve.child.signalCode !== null) resolve();
    else serve.child.once('exit', () => resolve());
  });
  expect(serve.child.signalCode).toBe('SIGKILL');
}

/** An execution's journal as `who` reads it from `url`, once it holds EXECUTION_COMPLETE (or after 60 s). */
export async function journalWhenComplete<E extends { event: string }>(
  url: string,
  executionArn: string,
  who: string,
): Promise<E[]> {
  let journal: E[] = [];
  for (let i = 0; i < 600; i++) {
    journal = (
      (await (
        await fetch(`${url}/executions/${encodeURIComponent(executionArn)}/events`, as(who))
      ).json()) as {
        events: E[];
      }
    ).events;
    if (journal.some((e) => e.event === 'EXECUTION_COMPLETE')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return journal;
}

/** What the crash-point tests share: requests as a named person, and the server's death at its point. */
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

/**
 * Admission control of the local API Gateway: a bounded number of requests under way and a
 * bounded queue behind them; a request beyond both is answered 503 with Retry-After at once (never
 * reset, never handed to a handler), waiting ones run in turn, and a client that gives up waiting
 * leaves the queue.
 */
import { afterEach, expect, it } from 'vitest';
import {
  BUSY_RETRY_AFTER_SECONDS,
  LocalApiGateway,
  type LocalApiGatewayProps,
} from '../../lib/aws-local/api-gateway/server.ts';

const open: LocalApiGateway[] = [];
afterEach(async () => {
  for (const gateway of open.splice(0)) await gateway.close();
});

/** A gateway whose plan handler holds every request until `release()`. */
async function heldGateway(admission: LocalApiGatewayProps['admission']) {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let handled = 0;
  const gateway = await LocalApiGateway.start({
    authorizers: 'none',
    admission,
    handlers: {
      plans: async () => {
        handled++;
        await held;
        return { statusCode: 200, body: '{"draftId":"d1"}' };
      },
      approvals: async () => ({ statusCode: 500 }),
    },
  });
  open.push(gateway);
  return { gateway, release, handled: () => handled };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

it('answers 503 with Retry-After beyond the requests under way and the queue, and runs the queued in turn', async () => {
  const { gateway, release, handled } = await heldGateway({ maxInFlight: 1, maxQueued: 1 });
  const first = fetch(`${gateway.url}/drafts/d1`);
  await until('the first request to be handled', () => handled() === 1);
  const second = fetch(`${gateway.url}/drafts/d1`);
  await until('the second request to wait', () => gateway.load.queued === 1);
  const third = await fetch(`${gateway.url}/drafts/d1`);
  expect(third.status).toBe(503);
  expect(third.headers.get('retry-after')).toBe(String(BUSY_RETRY_AFTER_SECONDS));
  expect(((await third.json()) as { message: string }).message).toBe(
    'The server is at capacity (1 requests under way, 1 waiting): retry after 1 s',
  );
  expect(handled()).toBe(1);
  release();
  expect((await first).status).toBe(200);
  expect((await second).status).toBe(200);
  expect(handled()).toBe(2);
  await until('every place to be freed', () => gateway.load.inFlight === 0);
  expect(gateway.load).toEqual({ inFlight: 0, queued: 0 });
});

it('a waiting request whose client goes leaves the queue, and its handler never runs', async () => {
  const { gateway, release, handled } = await heldGateway({ maxInFlight: 1, maxQueued: 1 });
  const first = fetch(`${gateway.url}/drafts/d1`);
  await until('the first request to be handled', () => handled() === 1);
  const gone = new AbortController();
  const abandoned = fetch(`${gateway.url}/drafts/d1`, { signal: gone.signal }).catch(() => 'aborted');
  await until('the second request to wait', () => gateway.load.queued === 1);
  gone.abort();
  expect(await abandoned).toBe('aborted');
  await until('the abandoned request to leave the queue', () => gateway.load.queued === 0);
  const next = fetch(`${gateway.url}/drafts/d1`);
  await until('the next request to wait', () => gateway.load.queued === 1);
  release();
  expect((await first).status).toBe(200);
  expect((await next).status).toBe(200);
  expect(handled()).toBe(2);
});

it('refuses limits that admit nothing, naming the option', async () => {
  await expect(
    LocalApiGateway.start({
      authorizers: 'none',
      admission: { maxInFlight: 0, maxQueued: 10 },
      handlers: { plans: async () => ({ statusCode: 200 }), approvals: async () => ({ statusCode: 200 }) },
    }),
  ).rejects.toThrow('LocalApiGateway admission: maxInFlight must be a positive integer, not 0');
});

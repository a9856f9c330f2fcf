/**
 * The local API Gateway as it stops: the request under way is answered in full, and a request
 * that still arrives (here pipelined on the same kept-alive connection) is refused with 503 and
 * Retry-After, never reset and never handed to a handler.
 */
import { connect } from 'node:net';
import { expect, it } from 'vitest';
import { LocalApiGateway, STOPPING_RETRY_AFTER_SECONDS } from '../../lib/aws-local/api-gateway/server.ts';

it('answers the request under way, then 503 with Retry-After to one arriving during the stop', async () => {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let arrived: () => void = () => {};
  const first = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  let handled = 0;
  const gateway = await LocalApiGateway.start({
    authorizers: 'none',
    handlers: {
      plans: async () => {
        handled++;
        arrived();
        await held;
        return { statusCode: 200, body: '{"draftId":"d1"}' };
      },
      approvals: async () => ({ statusCode: 500 }),
    },
  });
  const { hostname, port } = new URL(gateway.url);
  const socket = connect(Number(port), hostname);
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
  });
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const request = `GET /drafts/d1 HTTP/1.1\r\nHost: ${new URL(gateway.url).host}\r\n\r\n`;
  socket.write(request);
  await first;
  const closing = gateway.close();
  socket.write(request);
  release();
  await closing;
  await ended;
  const responses = received.split(/(?=HTTP\/1\.1 )/);
  expect(responses).toHaveLength(2);
  expect(responses[0]).toMatch(/^HTTP\/1\.1 200 /);
  expect(responses[0]).toContain('{"draftId":"d1"}');
  expect(responses[1]).toMatch(/^HTTP\/1\.1 503 /);
  expect(responses[1]?.toLowerCase()).toContain(`retry-after: ${STOPPING_RETRY_AFTER_SECONDS}`);
  expect(handled).toBe(1);
});

/**
 * Starts an HTTP server on 127.0.0.1 (an OS-chosen port by default), answering only its own
 * names (lib/loopback), and closes it promptly.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardLoopback, type LoopbackGuardOptions } from '../loopback/guard.ts';

/**
 * Connections the kernel holds until they are accepted (capped by net.core.somaxconn). Node's 511
 * overflows when hundreds of clients connect within one turn of a busy event loop, and an
 * overflowed connection is reset: past capacity a client is to get a 503, never a reset.
 */
const LISTEN_BACKLOG = 4096;

export async function listenOnLoopback(
  server: Server,
  port?: number,
  guard: LoopbackGuardOptions = {},
): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: port ?? 0, host: '127.0.0.1', backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      // Here, before the first connection is read: no request reaches the server unchecked.
      guardLoopback(server, guard);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return `http://127.0.0.1:${address.port}`;
}

export async function closeServer(server: Server): Promise<void> {
  // Idle keep-alive sockets of SDK clients would otherwise hold close() open.
  server.closeIdleConnections?.();
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
}

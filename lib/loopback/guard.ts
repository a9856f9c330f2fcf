/**
 * What every HTTP server plangate serves on this machine checks before any handler runs: the
 * request names this server (its Host is the address and port it listens on, or `localhost`
 * there), and a browser's request comes from one of its own pages (an Origin, when sent, is this
 * server's own). A page whose domain rebinds to 127.0.0.1 (DNS rebinding) is same-origin with a
 * loopback server in the browser, but its requests still carry its own name as Host and Origin.
 *
 * Names are compared as exact strings after lower-casing (ASCII case is all a Host or an origin
 * may vary in and still mean this server): any other spelling — a trailing dot, userinfo, another
 * or a missing port, a numeric form such as `2130706433` — is refused. A header compare per
 * request: the engine's API is on every step's path. Then, once per connection, who connects:
 * plan code in its sandbox is refused whatever it names (peer.ts).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { peerOf, planCodeRefusal } from './peer.ts';

/** The Host values and the browser origins a server answers to. */
export interface LoopbackNames {
  readonly hosts: ReadonlySet<string>;
  readonly origins: ReadonlySet<string>;
}

/** Answers a refused request in the server's own error style (its status is 403). */
export type LoopbackRefuser = (res: ServerResponse, message: string) => void;

export interface LoopbackGuardOptions {
  /** @default {@link refuseAsText} */
  readonly refuse?: LoopbackRefuser;
  /**
   * Further origins whose pages may call this server (the hosted UI's token endpoint is called by
   * the approval page, on another port). @default - only this server's own origins
   */
  readonly allowOrigin?: (origin: string) => boolean;
  /**
   * A prefix the server's clients may put before its names (Step Functions' StartSyncExecution
   * goes to `sync-<host>`). Such a name (`sync-localhost`) resolves only where this machine maps
   * it, never in a page's DNS. @default - none
   */
  readonly hostPrefix?: string;
  /** Told of every refused request, after its 403 is sent (a server that journals what it refused). */
  readonly onRefused?: (req: IncomingMessage, message: string) => void;
}

const WILDCARD_ADDRESSES = new Set(['0.0.0.0', '::']);

/**
 * The names of a server listening on `address` (as `server.address()` reports it) and `port`:
 * the address itself and `localhost`; every loopback address when it listens on all of them; and
 * each of those with `hostPrefix` before it, when given.
 */
export function loopbackNames(address: string, port: number, hostPrefix?: string): LoopbackNames {
  const own = WILDCARD_ADDRESSES.has(address)
    ? ['127.0.0.1', '[::1]', 'localhost']
    : [address.includes(':') ? `[${address.toLowerCase()}]` : address.toLowerCase(), 'localhost'];
  const hostnames = hostPrefix ? [...own, ...own.map((name) => `${hostPrefix.toLowerCase()}${name}`)] : own;
  // Port 80 is the default: a Host and an origin without a port name it too.
  const hosts = hostnames.flatMap((name) => (port === 80 ? [`${name}:80`, name] : [`${name}:${port}`]));
  return { hosts: new Set(hosts), origins: new Set(hosts.map((host) => `http://${host}`)) };
}

/** Why a request with these Host and Origin headers is refused, or undefined when it names this server. */
export function loopbackRefusal(
  host: string | undefined,
  origin: string | undefined,
  names: LoopbackNames,
  allowOrigin?: (origin: string) => boolean,
): string | undefined {
  if (host === undefined || !(names.hosts.has(host) || names.hosts.has(host.toLowerCase())))
    return (
      `${host === undefined ? 'a request without a Host header' : `Host ${shown(host)}`} is not this server's ` +
      `address (${[...names.hosts].join(', ')}): plangate's local endpoints answer only their own names, so ` +
      'a page whose domain resolves to this machine (DNS rebinding) cannot reach them'
    );
  if (
    origin !== undefined &&
    !names.origins.has(origin) &&
    !names.origins.has(origin.toLowerCase()) &&
    !allowOrigin?.(origin)
  )
    return (
      `Origin ${shown(origin)} is not this server's own (${[...names.origins].join(', ')}): plangate's ` +
      "local endpoints answer only their own pages' requests and clients that send no Origin (curl, the SDKs)"
    );
  return undefined;
}

/**
 * Puts the check in front of every request listener of a listening server, including those of a
 * server plangate did not write (dynalite's): a refused request reaches none of them.
 */
export function guardLoopback(server: Server, options: LoopbackGuardOptions = {}): void {
  const address = server.address();
  if (address === null || typeof address === 'string')
    throw new Error('guardLoopback: the server must be listening on a TCP port');
  const names = loopbackNames(address.address, address.port, options.hostPrefix);
  const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  // Who holds the client end is looked up once per connection (keep-alive carries many requests).
  const peers = new WeakMap<Socket, string | undefined>();
  const peerRefusal = (socket: Socket): string | undefined => {
    if (!peers.has(socket)) peers.set(socket, planCodeRefusal(peerOf(socket)));
    return peers.get(socket);
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // HTTP/2 (h2c, as the Bedrock client speaks) names the host in `:authority` instead.
    const host = req.headers.host ?? (req.headers[':authority'] as string | undefined);
    const refusal =
      loopbackRefusal(host, req.headers.origin, names, options.allowOrigin) ?? peerRefusal(req.socket);
    if (refusal === undefined) {
      for (const listener of listeners) listener.call(server, req, res);
      return;
    }
    req.resume();
    (options.refuse ?? refuseAsText)(res, refusal);
    options.onRefused?.(req, refusal);
  });
}

/** A refusal as plain text, for servers whose errors are text (the hosted UI's). */
export function refuseAsText(res: ServerResponse, message: string): void {
  res.writeHead(403, {
    'content-type': 'text/plain; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  });
  res.end(`Forbidden: ${message}\n`);
}

/** A header's value as a refusal quotes it: JSON-escaped, and cut short. */
function shown(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}
